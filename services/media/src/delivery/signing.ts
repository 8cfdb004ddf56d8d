import { timingSafeEqual } from "node:crypto";
import { mediaSignatureDigest, SIGNED_QUERY_PARAMETERS, splitSignedTarget } from "@media-platform/contracts";
import { DEFAULT_CACHE_POLICY, IMMUTABLE, isVersioned, MAX_AGE_CAP_SECONDS } from "../cache/entry";
import { SignatureRefusedError } from "./errors";

/**
 * Optional URL signing (MEDIA_SIGNING_KEY). What is signed and how is defined once, in
 * @media-platform/contracts (media/signing.ts: HMAC-SHA256 of the request-target up to the
 * last parameter `sig`, unpadded base64url); the service only verifies, in constant time, and
 * enforces `exp`.
 */
export { signMediaPath, signedMediaUrl } from "@media-platform/contracts";

export type SignatureCheck = "ok" | "missing" | "invalid" | "expired";

export interface SignatureVerdict {
  status: SignatureCheck;
  /** Unix seconds from `exp` (only on a valid signature). */
  expiresAt?: number;
  /**
   * Set for a valid URL with `exp`: it may be cached (CDN, browser) only until it expires, so
   * that no cache serves it around the 403; IMMUTABLE for a signed `v` without `exp`. Absent:
   * the unversioned default applies.
   */
  cacheControl?: string;
}

const BASE64URL = /^[A-Za-z0-9_-]+$/;
const UNIX_SECONDS = /^\d{1,12}$/;
const ALLOWED: ReadonlySet<string> = new Set(SIGNED_QUERY_PARAMETERS);

export class UrlSigner {
  constructor(
    private readonly key: string,
    /** Clock in ms (tests pin it). */
    private readonly now: () => number = Date.now,
    /**
     * MEDIA_CACHE_MAX_AGE: an expiring URL without `v` is cached no longer than unversioned URLs
     * are (its original can still be replaced), however far away its `exp` is.
     */
    private readonly unversionedMaxAgeSeconds: number = DEFAULT_CACHE_POLICY.maxAgeSeconds,
  ) {}

  /** {@link verify}'s status alone (the hot path and most callers need only this). */
  check(requestTarget: string): SignatureCheck {
    return this.verify(requestTarget).status;
  }

  /**
   * Checks a request-target (`req.url`): `sig` must be the last query parameter and the
   * HMAC of everything before it; the parameters it covers may only be exp, download, inline and v, each
   * once; an `exp` in the past is "expired" (checked after the signature, so a forged expiry is
   * "invalid"). The comparison is constant-time with respect to the signature.
   */
  verify(requestTarget: string): SignatureVerdict {
    const parts = splitSignedTarget(requestTarget);
    if (!parts || parts.sig === "") return { status: "missing" };
    // Only base64url characters: anything else (a parameter after sig, padding) cannot match.
    if (!BASE64URL.test(parts.sig)) return { status: "invalid" };
    const expected = mediaSignatureDigest(parts.signed, this.key);
    const actual = Buffer.from(parts.sig, "base64url");
    if (actual.length !== expected.length || !timingSafeEqual(actual, expected)) return { status: "invalid" };
    const q = parts.signed.indexOf("?");
    if (q < 0) return { status: "ok" };
    const query = new URLSearchParams(parts.signed.slice(q + 1));
    const seen = new Set<string>();
    for (const name of query.keys()) {
      if (!ALLOWED.has(name) || seen.has(name)) return { status: "invalid" };
      seen.add(name);
    }
    const exp = query.get("exp");
    // The signer vouches for the version it names: only a signed `v` makes a URL immutable.
    if (exp === null) return isVersioned(parts.signed) ? { status: "ok", cacheControl: IMMUTABLE } : { status: "ok" };
    if (!UNIX_SECONDS.test(exp)) return { status: "invalid" };
    const expiresAt = Number(exp);
    const now = this.now();
    if (now >= expiresAt * 1000) return { status: "expired", expiresAt };
    const cap = isVersioned(parts.signed) ? MAX_AGE_CAP_SECONDS : this.unversionedMaxAgeSeconds;
    return { status: "ok", expiresAt, cacheControl: expiringCacheControl(expiresAt, now, cap) };
  }
}

/**
 * `public, max-age=<seconds left>`, at most `capSeconds` (a year for a versioned URL, else the
 * unversioned max-age). No stale-while-revalidate: no cache may serve it past `exp`.
 */
export function expiringCacheControl(expiresAt: number, nowMs: number, capSeconds = MAX_AGE_CAP_SECONDS): string {
  const left = Math.max(0, Math.min(capSeconds, Math.floor(expiresAt - nowMs / 1000)));
  return left === 0 ? "no-store" : `public, max-age=${left}`;
}

/**
 * 403 unless the request-target carries a valid, unexpired signature (checked before anything
 * else). Returns the Cache-Control an expiring URL must be answered with, if any.
 */
export function requireSignature(signer: UrlSigner, target: string): string | undefined {
  const verdict = signer.verify(target);
  switch (verdict.status) {
    case "ok":
      return verdict.cacheControl;
    case "expired":
      throw new SignatureRefusedError(
        "signature-expired",
        `This signed URL expired at ${verdict.expiresAt} (exp, unix seconds)`,
      );
    case "missing":
      throw new SignatureRefusedError(
        "invalid-signature",
        "This service requires signed URLs: add ?sig=<base64url HMAC-SHA256 of the path>",
      );
    case "invalid":
      throw new SignatureRefusedError(
        "invalid-signature",
        "The URL signature is wrong (or the query has parameters other than exp, download, inline and v before sig, or any after it)",
      );
  }
}
