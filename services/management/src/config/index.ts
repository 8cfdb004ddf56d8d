import { createPublicKey } from "node:crypto";
import path from "node:path";
import { z } from "zod";
import {
  blankAsUnset,
  ConfigError,
  optionalStringField as optionalString,
  parseEnv,
  portField as port,
  positiveIntField as positiveInt,
  tracingEnvShape,
} from "@media-platform/runtime";
import { parseStorageEnv, secretEnvField, storageEnvSchema, type StorageEnv } from "@media-platform/storage";
import { lifecycleConfigFrom, lifecycleEnvShape, propagationEnvShape, type LifecycleConfig } from "./lifecycle";
import { transportsConfigFrom, transportsEnvShape, type TransportsConfig } from "./transports";
import { defaultUploadSettings, type UploadSettings } from "./uploads";
import { webhookConfigFrom, webhookEnvShape, type WebhookConfig } from "./webhooks";

export { ConfigError };
export { defaultUploadSettings, type UploadSettings } from "./uploads";
export { purgeUrlsDefault, type LifecycleConfig } from "./lifecycle";
export type { WebhookConfig } from "./webhooks";
export { defaultTransportsConfig, type TransportsConfig } from "./transports";

/** DATABASE_STATEMENT_CACHE's default: prepared statements kept per Postgres connection. */
export const DEFAULT_STATEMENT_CACHE = 256;

/**
 * Every environment variable of the management service (storage variables come from
 * @media-platform/storage and are validated by its own schema). Keys are the variable names.
 */
/** MEDIA_URL_LIFETIME_SECONDS: default a day; at least ten minutes (a client re-signs at half), at most a year. */
export const DEFAULT_MEDIA_URL_LIFETIME_SECONDS = 86_400;
export const MIN_MEDIA_URL_LIFETIME_SECONDS = 600;
export const MAX_MEDIA_URL_LIFETIME_SECONDS = 31_536_000;
/** AUTH_MAX_TOKEN_LIFETIME_SECONDS' default: a day. */
export const DEFAULT_MAX_TOKEN_LIFETIME_SECONDS = 86_400;
/** AUTH_CLOCK_SKEW_SECONDS' default and upper bound: clocks of issuer and API may differ by this much. */
export const DEFAULT_CLOCK_SKEW_SECONDS = 30;
export const MAX_CLOCK_SKEW_SECONDS = 300;
/** WORKSPACE_STORAGE_QUOTA_BYTES and WORKSPACE_ASSET_QUOTA: the defaults of every workspace (undefined = none). */
export interface QuotaDefaults {
  storageBytes?: number;
  assets?: number;
}

/** RATE_LIMIT_REQUESTS_PER_MINUTE's default with DATABASE_URL (embedded mode: no limit). */
export const DEFAULT_RATE_LIMIT_PER_MINUTE = 600;
/** API_KEY_CACHE_SECONDS' default: how long another replica may still accept a revoked key. */
export const DEFAULT_API_KEY_CACHE_SECONDS = 10;

const ownEnvSchema = z.object({
  MANAGEMENT_PORT: port.default(3000).describe("HTTP port of the management API (0 = any free port)"),
  HOST: z.string().min(1).default("0.0.0.0").describe("Interface to listen on"),
  DATA_DIR: z.string().min(1).default("./.data").describe("Embedded-mode data folder (PGlite, blobs, token key)"),
  DATABASE_URL: optionalString
    .refine((v) => v === undefined || /^postgres(ql)?:\/\//.test(v), "must be a postgres:// or postgresql:// URL")
    .describe("Postgres connection URL; unset = embedded PGlite"),
  PGLITE_DIR: optionalString.describe("PGlite data folder when DATABASE_URL is unset (default <DATA_DIR>/pg)"),
  DATABASE_STATEMENT_CACHE: z.coerce
    .number()
    .int()
    .min(0)
    .default(DEFAULT_STATEMENT_CACHE)
    .describe(
      "Postgres: distinct SQL statements kept prepared on every connection (parsed once, still planned for their parameters: plan_cache_mode=force_custom_plan is set as a startup option); 0 = none, for a pooler without prepared statements or startup options",
    ),
  MAX_UPLOAD_BYTES: positiveInt.default(52428800).describe("Largest accepted upload in bytes (413 above)"),
  LIMIT_INPUT_PIXELS: positiveInt.default(100_000_000).describe("sharp limitInputPixels for decoding uploads"),
  KEEP_GPS: z
    .preprocess(blankAsUnset, z.stringbool().default(false))
    .describe(
      "Keep the GPS position and the place fields (IPTC/XMP city, state, country, location): in an asset's exif metadata and in the stored original, which the media service serves publicly (default: removed from both at upload)",
    ),
  ORIGINAL_METADATA: z
    .preprocess(blankAsUnset, z.enum(["private", "keep"]).default("private"))
    .describe(
      "Metadata kept in stored originals (served publicly at {media}/original/<id>.<ext>): private = GPS, place fields, serial numbers and maker notes removed at upload, orientation, colour profile, copyright and other EXIF, XMP and IPTC kept; keep = only GPS and place fields removed (unless KEEP_GPS). Removal is lossless: the image data is not re-encoded",
    ),
  UPLOAD_SPOOL_DIR: optionalString.describe(
    "Folder upload bodies stream to while they are checked (default <os tmpdir>/media-platform-uploads); leftovers older than ORPHAN_GRACE_SECONDS are swept",
  ),
  UPLOAD_IDLE_TIMEOUT_MS: positiveInt
    .default(30_000)
    .describe("An upload body sending no data for this long is answered 408 and its connection closed"),
  MAX_CONCURRENT_UPLOADS: positiveInt
    .default(8)
    .describe("Uploads received or processed at once per process; beyond it 503 + Retry-After"),
  MAX_CONCURRENT_UPLOADS_PER_WORKSPACE: positiveInt
    .optional()
    .describe(
      "Of MAX_CONCURRENT_UPLOADS, the most one workspace may hold at once (default: half of it, at least 1); beyond it that workspace gets 503 + Retry-After while others still get slots",
    ),
  ORPHAN_GRACE_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .default(900)
    .describe(
      "Blobs without an asset row, storage temp files and upload spool files older than this are removed by the orphan sweep (left by a crash mid-upload)",
    ),
  ORPHAN_SWEEP_INTERVAL_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .default(3600)
    .describe("How often the orphan sweep runs after the one at start-up (0 = start-up only)"),
  HEADERS_TIMEOUT_MS: positiveInt
    .default(15_000)
    .describe("Longest a client may take to send the request headers; then the connection is closed (408)"),
  MEDIA_PUBLIC_URL: z
    .string()
    .url()
    .default("http://localhost:3001")
    .transform((u) => u.replace(/\/+$/, ""))
    .describe("Public base URL of the media service, used in mediaUrl"),
  MEDIA_SIGNING_KEY: secretEnvField().describe(
    "The media service's MEDIA_SIGNING_KEY: every media URL the API hands out (asset mediaUrl, POST /v1/media-urls/sign and sign-batch, the library) is signed with it; unset = URLs are returned unsigned",
  ),
  MEDIA_URL_LIFETIME_SECONDS: z
    .preprocess(
      blankAsUnset,
      z.coerce
        .number()
        .int()
        .refine((v) => v === 0 || (v >= MIN_MEDIA_URL_LIFETIME_SECONDS && v <= MAX_MEDIA_URL_LIFETIME_SECONDS), {
          message: `must be 0 or ${MIN_MEDIA_URL_LIFETIME_SECONDS}-${MAX_MEDIA_URL_LIFETIME_SECONDS}`,
        })
        .default(DEFAULT_MEDIA_URL_LIFETIME_SECONDS),
    )
    .describe(
      "With MEDIA_SIGNING_KEY: how long the media URLs the API signs (asset mediaUrl, /v1/media-urls/sign without expiresAt, the library) stay valid, in seconds; their exp is rounded to a window of half this, so URLs of one rendition are identical within a window and stay valid more than half of it. 0 = signed URLs never expire",
    ),
  AUTH_JWKS_URL: optionalString
    .refine((v) => v === undefined || /^https?:\/\//.test(v), "must be an http(s) URL")
    .describe("JWKS endpoint of the identity provider"),
  AUTH_JWT_SECRET: secretEnvField().describe("HS256 shared secret"),
  AUTH_PUBLIC_KEY: optionalString
    .refine((v) => v === undefined || isPublicKeyPem(v), "must be a PEM public key")
    .describe("PEM public key (RS256/ES256/...)"),
  AUTH_ISSUER: optionalString.describe("Required iss claim, checked when set"),
  AUTH_AUDIENCE: optionalString.describe(
    "Required aud claim, checked when set; required with AUTH_JWKS_URL or AUTH_PUBLIC_KEY (an identity provider signs tokens for other APIs too)",
  ),
  AUTH_WORKSPACE_CLAIM: z.string().min(1).default("workspace_id").describe("Claim carrying the workspace id"),
  AUTH_OIDC_ISSUER: optionalString
    .refine((v) => v === undefined || /^https?:\/\//.test(v), "must be an http(s) URL")
    .describe(
      "OpenID Connect issuer the library signs people in with (authorization code + PKCE, from its discovery document); the API verifies its access tokens with AUTH_JWKS_URL. Unset = no provider sign-in",
    ),
  AUTH_OIDC_CLIENT_ID: optionalString.describe("The library's client id at the provider (a public client, no secret)"),
  AUTH_OIDC_SCOPES: z
    .string()
    .min(1)
    .default("openid profile offline_access")
    .describe("Scopes the library asks for (offline_access: a refresh token for silent renewal)"),
  AUTH_OIDC_RESOURCE: optionalString.describe(
    "Sent as `resource` (RFC 8707) and `audience` (Auth0) in the authorization request, for providers that issue access tokens for an API only when asked; unset = not sent",
  ),
  AUTH_OIDC_PROVIDER_NAME: optionalString.describe(
    'Shown on the sign-in button, "Sign in with <name>" (default: the issuer\'s host name)',
  ),
  AUTH_REQUIRE_EXP: z
    .preprocess(blankAsUnset, z.stringbool().default(true))
    .describe("Refuse tokens without an exp claim (401); false accepts them (never-expiring tokens)"),
  AUTH_MAX_TOKEN_LIFETIME_SECONDS: z
    .preprocess(blankAsUnset, z.coerce.number().int().min(0).default(DEFAULT_MAX_TOKEN_LIFETIME_SECONDS))
    .describe(
      "Longest accepted token lifetime (exp - iat) in seconds; longer ones, ones without iat and ones older than this are refused (401). 0 = no cap",
    ),
  AUTH_CLOCK_SKEW_SECONDS: z
    .preprocess(
      blankAsUnset,
      z.coerce.number().int().min(0).max(MAX_CLOCK_SKEW_SECONDS).default(DEFAULT_CLOCK_SKEW_SECONDS),
    )
    .describe(
      `Leeway in seconds for the token's exp, nbf and iat against this server's clock (0-${MAX_CLOCK_SKEW_SECONDS})`,
    ),
  API_KEY_CACHE_SECONDS: z
    .preprocess(blankAsUnset, z.coerce.number().int().min(0).max(300).default(DEFAULT_API_KEY_CACHE_SECONDS))
    .describe(
      "How long a verified API key is trusted without reading its row again (0-300 s): a revoked or expired key is refused at once by the instance that revoked it, and by every other replica within this many seconds",
    ),
  RATE_LIMIT_REQUESTS_PER_MINUTE: z
    .preprocess(blankAsUnset, z.coerce.number().int().min(0).max(1_000_000).optional())
    .describe(
      `Requests each credential (API key, or token subject) may make per minute under /v1; beyond it 429 + Retry-After. 0 = no limit; unset = ${DEFAULT_RATE_LIMIT_PER_MINUTE} with DATABASE_URL, no limit in embedded mode`,
    ),
  REDIS_URL: optionalString
    .refine((v) => v === undefined || /^rediss?:\/\//.test(v), "must be a redis:// or rediss:// URL")
    .describe(
      "Redis shared by the replicas: the rate limit counters and the lock that keeps two PATCHes of one resumable upload from interleaving (the media service's REDIS_URL may be the same); unset = both per process",
    ),
  REDIS_KEY_PREFIX: z
    .string()
    .default("media-platform:")
    .describe("Prefix of every Redis key the management service writes"),
  WORKSPACE_STORAGE_QUOTA_BYTES: z
    .preprocess(blankAsUnset, positiveInt.optional())
    .describe(
      "Bytes each workspace may store (originals, versions and the trash until purged); an upload beyond it is refused (413 quota-exceeded) before it is stored. Unset = no limit; an admin key sets a workspace's own with PUT /v1/usage/quotas",
    ),
  WORKSPACE_ASSET_QUOTA: z
    .preprocess(blankAsUnset, positiveInt.optional())
    .describe(
      "Assets each workspace may hold (the trash included); unset = no limit; an admin key sets a workspace's own with PUT /v1/usage/quotas",
    ),
  WORKSPACE_USAGE_METRICS: z
    .preprocess(blankAsUnset, z.stringbool().default(false))
    .describe(
      "Serve workspace_storage_bytes and workspace_assets gauges per workspace at /metrics, refreshed every minute (off by default: one series per workspace)",
    ),
  USAGE_INGEST_INTERVAL_SECONDS: positiveInt
    .default(30)
    .describe("How often the media service's usage reports (renders, egress) are read from the blob store and counted"),
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
  ...webhookEnvShape,
  ...propagationEnvShape,
  ...tracingEnvShape,
  ...transportsEnvShape,
});

/** All variables: the service's own plus the storage driver's (STORAGE_DRIVER, STORAGE_DIR, S3_*). */

export const managementEnvSchema = ownEnvSchema.extend(storageEnvSchema.shape);

export type ManagementEnv = z.infer<typeof ownEnvSchema>;

export interface ManagementConfig {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl: string | undefined;
  /** DATABASE_STATEMENT_CACHE (Postgres only). */
  statementCache: number;
  pgliteDir: string;
  maxUploadBytes: number;
  limitInputPixels: number;
  /** KEEP_GPS: keep the GPS position in an asset's exif. */
  keepGps: boolean;
  /** ORIGINAL_METADATA: what of an original's metadata is stored. */
  originalMetadata: "private" | "keep";
  /** Upload spool folder, body idle timeout, concurrent upload cap. */
  uploads: UploadSettings;
  headersTimeoutMs: number;
  /** Orphan sweep: grace period and interval (ms; interval 0 = start-up only). */
  orphanSweep: { graceMs: number; intervalMs: number };
  mediaPublicUrl: string;
  /** MEDIA_SIGNING_KEY: signs media URLs for POST /v1/media-urls/sign; undefined = unsigned. */
  mediaSigningKey: string | undefined;
  /** MEDIA_URL_LIFETIME_SECONDS: lifetime of the media URLs the API signs (0 = no exp). */
  mediaUrlLifetimeSeconds: number;
  auth: {
    jwksUrl: string | undefined;
    jwtSecret: string | undefined;
    publicKey: string | undefined;
    issuer: string | undefined;
    audience: string | undefined;
    workspaceClaim: string;
    requireExpiry: boolean;
    maxTokenLifetimeSeconds: number;
    clockSkewSeconds: number;
    /** The library's OpenID Connect sign-in; undefined = none. */
    oidc: { issuer: string; clientId: string; scopes: string; resource?: string; providerName: string } | undefined;
    /** API_KEY_CACHE_SECONDS */
    apiKeyCacheSeconds: number;
  };
  duplicateHammingThreshold: number;
  logLevel: ManagementEnv["LOG_LEVEL"];
  /** Blob storage settings (STORAGE_DIR defaults to <DATA_DIR>/blobs). */
  storage: StorageEnv;
  /** Trash, versions and change propagation (config/lifecycle.ts). */
  lifecycle: LifecycleConfig;
  /** Webhook delivery (config/webhooks.ts). */
  webhooks: WebhookConfig;
  /** Resumable uploads and imports from a URL (config/transports.ts). */
  transports: TransportsConfig;
  /** Requests per credential and minute (0 = none) and where they are counted. */
  rateLimit: { requestsPerMinute: number; redisUrl: string | undefined; redisKeyPrefix: string };
  /** Default quotas, usage gauges and report ingestion. */
  usage: {
    quotas: QuotaDefaults;
    metrics: boolean;
    ingestIntervalMs: number;
  };
}

function webhooksFrom(e: ManagementEnv): WebhookConfig {
  try {
    return webhookConfigFrom(e);
  } catch (err) {
    throw new ConfigError([{ variable: "WEBHOOK_SECRET", message: err instanceof Error ? err.message : String(err) }]);
  }
}

/** A PEM (`\n` escapes allowed, as env files write it) that node:crypto reads as a public key. */
function isPublicKeyPem(value: string): boolean {
  try {
    createPublicKey(value.replace(/\\n/g, "\n"));
    return true;
  } catch {
    return false;
  }
}

/** Validates the environment; throws ConfigError naming the offending variable(s). */
export function loadConfig(env: Record<string, string | undefined> = process.env): ManagementConfig {
  const e = parseEnv(ownEnvSchema, env);
  const keys = (["AUTH_JWKS_URL", "AUTH_JWT_SECRET", "AUTH_PUBLIC_KEY"] as const).filter((k) => e[k] !== undefined);
  if (keys.length > 1) {
    throw new ConfigError(
      keys.map((variable) => ({
        variable,
        message: "AUTH_JWKS_URL, AUTH_JWT_SECRET and AUTH_PUBLIC_KEY are exclusive; set one",
      })),
    );
  }
  // An identity provider signs tokens for many APIs: without an audience, any of them would do here.
  const providerKey = (["AUTH_JWKS_URL", "AUTH_PUBLIC_KEY"] as const).find((k) => e[k] !== undefined);
  if (providerKey && e.AUTH_AUDIENCE === undefined) {
    throw new ConfigError([
      { variable: "AUTH_AUDIENCE", message: `required with ${providerKey}: the aud claim tokens for this API carry` },
    ]);
  }
  // The provider's access tokens are verified with its keys: the embedded secret never signed them.
  if (e.AUTH_OIDC_ISSUER !== undefined) {
    const missing = (["AUTH_OIDC_CLIENT_ID", "AUTH_JWKS_URL"] as const).filter((k) => e[k] === undefined);
    if (missing.length > 0)
      throw new ConfigError(missing.map((variable) => ({ variable, message: "required with AUTH_OIDC_ISSUER" })));
  }
  const dataDir = path.resolve(e.DATA_DIR);
  // A StorageConfigError is a ConfigError: it propagates as is.
  const storageDir = env.STORAGE_DIR?.trim() ? env.STORAGE_DIR : path.join(dataDir, "blobs");
  const storage: StorageEnv = parseStorageEnv({ ...env, STORAGE_DIR: storageDir });
  return {
    port: e.MANAGEMENT_PORT,
    host: e.HOST,
    dataDir,
    databaseUrl: e.DATABASE_URL,
    statementCache: e.DATABASE_STATEMENT_CACHE,
    pgliteDir: path.resolve(e.PGLITE_DIR ?? path.join(dataDir, "pg")),
    maxUploadBytes: e.MAX_UPLOAD_BYTES,
    limitInputPixels: e.LIMIT_INPUT_PIXELS,
    keepGps: e.KEEP_GPS,
    originalMetadata: e.ORIGINAL_METADATA,
    uploads: {
      spoolDir: path.resolve(e.UPLOAD_SPOOL_DIR ?? defaultUploadSettings().spoolDir),
      bodyIdleTimeoutMs: e.UPLOAD_IDLE_TIMEOUT_MS,
      maxConcurrentUploads: e.MAX_CONCURRENT_UPLOADS,
      maxConcurrentUploadsPerWorkspace: e.MAX_CONCURRENT_UPLOADS_PER_WORKSPACE,
    },
    headersTimeoutMs: e.HEADERS_TIMEOUT_MS,
    orphanSweep: { graceMs: e.ORPHAN_GRACE_SECONDS * 1000, intervalMs: e.ORPHAN_SWEEP_INTERVAL_SECONDS * 1000 },
    mediaPublicUrl: e.MEDIA_PUBLIC_URL,
    mediaSigningKey: e.MEDIA_SIGNING_KEY,
    mediaUrlLifetimeSeconds: e.MEDIA_URL_LIFETIME_SECONDS,
    auth: {
      jwksUrl: e.AUTH_JWKS_URL,
      jwtSecret: e.AUTH_JWT_SECRET,
      publicKey: e.AUTH_PUBLIC_KEY,
      issuer: e.AUTH_ISSUER,
      audience: e.AUTH_AUDIENCE,
      workspaceClaim: e.AUTH_WORKSPACE_CLAIM,
      requireExpiry: e.AUTH_REQUIRE_EXP,
      maxTokenLifetimeSeconds: e.AUTH_MAX_TOKEN_LIFETIME_SECONDS,
      clockSkewSeconds: e.AUTH_CLOCK_SKEW_SECONDS,
      oidc: e.AUTH_OIDC_ISSUER
        ? {
            issuer: e.AUTH_OIDC_ISSUER,
            clientId: e.AUTH_OIDC_CLIENT_ID!,
            scopes: e.AUTH_OIDC_SCOPES,
            resource: e.AUTH_OIDC_RESOURCE,
            providerName: e.AUTH_OIDC_PROVIDER_NAME ?? new URL(e.AUTH_OIDC_ISSUER).hostname,
          }
        : undefined,
      apiKeyCacheSeconds: e.API_KEY_CACHE_SECONDS,
    },
    duplicateHammingThreshold: e.DUPLICATE_HAMMING_THRESHOLD,
    logLevel: e.LOG_LEVEL,
    storage,
    lifecycle: lifecycleConfigFrom(e),
    webhooks: webhooksFrom(e),
    transports: transportsConfigFrom(e, dataDir),
    rateLimit: {
      requestsPerMinute: e.RATE_LIMIT_REQUESTS_PER_MINUTE ?? (e.DATABASE_URL ? DEFAULT_RATE_LIMIT_PER_MINUTE : 0),
      redisUrl: e.REDIS_URL,
      redisKeyPrefix: e.REDIS_KEY_PREFIX,
    },
    usage: {
      quotas: { storageBytes: e.WORKSPACE_STORAGE_QUOTA_BYTES, assets: e.WORKSPACE_ASSET_QUOTA },
      metrics: e.WORKSPACE_USAGE_METRICS,
      ingestIntervalMs: e.USAGE_INGEST_INTERVAL_SECONDS * 1000,
    },
  };
}
