import { timingSafeEqual } from "node:crypto";
import { mediaSignatureDigest } from "@media-platform/contracts";

/**
 * Optional URL signing (MEDIA_SIGNING_KEY). What is signed and how is defined once, in
 * @media-platform/contracts (media/signing.ts: HMAC-SHA256 of the path, unpadded base64url,
 * `<path>?sig=<sig>`); the service only verifies, in constant time.
 */
export { signMediaPath, signedMediaUrl } from "@media-platform/contracts";

export type SignatureCheck = "ok" | "missing" | "invalid";

const BASE64URL = /^[A-Za-z0-9_-]+$/;

export class UrlSigner {
  constructor(private readonly key: string) {}

  /**
   * Checks a request-target (`req.url`): the query must be exactly `sig=<signature of the path>`.
   * The comparison is constant-time with respect to the signature.
   */
  check(requestTarget: string): SignatureCheck {
    const q = requestTarget.indexOf("?");
    if (q < 0) return "missing";
    const query = requestTarget.slice(q + 1);
    if (!query.startsWith("sig=")) return query.includes("sig=") ? "invalid" : "missing";
    const given = query.slice(4);
    if (given === "") return "missing";
    // Only base64url characters: anything else (a second parameter, padding) cannot match.
    if (!BASE64URL.test(given)) return "invalid";
    const expected = mediaSignatureDigest(requestTarget.slice(0, q), this.key);
    const actual = Buffer.from(given, "base64url");
    if (actual.length !== expected.length) return "invalid";
    return timingSafeEqual(actual, expected) ? "ok" : "invalid";
  }
}
