import { createHmac } from "node:crypto";

/**
 * Media URL signing (the media service's MEDIA_SIGNING_KEY), defined once for the service and
 * every client that builds URLs.
 *
 * What is signed: the request path exactly as it is sent, i.e. the request-target up to (not
 * including) the first "?", percent-encoding untouched, with its leading "/":
 *   "/thumbnail:size=256/9b2c...-...e1.png"
 * sig = base64url (RFC 4648 §5, no padding) of HMAC-SHA256(key as UTF-8, path as UTF-8).
 * The URL is then `<path>?sig=<sig>`. With signing on, the query string must be exactly
 * `sig=<sig>`: other query parameters are not covered by the signature, so the service refuses
 * them (otherwise anyone could mint unlimited cache-busting variants of a signed URL).
 *
 * Uses node:crypto: the signing key is a server-side secret, so URLs are signed in Node only.
 */

/** The raw HMAC-SHA256 of a media path (32 bytes); verifiers compare these bytes in constant time. */
export function mediaSignatureDigest(path: string, key: string): Buffer {
  return createHmac("sha256", key).update(path, "utf8").digest();
}

/** The `sig` value of a media path: unpadded base64url of {@link mediaSignatureDigest}. */
export function signMediaPath(path: string, key: string): string {
  return mediaSignatureDigest(path, key).toString("base64url");
}

/** `<path>?sig=<sig>`: the signed form of a media path. */
export function signedMediaUrl(path: string, key: string): string {
  return `${path}?sig=${signMediaPath(path, key)}`;
}
