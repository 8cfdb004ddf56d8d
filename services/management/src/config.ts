import path from "node:path";
import { z } from "zod";
import { parseStorageEnv, storageEnvSchema, type StorageEnv } from "@media-platform/storage";
import { lifecycleEnvShape, lifecycleConfigFrom, type LifecycleConfig } from "./lifecycle/config";

const port = z.coerce.number().int().min(0).max(65535);
const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === "" ? undefined : v));
const positiveInt = z.coerce.number().int().positive();

/**
 * Every environment variable of the management service (storage variables come from
 * @media-platform/storage and are validated by its own schema). Keys are the variable names.
 */
const ownEnvSchema = z.object({
  MANAGEMENT_PORT: port.default(3000).describe("HTTP port of the management API (0 = any free port)"),
  HOST: z.string().min(1).default("0.0.0.0").describe("Interface to listen on"),
  DATA_DIR: z.string().min(1).default("./.data").describe("Embedded-mode data folder (PGlite, blobs, token key)"),
  DATABASE_URL: optionalString
    .refine((v) => v === undefined || /^postgres(ql)?:\/\//.test(v), "must be a postgres:// or postgresql:// URL")
    .describe("Postgres connection URL; unset = embedded PGlite"),
  PGLITE_DIR: optionalString.describe("PGlite data folder when DATABASE_URL is unset (default <DATA_DIR>/pg)"),
  MAX_UPLOAD_BYTES: positiveInt.default(52428800).describe("Largest accepted upload in bytes (413 above)"),
  LIMIT_INPUT_PIXELS: positiveInt.default(100_000_000).describe("sharp limitInputPixels for decoding uploads"),
  MEDIA_PUBLIC_URL: z
    .string()
    .url()
    .default("http://localhost:3001")
    .transform((u) => u.replace(/\/+$/, ""))
    .describe("Public base URL of the media service, used in mediaUrl"),
  AUTH_JWKS_URL: optionalString
    .refine((v) => v === undefined || /^https?:\/\//.test(v), "must be an http(s) URL")
    .describe("JWKS endpoint of the identity provider"),
  AUTH_JWT_SECRET: optionalString
    .refine((v) => v === undefined || v.length >= 16, "must be at least 16 characters")
    .describe("HS256 shared secret"),
  AUTH_PUBLIC_KEY: optionalString
    .refine((v) => v === undefined || v.includes("BEGIN"), "must be a PEM public key")
    .describe("PEM public key (RS256/ES256/...)"),
  AUTH_ISSUER: optionalString.describe("Required iss claim, checked when set"),
  AUTH_AUDIENCE: optionalString.describe("Required aud claim, checked when set"),
  AUTH_WORKSPACE_CLAIM: z.string().min(1).default("workspace_id").describe("Claim carrying the workspace id"),
  DUPLICATE_HAMMING_THRESHOLD: z.coerce
    .number()
    .int()
    .min(0)
    .max(32)
    .default(10)
    .describe(
      "Largest perceptual-hash Hamming distance reported as a similar duplicate. Measured on the fixture photos: resized / re-encoded copies (JPEG q20-70, WebP, AVIF, 64-1024 px) are 0-5 bits away, unrelated photos 25-43 bits",
    ),
  LOG_LEVEL: z
    .enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"])
    .default("info")
    .describe("pino log level"),
  ...lifecycleEnvShape,
});

/** All variables: the service's own plus the storage driver's (STORAGE_DRIVER, STORAGE_DIR, S3_*). */
export const managementEnvSchema = ownEnvSchema.extend(storageEnvSchema.shape);

export type ManagementEnv = z.infer<typeof ownEnvSchema>;

export interface ManagementConfig {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl: string | undefined;
  pgliteDir: string;
  maxUploadBytes: number;
  limitInputPixels: number;
  mediaPublicUrl: string;
  auth: {
    jwksUrl: string | undefined;
    jwtSecret: string | undefined;
    publicKey: string | undefined;
    issuer: string | undefined;
    audience: string | undefined;
    workspaceClaim: string;
  };
  duplicateHammingThreshold: number;
  logLevel: ManagementEnv["LOG_LEVEL"];
  /** Blob storage settings (STORAGE_DIR defaults to <DATA_DIR>/blobs). */
  storage: StorageEnv;
  /** Trash, versions, webhooks and change propagation (lifecycle/config.ts). */
  lifecycle: LifecycleConfig;
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

/** Formats zod issues as "VAR: message" lines. */
export function describeEnvIssues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.join(".") || "(env)"}: ${i.message}`).join("; ");
}

function lifecycleFrom(e: ManagementEnv): LifecycleConfig {
  try {
    return lifecycleConfigFrom(e);
  } catch (err) {
    throw new ConfigError(err instanceof Error ? err.message : String(err));
  }
}

/** Validates the environment; throws ConfigError naming the offending variable(s). */
export function loadConfig(env: Record<string, string | undefined> = process.env): ManagementConfig {
  const parsed = ownEnvSchema.safeParse(env);
  if (!parsed.success) throw new ConfigError(`invalid configuration: ${describeEnvIssues(parsed.error)}`);
  const e = parsed.data;
  const keyCount = [e.AUTH_JWKS_URL, e.AUTH_JWT_SECRET, e.AUTH_PUBLIC_KEY].filter((v) => v !== undefined).length;
  if (keyCount > 1) {
    throw new ConfigError(
      "invalid configuration: AUTH_JWKS_URL, AUTH_JWT_SECRET and AUTH_PUBLIC_KEY are exclusive; set one",
    );
  }
  const dataDir = path.resolve(e.DATA_DIR);
  let storage: StorageEnv;
  try {
    const storageDir = env.STORAGE_DIR?.trim() ? env.STORAGE_DIR : path.join(dataDir, "blobs");
    storage = parseStorageEnv({ ...env, STORAGE_DIR: storageDir });
  } catch (err) {
    throw new ConfigError(err instanceof Error ? err.message : String(err));
  }
  return {
    port: e.MANAGEMENT_PORT,
    host: e.HOST,
    dataDir,
    databaseUrl: e.DATABASE_URL,
    pgliteDir: path.resolve(e.PGLITE_DIR ?? path.join(dataDir, "pg")),
    maxUploadBytes: e.MAX_UPLOAD_BYTES,
    limitInputPixels: e.LIMIT_INPUT_PIXELS,
    mediaPublicUrl: e.MEDIA_PUBLIC_URL,
    auth: {
      jwksUrl: e.AUTH_JWKS_URL,
      jwtSecret: e.AUTH_JWT_SECRET,
      publicKey: e.AUTH_PUBLIC_KEY,
      issuer: e.AUTH_ISSUER,
      audience: e.AUTH_AUDIENCE,
      workspaceClaim: e.AUTH_WORKSPACE_CLAIM,
    },
    duplicateHammingThreshold: e.DUPLICATE_HAMMING_THRESHOLD,
    logLevel: e.LOG_LEVEL,
    storage,
    lifecycle: lifecycleFrom(e),
  };
}
