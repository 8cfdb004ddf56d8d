import path from "node:path";
import { z } from "zod";
import { intField, optionalStringField } from "@media-platform/runtime";
import type { StorageEnv } from "@media-platform/storage";
import { blankToUndefined } from "./env-fields";

/** TUS_UPLOAD_EXPIRY's default: an unfinished resumable upload is kept a day. */
export const DEFAULT_TUS_UPLOAD_EXPIRY_SECONDS = 86_400;
/** DIRECT_UPLOAD_EXPIRY's default: a direct upload's part URLs and the upload itself last an hour. */
export const DEFAULT_DIRECT_UPLOAD_EXPIRY_SECONDS = 3600;
/** The S3 prefix of pending direct uploads: `staging/direct/<workspace>/<id>` (a lifecycle rule on it is documented). */
export const DIRECT_S3_PREFIX = "staging/direct/";
/** IMPORT_TIMEOUT_MS' default: the whole import (every redirect and the body) within a minute. */
export const DEFAULT_IMPORT_TIMEOUT_MS = 60_000;
/** Redirects an import follows, each checked like the first address. */
export const IMPORT_MAX_REDIRECTS = 5;
/** The S3 prefix of unfinished resumable uploads (a lifecycle rule on it is documented). */
export const TUS_S3_PREFIX = "staging/tus/";

/** `host[:port]` entries: a host name or address, lower-cased, with an optional port. */
const hostList = z
  .string()
  .optional()
  .transform(blankToUndefined)
  .transform((v) => (v ? v.split(",").map((h) => h.trim().toLowerCase()) : []))
  .refine(
    (hosts) => hosts.every((h) => /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(:\d{1,5})?$/.test(h)),
    "must be host or host:port entries, comma-separated",
  );

/** Environment of the upload transports besides multipart: tus and import from a URL. */
export const transportsEnvShape = {
  TUS_UPLOAD_EXPIRY: intField(
    60,
    30 * 86_400,
    DEFAULT_TUS_UPLOAD_EXPIRY_SECONDS,
    "a whole number of seconds from 60 to 2592000",
  ).describe(
    "Seconds an unfinished resumable (tus) upload is kept after its creation (60 s to 30 days); then its bytes are swept and it answers 404/410",
  ),
  DIRECT_UPLOAD_EXPIRY: intField(
    60,
    7 * 86_400,
    DEFAULT_DIRECT_UPLOAD_EXPIRY_SECONDS,
    "a whole number of seconds from 60 to 604800",
  ).describe(
    "Seconds a direct-to-S3 upload's presigned part URLs and the pending upload last (60 s to 7 days); then it answers 410 and the sweep aborts it",
  ),
  TUS_DIR: optionalStringField.describe(
    "Filesystem storage driver: folder of unfinished resumable uploads (default <DATA_DIR>/tus); with STORAGE_DRIVER=s3 they live in the bucket under staging/tus/",
  ),
  IMPORT_ALLOWED_HOSTS: hostList.describe(
    "host[:port] entries an import from a URL may reach even at a loopback or private address (internal sources, tests); every other host must resolve to a public address",
  ),
  IMPORT_TIMEOUT_MS: intField(
    1000,
    600_000,
    DEFAULT_IMPORT_TIMEOUT_MS,
    "a whole number of milliseconds from 1000 to 600000",
  ).describe("Longest an import from a URL may take in total: connects, redirects and the body (504 after)"),
};

export interface TransportsConfig {
  tus: { dir: string; expiryMs: number };
  direct: { expiryMs: number };
  redisUrl: string | undefined;
  import: { allowedHosts: readonly string[]; timeoutMs: number };
}

/** REDIS_URL is the service's (config/index.ts), shared with the rate limit counters. */
type TransportsEnv = z.output<z.ZodObject<typeof transportsEnvShape>> & { REDIS_URL?: string };

export function transportsConfigFrom(e: TransportsEnv, dataDir: string): TransportsConfig {
  return {
    tus: { dir: path.resolve(e.TUS_DIR ?? path.join(dataDir, "tus")), expiryMs: e.TUS_UPLOAD_EXPIRY * 1000 },
    direct: { expiryMs: e.DIRECT_UPLOAD_EXPIRY * 1000 },
    redisUrl: e.REDIS_URL,
    import: { allowedHosts: e.IMPORT_ALLOWED_HOSTS, timeoutMs: e.IMPORT_TIMEOUT_MS },
  };
}

/** The settings when the environment sets none (tests, embedded use of createApp). */
export const defaultTransportsConfig = (dataDir: string): TransportsConfig => ({
  tus: { dir: path.join(dataDir, "tus"), expiryMs: DEFAULT_TUS_UPLOAD_EXPIRY_SECONDS * 1000 },
  direct: { expiryMs: DEFAULT_DIRECT_UPLOAD_EXPIRY_SECONDS * 1000 },
  redisUrl: undefined,
  import: { allowedHosts: [], timeoutMs: DEFAULT_IMPORT_TIMEOUT_MS },
});

/** The blob store's bucket, for what writes there besides it (resumable uploads). */
export interface S3Connection {
  bucket: string;
  region: string;
  endpoint?: string;
  forcePathStyle: boolean;
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

/** The S3 connection of the storage settings; undefined for the filesystem driver. */
export function s3ConnectionOf(storage: StorageEnv): S3Connection | undefined {
  if (storage.STORAGE_DRIVER !== "s3" || !storage.S3_BUCKET) return undefined;
  return {
    bucket: storage.S3_BUCKET,
    region: storage.S3_REGION,
    endpoint: storage.S3_ENDPOINT,
    forcePathStyle: storage.S3_FORCE_PATH_STYLE,
    credentials:
      storage.S3_ACCESS_KEY_ID && storage.S3_SECRET_ACCESS_KEY
        ? { accessKeyId: storage.S3_ACCESS_KEY_ID, secretAccessKey: storage.S3_SECRET_ACCESS_KEY }
        : undefined,
  };
}
