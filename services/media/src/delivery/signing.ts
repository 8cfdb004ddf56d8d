import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * Optional URL signing (MEDIA_SIGNING_KEY).
 *
 * What is signed: the request path exactly as it is sent, i.e. the request-target up to
 * (not including) the first "?", percent-encoding untouched, with its leading "/":
 *   "/thumbnail:size=256/9b2c...-...e1.png"
 * sig = base64url (RFC 4648 §5, no padding) of HMAC-SHA256(key as UTF-8, path as UTF-8).
 * The URL is then `<path>?sig=<sig>`. With signing on, the query string must be exactly
 * `sig=<sig>`: other query parameters are not covered by the signature, so they are refused
 * (otherwise anyone could mint unlimited cache-busting variants of a signed URL).
 */
export function signMediaPath(path: string, key: string): string {
  return createHmac("sha256", key).update(path, "utf8").digest("base64url");
}

/** `<path>?sig=<sig>`: the signed form of a media path. */
export function signedMediaUrl(path: string, key: string): string {
  return `${path}?sig=${signMediaPath(path, key)}`;
}

export type SignatureCheck = "ok" | "missing" | "invalid";

export class UrlSigner {
  constructor(private readonly key: string) {}

  /** Checks a request-target (`req.url`) in constant time with respect to the signature. */
  check(requestTarget: string): SignatureCheck {
    const q = requestTarget.indexOf("?");
    if (q < 0) return "missing";
    const query = requestTarget.slice(q + 1);
    if (!query.startsWith("sig=")) return query.includes("sig=") ? "invalid" : "missing";
    const given = query.slice(4);
    if (given === "") return "missing";
    // Only base64url characters: anything else (a second parameter, padding) cannot match.
    if (!/^[A-Za-z0-9_-]+$/.test(given)) return "invalid";
    const expected = createHmac("sha256", this.key).update(requestTarget.slice(0, q), "utf8").digest();
    const actual = Buffer.from(given, "base64url");
    if (actual.length !== expected.length) return "invalid";
    return timingSafeEqual(actual, expected) ? "ok" : "invalid";
  }
}
