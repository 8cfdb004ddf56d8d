import { createHash } from "node:crypto";
import sharp from "sharp";

/** Cache-Control of a signed versioned media URL (`?v=<version>`): what it names never changes. */
export const IMMUTABLE = "public, max-age=31536000, immutable";

/** Freshness of unversioned media URLs (MEDIA_CACHE_MAX_AGE, MEDIA_STALE_WHILE_REVALIDATE). */
export interface CachePolicy {
  maxAgeSeconds: number;
  staleWhileRevalidateSeconds: number;
}

export const DEFAULT_CACHE_POLICY: Readonly<CachePolicy> = Object.freeze({
  maxAgeSeconds: 3600,
  staleWhileRevalidateSeconds: 60,
});

/** A `v` query parameter pins the URL to one version of the original. */
const VERSIONED = /[?&]v=[^&]/;

/** The request-target pins a version (`?v=`): what it names never changes. */
export const isVersioned = (target: string): boolean => VERSIONED.test(target);

/** A year: the longest lifetime any media response is given. */
export const MAX_AGE_CAP_SECONDS = 31_536_000;

/**
 * Originals can be replaced or deleted, so a result is fresh for max-age, then served stale while
 * the CDN revalidates (ETag). The service cannot check a `?v=` against the asset's version, so an
 * unsigned `v` does not make a URL immutable (anyone could pin a future version to today's bytes
 * for a year); a signed one does (delivery/signing.ts). Purges (CDN_PURGE_URL,
 * Surrogate-Key/Cache-Tag) cut both short.
 */
export function cacheControlFor(_cacheKey: string, policy: CachePolicy = DEFAULT_CACHE_POLICY): string {
  return `public, max-age=${policy.maxAgeSeconds}, stale-while-revalidate=${policy.staleWhileRevalidateSeconds}`;
}

export interface EntryMeta {
  /** The asset the entry renders: purges find entries by it; sent as Surrogate-Key and Cache-Tag. */
  assetId?: string;
  /** Other assets the rendition shows (overlays): a purge of any of them purges it too. */
  dependsOn?: readonly string[];
  cacheControl?: string;
}

/** Every media response says its Content-Type is authoritative (no MIME sniffing by browsers). */
export const NOSNIFF_HEADER = "X-Content-Type-Options";
export const NOSNIFF = "nosniff";
/**
 * Media answers are public (or carry their own signature): any origin may read them, and a
 * browser tool (the library's URL studio) may read X-Cache. No credentials are ever allowed.
 */
export const CORS_HEADER_LIST: readonly string[] = [
  "Access-Control-Allow-Origin",
  "*",
  "Access-Control-Expose-Headers",
  "X-Cache",
];

/**
 * One cached result with everything the hot path needs precomputed, so a HIT is a map
 * lookup plus one writeHead/end.
 */
export interface CacheEntry {
  body: Buffer;
  contentType: string;
  assetId: string | undefined;
  /** Other assets the rendition shows (overlays), purged with it; empty for most. */
  dependsOn: readonly string[];
  /** Strong validator: quoted base64url sha256 of the renderer versions and the bytes (etagOf). */
  etag: string;
  /** Headers of a 200 HIT (GET and HEAD). */
  hitHeaders: Readonly<Record<string, string>>;
  /** Headers of a 304 answered from the cache. */
  notModifiedHeaders: Readonly<Record<string, string>>;
  /**
   * The same two header sets as flat [name, value, ...] lists, for writeHead's array form on the
   * hot path: Node then validates and serialises them once, instead of merging an object into
   * headers already set (setHeader per field, each validated twice).
   */
  hitHeaderList: readonly string[];
  notModifiedHeaderList: readonly string[];
}

/**
 * The versions of the code that makes the bytes: an upgrade of sharp or libvips may change a
 * rendition's bytes (sharp 0.35 retuned AVIF quality), and so may one of the codecs its libvips
 * bundles (aom, libwebp, mozjpeg): all are part of every ETag, so a CDN or
 * browser never keeps old bytes under a new ETag, nor gets new bytes under an old one.
 */
export const RENDERER_VERSION = Object.entries(sharp.versions as Record<string, string | undefined>)
  .sort(([a], [b]) => (a < b ? -1 : 1))
  .map(([name, version]) => `${name} ${version}`)
  .join("; ");

/** Strong validator: quoted base64url sha256 of RENDERER_VERSION, a NUL, then the bytes. */
export const etagOf = (body: Buffer): string =>
  `"${createHash("sha256").update(RENDERER_VERSION).update("\0").update(body).digest("base64url")}"`;

/** The one place where the headers of a cached result's responses are built. */
export function makeEntry(body: Buffer, contentType: string, etag = etagOf(body), meta: EntryMeta = {}): CacheEntry {
  const cacheControl = meta.cacheControl ?? cacheControlFor("");
  // CDN purge by asset: Fastly reads Surrogate-Key, Cloudflare Cache-Tag (nginx keys on the URL).
  // Written out as flat lists (the hot path's form; built without Object.entries, since a
  // Redis-tier hit with the memory tier off builds one entry per request); the objects only
  // when a response needs them.
  const notModifiedHeaderList = ["ETag", etag, "Cache-Control", cacheControl];
  const dependsOn = meta.dependsOn ?? NONE;
  if (meta.assetId) {
    // A CDN purge of an overlay asset reaches the renditions that show it.
    const tags = [meta.assetId, ...dependsOn];
    notModifiedHeaderList.push("Surrogate-Key", tags.join(" "), "Cache-Tag", tags.join(","));
  }
  notModifiedHeaderList.push("X-Cache", "HIT", NOSNIFF_HEADER, NOSNIFF, ...CORS_HEADER_LIST);
  const hitHeaderList = ["Content-Type", contentType, "Content-Length", String(body.length), ...notModifiedHeaderList];
  return new Entry(body, etag, { contentType, assetId: meta.assetId, dependsOn, hitHeaderList, notModifiedHeaderList });
}

const NONE: readonly string[] = Object.freeze([]);

/**
 * The header objects are built on first use: a MISS answers from the list (responseHeaders), a
 * plain HIT from the lists too, so most entries never need them.
 */
class Entry implements CacheEntry {
  private hitObject: Readonly<Record<string, string>> | undefined;
  private notModifiedObject: Readonly<Record<string, string>> | undefined;
  readonly contentType: string;
  readonly assetId: string | undefined;
  readonly dependsOn: readonly string[];
  readonly hitHeaderList: readonly string[];
  readonly notModifiedHeaderList: readonly string[];

  constructor(
    readonly body: Buffer,
    readonly etag: string,
    fields: Pick<CacheEntry, "contentType" | "assetId" | "dependsOn" | "hitHeaderList" | "notModifiedHeaderList">,
  ) {
    this.contentType = fields.contentType;
    this.assetId = fields.assetId;
    this.dependsOn = fields.dependsOn;
    this.hitHeaderList = fields.hitHeaderList;
    this.notModifiedHeaderList = fields.notModifiedHeaderList;
  }

  get hitHeaders(): Readonly<Record<string, string>> {
    return (this.hitObject ??= headerObject(this.hitHeaderList));
  }

  get notModifiedHeaders(): Readonly<Record<string, string>> {
    return (this.notModifiedObject ??= headerObject(this.notModifiedHeaderList));
  }
}

function headerObject(list: readonly string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (let i = 0; i < list.length; i += 2) headers[list[i]!] = list[i + 1]!;
  return headers;
}

/** Headers of a response carrying `entry` with the given X-Cache value (a fresh object: callers add to it). */
export function responseHeaders(entry: CacheEntry, xCache: "HIT" | "MISS"): Record<string, string | number> {
  const headers: Record<string, string | number> = headerObject(entry.hitHeaderList);
  if (xCache === "MISS") headers["X-Cache"] = "MISS";
  return headers;
}

/**
 * RFC 9110 §13.1.2 If-None-Match: `*` or a list of entity tags, compared weakly (a W/ prefix
 * on the client's tag still matches our strong tag).
 */
export function ifNoneMatchMatches(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header === etag) return true;
  for (const raw of header.split(",")) {
    const tag = raw.trim();
    if (tag === "*" || tag === etag || (tag.startsWith("W/") && tag.slice(2) === etag)) return true;
  }
  return false;
}
