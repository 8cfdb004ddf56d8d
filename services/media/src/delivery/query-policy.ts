/**
 * MEDIA_ALLOW_QUERY=false refuses a media URL with a query string (a cache buster), except on a
 * signing deployment: there the signature check has already limited the query to the signed
 * parameters (exp, download) and sig, all covered by the signature. Without signing, `exp` is
 * refused too (unsigned, it would mean nothing). The Express path answers 400
 * query-not-allowed; the hot path sends such targets there.
 */
export const queryRefused = (hasQuery: boolean, allowQuery: boolean, signing: boolean): boolean =>
  hasQuery && !allowQuery && !signing;
