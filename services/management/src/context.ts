import type { BlobStore } from "@media-platform/storage";
import type { Logger } from "pino";
import type { S3Connection, TransportsConfig } from "./config/transports";
import type { QuotaDefaults } from "./config";
import type { UploadSettings } from "./config/uploads";
import type { RawReads } from "./db/direct-reads";
import type { PrismaClient } from "./generated/prisma/client";
import type { ManagementMetrics } from "./metrics";

/** What the route handlers and services need; built by startManagement or by a test. */
export interface AppContext {
  prisma: PrismaClient;
  /**
   * The list and search read statements (Database.reads: on Postgres straight on the driver, on
   * PGlite `prisma` itself). A test that swaps `prisma` for a failing database swaps this too.
   */
  reads: RawReads;
  blobStore: BlobStore;
  log: Logger;
  mediaPublicUrl: string;
  /** MEDIA_SIGNING_KEY: every media URL the API hands out is signed with it; undefined = URLs stay unsigned. */
  mediaSigningKey?: string;
  /**
   * MEDIA_URL_LIFETIME_SECONDS: the exp of every URL the API signs on its own (assets/media-links.ts);
   * 0 = no exp. Default a day.
   */
  mediaUrlLifetimeSeconds?: number;
  maxUploadBytes: number;
  limitInputPixels: number;
  /** KEEP_GPS: keep the GPS position in the asset's exif (default false: left out). */
  keepGps?: boolean;
  /** ORIGINAL_METADATA: what of an original's metadata is stored (assets/original-privacy.ts). Default private. */
  originalMetadata?: "private" | "keep";
  duplicateHammingThreshold: number;
  /** Upload spool folder, body idle timeout, concurrent upload cap; defaultUploadSettings() when omitted. */
  uploads?: UploadSettings;
  /** Prometheus metrics (metrics.ts); createApp fills it in when omitted. */
  metrics?: ManagementMetrics;
  /** ASSET_VERSIONS_KEPT: previous originals kept per asset. Default 10. */
  assetVersionsKept?: number;
  /** WEBHOOK_URLS: endpoints the outbox writes a delivery for; none = no webhook rows. */
  webhookUrls?: readonly string[];
  /**
   * MEDIA_EAGER_RENDERS: the media base URLs asked (through the outbox) to render an asset's eager
   * presets after an upload or replace, and `wake`, which sends due outbox rows now instead of at
   * the next poll; none = no eager renders.
   */
  eagerRenders?: { mediaUrls: readonly string[]; wake(): void };
  /** Resumable uploads and imports from a URL; defaultTransportsConfig(<tmp>) when omitted. */
  transports?: TransportsConfig;
  /** The S3 bucket of the blob store (resumable uploads share it across replicas); none = filesystem. */
  s3?: S3Connection;
  /** WORKSPACE_STORAGE_QUOTA_BYTES, WORKSPACE_ASSET_QUOTA: every workspace's default quotas; none when omitted. */
  quotas?: QuotaDefaults;
  /** Purges media caches and the CDN after a delete or replace; none = nothing to tell (tests). */
  propagator?: ChangePropagation;
}

/** Tells media and the CDN that assets' originals changed (lifecycle/propagation.ts' ChangePropagator). */
export interface ChangePropagation {
  /** Resolves once every cache tier was told (or gave up after its retries): it never rejects. */
  assetsChanged(assetIds: readonly string[]): Promise<void>;
}
