import { z } from "zod";
import { secretEnvField } from "@media-platform/storage";
import { blankToUndefined, urlList } from "./env-fields";

/**
 * Environment of the asset lifecycle (trash and versions); merged into the management service's
 * env schema, so it is validated and documented with the rest.
 */
export const lifecycleEnvShape = {
  TRASH_RETENTION_DAYS: z.coerce
    .number()
    .positive()
    .default(30)
    .describe("Trashed assets are removed permanently (row, originals, versions) after this many days"),
  TRASH_SWEEP_INTERVAL_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(60_000)
    .describe("How often each replica runs the trash retention job"),
  ASSET_VERSIONS_KEPT: z.coerce
    .number()
    .int()
    .min(0)
    .max(1000)
    .default(10)
    .describe("Previous originals kept per asset after replaces (oldest removed first)"),
};

/** Environment of change propagation: media purges, eager renders, the CDN. */
export const propagationEnvShape = {
  MEDIA_PURGE_URLS: urlList.describe(
    "Internal base URLs of the media service told to purge an asset after a delete, replace or focal-point change (one replica is enough with Redis; every replica without). Unset = MEDIA_PUBLIC_URL only when it is a loopback address (one host, embedded); else none, since the purge secret must not go to a CDN",
  ),
  MEDIA_PURGE_SECRET: secretEnvField().describe(
    "Shared secret of the media purge endpoint (same value on media); unset = generated in <DATA_DIR>/purge-secret",
  ),
  MEDIA_EAGER_RENDERS: z
    .preprocess((v) => (typeof v === "string" && v.trim() === "" ? undefined : v), z.stringbool().default(true))
    .describe(
      "After an upload or replace, ask the media service (MEDIA_PURGE_URLS, with the purge secret, through the outbox: at least once) to render the asset's eager presets into its caches. On whenever a media URL is known (MEDIA_PURGE_URLS, or a loopback MEDIA_PUBLIC_URL); false switches it off",
    ),
  CDN_PURGE_URL: z
    .string()
    .optional()
    .transform(blankToUndefined)
    .refine(
      (v) => v === undefined || (/^https?:\/\//.test(v) && URL.canParse(v.replaceAll("{assetId}", "x"))),
      "must be an http(s) URL",
    )
    .describe(
      "Called (POST) after each delete, replace and focal-point change, before the answer, with the asset id ({assetId} in the URL is replaced, and it is the JSON body). A 5xx, 408, 429 or network error is retried (4 attempts, 100/200/400 ms apart); any other 4xx is not. Then logged and counted in cache_purge_failures_total",
    ),
};

export interface LifecycleConfig {
  trashRetentionDays: number;
  trashSweepIntervalMs: number;
  assetVersionsKept: number;
  /** Unset: MEDIA_PUBLIC_URL when it is a loopback address, else none (see purgeUrlsDefault). */
  mediaPurgeUrls: string[];
  /** Unset = the embedded shared secret file (resolved at start-up, see server.ts). */
  mediaPurgeSecret: string | undefined;
  cdnPurgeUrl: string | undefined;
  /** The media base URLs told to render eager presets (MEDIA_PURGE_URLS), unless MEDIA_EAGER_RENDERS=false; empty = off. */
  mediaEagerUrls: string[];
}

type Shape = typeof lifecycleEnvShape & typeof propagationEnvShape;
type LifecycleEnv = { [K in keyof Shape]: z.output<Shape[K]> } & { MEDIA_PUBLIC_URL: string };

export function lifecycleConfigFrom(e: LifecycleEnv): LifecycleConfig {
  const mediaPurgeUrls = e.MEDIA_PURGE_URLS.length > 0 ? e.MEDIA_PURGE_URLS : purgeUrlsDefault(e.MEDIA_PUBLIC_URL);
  return {
    trashRetentionDays: e.TRASH_RETENTION_DAYS,
    trashSweepIntervalMs: e.TRASH_SWEEP_INTERVAL_MS,
    assetVersionsKept: e.ASSET_VERSIONS_KEPT,
    mediaPurgeUrls,
    mediaPurgeSecret: e.MEDIA_PURGE_SECRET,
    cdnPurgeUrl: e.CDN_PURGE_URL,
    mediaEagerUrls: e.MEDIA_EAGER_RENDERS ? mediaPurgeUrls : [],
  };
}

/**
 * The purge call carries the shared secret, so it goes by default only where the public URL is
 * this host (the embedded install: media at http://localhost:3001). A public URL elsewhere is a
 * CDN or load balancer, never told the secret: there MEDIA_PURGE_URLS names the media replicas.
 */
export function purgeUrlsDefault(mediaPublicUrl: string): string[] {
  const host = new URL(mediaPublicUrl).hostname.toLowerCase();
  const loopback = host === "localhost" || host === "[::1]" || /^127(?:\.\d{1,3}){3}$/.test(host);
  return loopback ? [mediaPublicUrl] : [];
}
