import { z } from "zod";
import { blankAsUnset, ConfigError, configProblems, type ConfigProblem } from "@media-platform/runtime";
import type { BlobStore } from "./blob-store";
import { FilesystemBlobStore } from "./filesystem";
import { S3BlobStore, S3_DEFAULTS } from "./s3";

const optionalString = z.preprocess(blankAsUnset, z.string().min(1).optional());
const positiveMs = (fallback: number) =>
  z.preprocess(
    blankAsUnset,
    z.coerce
      .number({ error: "must be a whole number of milliseconds" })
      .int("must be a whole number of milliseconds")
      .min(0, "must be 0 (disabled) or more")
      .max(3_600_000, "must be at most 3600000 (1 hour)")
      .default(fallback),
  );

/**
 * Storage settings as environment variables. Deliberately a plain object schema
 * (no cross-field refinement) so services can `.extend()` it into their own env
 * schema; the "bucket required for s3" rule is checked by createBlobStore.
 */
export const storageEnvSchema = z.object({
  STORAGE_DRIVER: z
    .preprocess(blankAsUnset, z.enum(["fs", "s3"]).default("fs"))
    .describe("Blob store driver: fs (filesystem, embedded default) or s3 (MinIO, AWS, R2)"),
  STORAGE_DIR: z
    .preprocess(blankAsUnset, z.string().min(1).default("./.data/blobs"))
    .describe("Root folder of the fs driver"),
  S3_ENDPOINT: z
    .preprocess(
      blankAsUnset,
      z
        .url({
          protocol: /^https?$/,
          error: "must be an http(s) URL such as http://127.0.0.1:9000",
        })
        .optional(),
    )
    .describe("S3-compatible endpoint URL (unset = AWS)"),
  S3_REGION: z.preprocess(blankAsUnset, z.string().min(1).default("us-east-1")).describe("S3 region"),
  S3_BUCKET: z
    .preprocess(
      blankAsUnset,
      z
        .string()
        .min(3, "must be 3-63 characters")
        .max(63, "must be 3-63 characters")
        .regex(/^[a-z0-9][a-z0-9.-]*[a-z0-9]$/, "must be lowercase letters, digits, dots and hyphens")
        .optional(),
    )
    .describe("Bucket (3-63 characters); required with STORAGE_DRIVER=s3"),
  S3_ACCESS_KEY_ID: optionalString.describe(
    "Access key id (set together with S3_SECRET_ACCESS_KEY; unset = SDK credential chain)",
  ),
  S3_SECRET_ACCESS_KEY: optionalString.describe("Secret access key"),
  S3_FORCE_PATH_STYLE: z
    .preprocess(blankAsUnset, z.stringbool().default(true))
    .describe("Path-style bucket URLs (MinIO, s3rver)"),
  S3_CONNECT_TIMEOUT_MS: positiveMs(S3_DEFAULTS.connectionTimeoutMs).describe("TCP connect timeout"),
  S3_REQUEST_TIMEOUT_MS: positiveMs(S3_DEFAULTS.requestTimeoutMs).describe(
    "Request sent until response headers (0 disables)",
  ),
  S3_SOCKET_TIMEOUT_MS: positiveMs(S3_DEFAULTS.socketTimeoutMs).describe(
    "Socket inactivity timeout, also while streaming (0 disables)",
  ),
  S3_MAX_ATTEMPTS: z
    .preprocess(
      blankAsUnset,
      z.coerce
        .number({ error: "must be a whole number from 1 to 10" })
        .int("must be a whole number from 1 to 10")
        .min(1, "must be a whole number from 1 to 10")
        .max(10, "must be a whole number from 1 to 10")
        .default(S3_DEFAULTS.maxAttempts),
    )
    .describe("Attempts per S3 request (1-10)"),
});

export type StorageEnv = z.output<typeof storageEnvSchema>;

/** The settings that point a service at one S3 bucket: every service of a deployment sets the same. */
export const S3_CONNECTION_VARIABLES = [
  "STORAGE_DRIVER",
  "S3_ENDPOINT",
  "S3_REGION",
  "S3_BUCKET",
  "S3_ACCESS_KEY_ID",
  "S3_SECRET_ACCESS_KEY",
  "S3_FORCE_PATH_STYLE",
] as const satisfies readonly (keyof StorageEnv)[];
/** Same shape; named for callers that build it by hand (tests, scripts). */
export type StorageConfig = StorageEnv;

/** The services' ConfigError, raised by the storage settings, e.g. "S3_BUCKET: must be 3-63 characters". */
export class StorageConfigError extends ConfigError {
  constructor(problems: ReadonlyArray<ConfigProblem>) {
    super(problems);
    this.name = "StorageConfigError";
  }
}

function crossFieldProblems(config: StorageEnv): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  if (config.STORAGE_DRIVER === "s3" && !config.S3_BUCKET) {
    problems.push({
      variable: "S3_BUCKET",
      message: "is required when STORAGE_DRIVER=s3",
    });
  }
  if ((config.S3_ACCESS_KEY_ID === undefined) !== (config.S3_SECRET_ACCESS_KEY === undefined)) {
    const missing = config.S3_ACCESS_KEY_ID === undefined ? "S3_ACCESS_KEY_ID" : "S3_SECRET_ACCESS_KEY";
    problems.push({
      variable: missing,
      message: "must be set together with the other S3 credential",
    });
  }
  return problems;
}

/** Validates the storage variables of `env`; throws StorageConfigError naming each bad one. */
export function parseStorageEnv(env: Record<string, string | undefined> = process.env): StorageEnv {
  const result = storageEnvSchema.safeParse(env);
  if (!result.success) throw new StorageConfigError(configProblems(result.error));
  const problems = crossFieldProblems(result.data);
  if (problems.length > 0) throw new StorageConfigError(problems);
  return result.data;
}

export function createBlobStore(config: StorageConfig): BlobStore {
  const problems = crossFieldProblems(config);
  if (problems.length > 0) throw new StorageConfigError(problems);
  if (config.STORAGE_DRIVER === "fs") return new FilesystemBlobStore(config.STORAGE_DIR);
  return new S3BlobStore({
    endpoint: config.S3_ENDPOINT,
    region: config.S3_REGION,
    bucket: config.S3_BUCKET as string,
    accessKeyId: config.S3_ACCESS_KEY_ID,
    secretAccessKey: config.S3_SECRET_ACCESS_KEY,
    forcePathStyle: config.S3_FORCE_PATH_STYLE,
    connectionTimeoutMs: config.S3_CONNECT_TIMEOUT_MS,
    requestTimeoutMs: config.S3_REQUEST_TIMEOUT_MS,
    socketTimeoutMs: config.S3_SOCKET_TIMEOUT_MS,
    maxAttempts: config.S3_MAX_ATTEMPTS,
  });
}

export function createBlobStoreFromEnv(env: Record<string, string | undefined> = process.env): BlobStore {
  return createBlobStore(parseStorageEnv(env));
}
