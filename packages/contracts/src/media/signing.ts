import { createHmac } from "node:crypto";

/**
 * Media URL signing (the media service's MEDIA_SIGNING_KEY), defined once for the service and
 * every client that builds URLs.
 *
 * What is signed: the request-target exactly as it is sent, up to (not including) the `sig`
 * parameter, which must come last: the path with its leading "/", percent-encoding untouched,
 * plus any other query parameters before `sig`:
 *   "/thumbnail:size=256/9b2c...-...e1.png"                 -> "<that>?sig=<sig>"
 *   "/thumbnail:size=256/9b2c...-...e1.png?exp=1767225600"  -> "<that>&sig=<sig>"
 * sig = base64url (RFC 4648 §5, no padding) of HMAC-SHA256(key as UTF-8, signed part as UTF-8).
 * Without other parameters the signed part is the bare path, so URLs signed before expiries
 * existed keep verifying.
 *
 * Besides `sig` only the parameters in {@link SIGNED_QUERY_PARAMETERS} may appear, and only
 * before `sig`, where the signature covers them: anything else would let anyone mint unlimited
 * cache-busting variants of a signed URL, so the service refuses it.
 *   exp       unix seconds after which the URL answers 403 (covered by the signature, so it
 *             cannot be extended);
 *   download  originals only: `GET /original/<id>.<ext>?download=<filename>`;
 *   render    rendition info only: `GET /info/<steps>/<id>.<ext>?render=1` renders the result;
 *   inline    SVG originals only: `GET /original/<id>.svg?inline` (else an attachment);
 *   v         the asset version a URL pins (`?v=<version>`): the response is immutable, and
 *             signed, only the key holder can mint versions (no cache-busting variants).
 *
 * Uses node:crypto: the signing key is a server-side secret, so URLs are signed in Node only.
 */

/** Query parameters a signed URL may carry before `sig` (each at most once). */
export const SIGNED_QUERY_PARAMETERS = ["download", "exp", "inline", "render", "v"] as const;

export interface SignOptions {
  /** Pins the asset version (`v=<version>`, before `exp`): the answer is cached as immutable. */
  version?: number | string;
  /** The URL stops working after this instant: unix seconds or a Date (rounded down to seconds). */
  expiresAt?: number | Date;
}

/** The raw HMAC-SHA256 of a media path (32 bytes); verifiers compare these bytes in constant time. */
export function mediaSignatureDigest(path: string, key: string): Buffer {
  return createHmac("sha256", key).update(path, "utf8").digest();
}

/** The `sig` value of a signed part (a path, or a path with its query): unpadded base64url of {@link mediaSignatureDigest}. */
export function signMediaPath(path: string, key: string): string {
  return mediaSignatureDigest(path, key).toString("base64url");
}

/** Unix seconds of an expiry given as seconds or a Date. */
export function expirySeconds(expiresAt: number | Date): number {
  const seconds = expiresAt instanceof Date ? Math.floor(expiresAt.getTime() / 1000) : expiresAt;
  if (!Number.isSafeInteger(seconds) || seconds < 0) {
    throw new RangeError(`expiresAt must be whole unix seconds >= 0 or a valid Date (got ${String(expiresAt)})`);
  }
  return seconds;
}

/**
 * The expiry of a URL signed now to live about `lifetimeSeconds`, rounded up to a shared window
 * of half the lifetime: every URL signed for a rendition within one window is the same string, so
 * a CDN (and the media service's caches, keyed on the request-target) keeps one copy, not one
 * per page view. The URL lives more than half the lifetime and at most the whole of it; a client
 * that re-signs once half the lifetime has passed never holds an expired one.
 */
export function windowedExpiry(nowMs: number, lifetimeSeconds: number): number {
  if (!Number.isSafeInteger(lifetimeSeconds) || lifetimeSeconds < 2) {
    throw new RangeError(`lifetimeSeconds must be a whole number >= 2 (got ${String(lifetimeSeconds)})`);
  }
  const window = Math.floor(lifetimeSeconds / 2);
  return (Math.floor(nowMs / 1000 / window) + 2) * window;
}

/**
 * The signed form of a media URL path: `<path>?sig=<sig>`, or with a version and an expiry
 * `<path>?v=<version>&exp=<unix seconds>&sig=<sig>`. `path` may already carry a query (e.g.
 * `/original/<id>.jpg?download=photo.jpg`); `v`, `exp` and `sig` are appended after it.
 */
export function signedMediaUrl(path: string, key: string, options: SignOptions = {}): string {
  let signed = path;
  if (options.version !== undefined) {
    const version = String(options.version);
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(version)) {
      throw new RangeError(`version must be 1-64 characters of [A-Za-z0-9._-] (got ${JSON.stringify(version)})`);
    }
    signed += `${signed.includes("?") ? "&" : "?"}v=${version}`;
  }
  if (options.expiresAt !== undefined) {
    signed += `${signed.includes("?") ? "&" : "?"}exp=${expirySeconds(options.expiresAt)}`;
  }
  return `${signed}${signed.includes("?") ? "&" : "?"}sig=${signMediaPath(signed, key)}`;
}

export interface SignedTarget {
  /** The request-target up to (not including) the `sig` parameter: what the signature covers. */
  signed: string;
  /** The `sig` value as sent ("" when the parameter is present but empty). */
  sig: string;
}

/**
 * Splits a request-target into its signed part and `sig` (the last query parameter), or
 * undefined when it has no `sig` parameter at all. Does not verify anything.
 */
export function splitSignedTarget(target: string): SignedTarget | undefined {
  const q = target.indexOf("?");
  if (q < 0) return undefined;
  if (target.startsWith("sig=", q + 1)) return { signed: target.slice(0, q), sig: target.slice(q + 5) };
  const at = target.lastIndexOf("&sig=");
  if (at < q) return undefined;
  return { signed: target.slice(0, at), sig: target.slice(at + 5) };
}
