import { signedMediaUrl, windowedExpiry } from "@media-platform/contracts";
import type { AppContext } from "../context";
import { DEFAULT_MEDIA_URL_LIFETIME_SECONDS } from "../config";

/**
 * The one way the API turns a media path into the URL it hands out: the public media base plus
 * the path, signed with MEDIA_SIGNING_KEY when the server holds it (the media service answers
 * 403 to anything unsigned then). Without an explicit expiry a signed URL carries the windowed
 * exp of MEDIA_URL_LIFETIME_SECONDS (contracts' `windowedExpiry`): one expiry per window, so
 * every answer within it hands out the same string for a rendition and caches keep one copy.
 */
export class MediaLinks {
  /** exp of the URLs signed without an explicit expiry; undefined = no exp (or unsigned). */
  readonly expiresAt: number | undefined;

  constructor(
    readonly publicUrl: string,
    private readonly signingKey: string | undefined,
    lifetimeSeconds: number = DEFAULT_MEDIA_URL_LIFETIME_SECONDS,
    nowMs: number = Date.now(),
  ) {
    this.expiresAt = signingKey && lifetimeSeconds > 0 ? windowedExpiry(nowMs, lifetimeSeconds) : undefined;
  }

  get signed(): boolean {
    return this.signingKey !== undefined;
  }

  /** The absolute URL of `path` (no query of its own), signed when the server holds the key. */
  url(path: string, expiresAt: number | undefined = this.expiresAt): string {
    if (!this.signingKey) return this.publicUrl + path;
    return this.publicUrl + signedMediaUrl(path, this.signingKey, expiresAt === undefined ? {} : { expiresAt });
  }
}

/** The context's links, expiry fixed once (one per answer: a list's URLs share it). */
export const mediaLinksOf = (
  ctx: Pick<AppContext, "mediaPublicUrl" | "mediaSigningKey" | "mediaUrlLifetimeSeconds">,
): MediaLinks => new MediaLinks(ctx.mediaPublicUrl, ctx.mediaSigningKey, ctx.mediaUrlLifetimeSeconds);
