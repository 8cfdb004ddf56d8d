import { DEFAULT_CACHE_POLICY, type CachePolicy } from "./cache/entry";
import { availableParallelism } from "node:os";
import path from "node:path";
import proxyaddr from "proxy-addr";
import { z } from "zod";
import { defaultMediaLimits, type MediaLimits, type PresetTable } from "@media-platform/contracts";
import {
  blankAsUnset,
  ConfigError,
  intField as int,
  numberField as num,
  optionalStringField as optionalString,
  parseEnv,
  tracingEnvShape,
} from "@media-platform/runtime";
import { parseStorageEnv, secretEnvField, storageEnvSchema, type StorageConfig } from "@media-platform/storage";
import { AUTO_FORMATS, type AutoFormat } from "./negotiation";
import { loadPresetsFile, type EagerPreset } from "./presets";
import { DEFAULT_AUTO_QUALITY_TARGET } from "./render/pipeline/encode-search";

const MiB = 1024 * 1024;

/** A MEDIA_TRUSTED_PROXIES list as proxy-addr understands it. */
function compilesAsTrust(list: string[]): boolean {
  try {
    proxyaddr.compile(list);
    return true;
  } catch {
    return false;
  }
}

/**
 * Default transformation slots per CPU core. With one libvips thread per image
 * (MEDIA_VIPS_CONCURRENCY=1) a render keeps under one core busy: it waits on its read, hands
 * tiles between libvips' threads, and between two renders its slot waits for the event loop to
 * start the next. Against two per core (imgproxy's rule of thumb), four gave 8 concurrent MISSes
 * on 2 cores a median 3% more req/s (-1% to +14%) and less CPU per MISS on the JavaScript thread
 * in all nine interleaved A/B runs of the two settings. Memory
 * follows the pixels in flight (MEDIA_MAX_INFLIGHT_PIXELS), not the slots. A fixed count would
 * leave most cores of a larger machine idle.
 */
const RENDERS_PER_CORE = 4;

/**
 * Every environment variable of the media service, keys = variable names (deployment
 * manifests list them from here). The storage variables (STORAGE_DRIVER, STORAGE_DIR, S3_*)
 * come from @media-platform/storage and are validated by its schema as well.
 */
export const mediaEnvSchema = z.object({
  ...storageEnvSchema.shape,
  ...tracingEnvShape,
  STORAGE_DIR: optionalString.describe("Filesystem blob root when STORAGE_DRIVER=fs (default <DATA_DIR>/blobs)"),
  MEDIA_PORT: int(0, 65535, 3001, "a port number from 0 to 65535").describe(
    "HTTP port of the media service (0 = any free port)",
  ),
  HOST: z.preprocess(blankAsUnset, z.string().min(1).default("0.0.0.0")).describe("Interface to listen on"),
  DATA_DIR: z
    .preprocess(blankAsUnset, z.string().min(1).default("./.data"))
    .describe("Embedded-mode data folder (blobs under <DATA_DIR>/blobs)"),
  REDIS_URL: z
    .preprocess(
      blankAsUnset,
      z
        .string()
        .regex(/^rediss?:\/\/\S+$/, "must be a redis:// or rediss:// URL such as redis://127.0.0.1:6379")
        .optional(),
    )
    .describe("Redis for the shared result cache and cross-replica locks; unset = in-process cache only"),
  REDIS_KEY_PREFIX: z
    .preprocess(blankAsUnset, z.string().max(100, "must be at most 100 characters").default("media:"))
    .describe("Prefix of every Redis key the service writes"),
  REDIS_COMMAND_TIMEOUT_MS: int(10, 60_000, 500, "a whole number of milliseconds from 10 to 60000").describe(
    "Redis connect and command timeout; a slower Redis counts as down",
  ),
  CACHE_MEMORY_BYTES: int(
    0,
    64 * 1024 * MiB,
    256 * MiB,
    "a whole number of bytes (0 disables the in-process cache)",
  ).describe("Byte budget of the in-process LRU result cache"),
  CACHE_TTL_SECONDS: int(1, 10 * 365 * 86400, 7 * 86400, "a whole number of seconds from 1 to 315360000").describe(
    "Lifetime of results in Redis",
  ),
  CACHE_MAX_ENTRY_BYTES: int(1, 512 * MiB, 10 * MiB, "a whole number of bytes from 1 to 536870912").describe(
    "Results larger than this are served but not cached (either tier)",
  ),
  MEDIA_SIGNING_KEY: secretEnvField().describe(
    "When set, every media URL needs ?sig=<base64url HMAC-SHA256 of the path>",
  ),
  MEDIA_ALLOW_QUERY: z
    .preprocess(blankAsUnset, z.stringbool({ error: "must be true or false" }).default(true))
    .describe(
      "Allow query strings on media URLs (each is its own cache entry, e.g. ?v=2); false = 400 for any query (exp included) except a signed one (exp, sig) when MEDIA_SIGNING_KEY is set",
    ),
  LIMIT_INPUT_PIXELS: int(1, 10_000_000_000, 100_000_000, "a whole number of pixels from 1 to 10000000000").describe(
    "sharp limitInputPixels: originals above this many pixels are refused",
  ),
  MEDIA_MAX_DIMENSION: int(1, 100_000, defaultMediaLimits.maxDimension, "a whole number from 1 to 100000").describe(
    "Largest width/height/size/border a URL may ask for",
  ),
  MEDIA_MAX_OUTPUT_PIXELS: int(
    1,
    10_000_000_000,
    defaultMediaLimits.maxOutputPixels,
    "a whole number from 1 to 10000000000",
  ).describe("Largest image (width x height) any step may produce; checked from the original's header before decoding"),
  MEDIA_MAX_WORK_PIXELS: int(
    1,
    100_000_000_000,
    defaultMediaLimits.maxWorkPixels,
    "a whole number from 1 to 100000000000",
  ).describe(
    "Work budget of one request: pixels processed summed over its steps (each counts max(input, output)); above it 400 before decoding",
  ),
  MEDIA_MAX_WORK_COST: int(
    1,
    10_000_000,
    defaultMediaLimits.maxWorkCost,
    "a whole number of milliseconds from 1 to 10000000",
  ).describe(
    "Work budget of one request in estimated CPU milliseconds: each step's and the encoder's calibrated cost per pixel (bench/calibrate-cost.ts) times its pixels and frames; above it 400 naming the most expensive step, before decoding",
  ),
  MEDIA_DECODED_CACHE_BYTES: int(
    0,
    64 * 1024 * MiB,
    128 * MiB,
    "a whole number of bytes from 0 to 68719476736",
  ).describe(
    "Memory for decoded originals shared between renditions of one original (a burst of srcset widths decodes it once, at the largest scale needed); 0 = each rendition decodes its own",
  ),
  MEDIA_MAX_INFLIGHT_PIXELS: int(
    1,
    100_000_000_000,
    defaultMediaLimits.maxWorkPixels,
    "a whole number from 1 to 100000000000",
  ).describe(
    "Pixels all running transformations may hold in memory at once: each counts its decode at the decoder's scale (a JPEG or WebP shrinks on load for a smaller output) and its intermediate images; bounds memory, later ones wait. Idle room is lent rather than left unused",
  ),
  MEDIA_CLIENT_SHARE: num(0.01, 1, 0.5, "a number from 0.01 to 1").describe(
    "Share of the render capacity (MEDIA_MAX_INFLIGHT_PIXELS) one client may hold while other clients wait: work-conserving, a client alone (a CDN filling its cache) may use all of it; while others wait, clients within their share go first and a client beyond it gets 429 + Retry-After (a client holding nothing is always admitted; 1 = no per-client bound; cache hits are never refused)",
  ),
  MEDIA_TRUSTED_PROXIES: z
    .preprocess(
      blankAsUnset,
      z
        .string()
        .transform((v) =>
          v
            .split(",")
            .map((entry) => entry.trim())
            .filter((entry) => entry !== ""),
        )
        .refine(
          compilesAsTrust,
          "must be a comma-separated list of IP addresses, CIDR ranges, loopback, linklocal or uniquelocal",
        )
        .optional(),
    )
    .describe(
      "Proxies whose X-Forwarded-For names the client (IPs, CIDRs, loopback, linklocal, uniquelocal); unset = the peer address is the client (per-client share). Behind a CDN, list the CDN's address ranges so each viewer is a client of its own",
    ),
  MEDIA_MAX_MULTIPLIER: num(1, 1000, defaultMediaLimits.maxMultiplier, "a number from 1 to 1000").describe(
    "Cap for saturation, brightness and channelManipulation multipliers",
  ),
  MEDIA_MAX_NOISE_AMOUNT: num(0.1, 100, defaultMediaLimits.maxNoiseAmount, "a number from 0.1 to 100").describe(
    "Cap for add-noise amount",
  ),
  MEDIA_MAX_WAVE_AMPLITUDE: num(1, 100_000, defaultMediaLimits.maxWaveAmplitude, "a number from 1 to 100000").describe(
    "Cap for wave amplitude (pixels)",
  ),
  MEDIA_MAX_WAVE_LENGTH: num(5, 1_000_000, defaultMediaLimits.maxWaveLength, "a number from 5 to 1000000").describe(
    "Cap for wave wavelength (pixels)",
  ),
  MEDIA_MAX_SHARPEN: num(0, 1000, defaultMediaLimits.maxSharpen, "a number from 0 to 1000").describe(
    "Cap for sharpen intensity",
  ),
  MEDIA_MAX_ANIMATION_FRAMES: int(1, 100_000, 256, "a whole number from 1 to 100000").describe(
    "Most frames a GIF/WebP animation may have to be rendered animated (each frame runs every step); above it 400 before decoding, unless frame:index asks for one frame",
  ),
  MEDIA_REQUEST_TIMEOUT_MS: int(100, 600_000, 30_000, "a whole number of milliseconds from 100 to 600000").describe(
    "Longest a request may wait for its transformation (queue + read + render); then 503",
  ),
  MEDIA_MAX_RESULT_BYTES: int(1, 1024 * MiB, 64 * MiB, "a whole number of bytes from 1 to 1073741824").describe(
    "Largest result the service sends: a larger one answers 413 result-too-large, and the URL is remembered (until a purge) so asking again renders nothing. Results between CACHE_MAX_ENTRY_BYTES and this are served but not cached",
  ),
  MEDIA_SEND_TIMEOUT_MS: int(100, 3_600_000, 60_000, "a whole number of milliseconds from 100 to 3600000").describe(
    "Longest a response may take to reach its client once its body is ready; a client that reads slower (or not at all) is disconnected and the body's buffer released",
  ),
  MEDIA_CONCURRENCY: int(0, 1024, 0, "a whole number from 0 (four per CPU core) to 1024").describe(
    "Transformations running at once; 0 = four per CPU core (with one libvips thread per image, fewer left cores idle)",
  ),
  MEDIA_QUEUE_LIMIT: int(0, 100_000, 64, "a whole number from 0 to 100000").describe(
    "Transformations waiting: for a slot, or (a heavy render beyond the half of the slots heavy renders may run) for the work gate without a slot; beyond it 503 + Retry-After",
  ),
  MEDIA_USAGE_REPORT_INTERVAL_SECONDS: int(0, 3600, 10, "a whole number of seconds from 0 to 3600").describe(
    "How often the renders and bytes sent per asset, counted in memory, are written to the blob store for the management service's usage figures (and at shutdown); 0 = not reported",
  ),
  MEDIA_PURGE_SECRET: secretEnvField().describe(
    "Shared secret of POST /internal/purge (same value as management's); unset = generated in <DATA_DIR>/purge-secret",
  ),
  MEDIA_CACHE_MAX_AGE: int(
    0,
    31_536_000,
    DEFAULT_CACHE_POLICY.maxAgeSeconds,
    "a whole number of seconds from 0 to 31536000",
  ).describe(
    "Cache-Control max-age of media URLs (a signed URL with ?v=<version> is immutable for a year; an unsigned v is not checked, so it is not)",
  ),
  MEDIA_STALE_WHILE_REVALIDATE: int(
    0,
    31_536_000,
    DEFAULT_CACHE_POLICY.staleWhileRevalidateSeconds,
    "a whole number of seconds from 0 to 31536000",
  ).describe("Cache-Control stale-while-revalidate of unversioned media URLs"),
  MEDIA_ISOLATED_RENDER_COST: int(0, 10_000_000, 1000, "a whole number of milliseconds from 0 to 10000000").describe(
    "Renders whose estimated CPU cost (as MEDIA_MAX_WORK_COST counts it) reaches this many ms run in a render process that is killed at the request's deadline, so no encoder keeps burning CPU after the 503; cheaper renders stay in the service process",
  ),
  MEDIA_RENDER_PROCESSES: int(0, 256, 0, "a whole number from 0 (one per CPU core) to 256").describe(
    "Render processes for the renders MEDIA_ISOLATED_RENDER_COST sends out of the service process (started on demand); 0 = one per CPU core",
  ),
  MEDIA_VIPS_CONCURRENCY: int(0, 64, 1, "a whole number from 0 (one per CPU core) to 64").describe(
    "libvips threads per image (sharp.concurrency). 1: requests run in parallel across MEDIA_CONCURRENCY slots instead, which costs less CPU per image than splitting each one",
  ),
  MEDIA_HEAP_GROWING_PERCENT: int(0, 1000, 300, "a whole number from 0 (V8's own heuristics) to 1000").describe(
    "How far V8's old generation may grow past its live size before the next full collection (V8's --heap-growing-percent). Large result buffers make V8 run full collections every few renders under its own heuristics; 300 lets the JS heap (about 25 MB live) reach about 100 MB first",
  ),
  MEDIA_WORKERS: int(0, 256, 0, "a whole number from 0 (one per CPU core) to 256").describe(
    "Pixel worker threads (0 = one per CPU core)",
  ),
  MEDIA_PRESETS_FILE: optionalString.describe(
    "JSON or YAML file of named step chains (presets), used as /preset:name=<name>/<id>.<ext>; validated at start-up",
  ),
  MEDIA_PRESETS_ONLY: z
    .preprocess(blankAsUnset, z.stringbool({ error: "must be true or false" }).default(false))
    .describe(
      "Serve only preset URLs (403 for any other media URL, originals and query strings); needs MEDIA_PRESETS_FILE",
    ),
  MEDIA_REDACT_FACES_ALWAYS: z
    .preprocess(blankAsUnset, z.stringbool({ error: "must be true or false" }).default(false))
    .describe(
      "Privacy: blur every face the detector finds in every rendition of every asset (a redact:faces=true step after the URL's steps). The Redis tier is keyed apart while it is on, so no rendition made without it is served. For some URLs only, put redact:faces=true in a preset instead",
    ),
  MEDIA_AUTO_FORMAT: z
    .preprocess(
      blankAsUnset,
      z
        .string()
        .transform((v) => v.split(",").map((f) => f.trim().toLowerCase()))
        .pipe(
          z
            .array(z.enum(AUTO_FORMATS, { error: `must be a comma-separated list of ${AUTO_FORMATS.join(", ")}` }))
            .refine((list) => new Set(list).size === list.length, "must not repeat a format"),
        )
        .optional(),
    )
    .describe(
      "Format negotiation, e.g. avif,webp (in order of preference): JPEG/PNG originals are served as the first of these the request's Accept names, with Vary: Accept; unset = off (output keeps the stored format)",
    ),
  MEDIA_AVIF_EFFORT: int(0, 9, 0, "a whole number from 0 (fastest) to 9 (smallest)").describe(
    "AVIF encoder effort of every AVIF output: stored AVIF originals, format:type=avif and negotiated AVIF (0 encodes a 3 MP image in a fraction of a second; sharp's default 4 takes several seconds)",
  ),
  MEDIA_AUTO_QUALITY_TARGET: int(1, 100, DEFAULT_AUTO_QUALITY_TARGET, "a whole number from 1 to 100").describe(
    "SSIMULACRA2 score that quality=auto (thumbnail, format) reaches: per image, the lowest quality whose encode scores at least this against the unencoded result, found in at most 4 trial encodes (90 very high quality, 70 high, 50 medium). The default, 70, is above the worst score a fixed quality 75 gives photos, in fewer bytes than quality 75 (bench/results/auto-quality.md)",
  ),
  LOG_LEVEL: z
    .preprocess(blankAsUnset, z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"))
    .describe("pino log level"),
});

export type MediaEnv = z.output<typeof mediaEnvSchema>;

export interface MediaConfig {
  port: number;
  host: string;
  dataDir: string;
  redis: { url: string; keyPrefix: string; timeoutMs: number } | undefined;
  cache: { memoryBytes: number; ttlSeconds: number; maxEntryBytes: number };
  signingKey: string | undefined;
  /** MEDIA_ALLOW_QUERY */
  allowQuery: boolean;
  limitInputPixels: number;
  limits: MediaLimits;
  requestTimeoutMs: number;
  /** MEDIA_SEND_TIMEOUT_MS */
  sendTimeoutMs: number;
  /** MEDIA_MAX_RESULT_BYTES */
  maxResultBytes: number;
  /** Pixels of work all running transformations may hold at once (MEDIA_MAX_INFLIGHT_PIXELS). */
  inflightPixels: number;
  /** Share of inflightPixels one client may hold (MEDIA_CLIENT_SHARE); 1 = no per-client bound. */
  clientShare: number;
  /** MEDIA_TRUSTED_PROXIES; empty = the peer address is the client. */
  trustedProxies: string[];
  /** Transformation slots, resolved (MEDIA_CONCURRENCY 0 = RENDERS_PER_CORE per CPU core). */
  concurrency: number;
  queueLimit: number;
  /** Estimated CPU ms from which a render runs in a killable render process (MEDIA_ISOLATED_RENDER_COST). */
  isolatedRenderCost: number;
  /** Render processes, resolved (MEDIA_RENDER_PROCESSES 0 = one per CPU core). */
  renderProcesses: number;
  /** libvips threads per image; 0 = one per CPU core. */
  vipsConcurrency: number;
  /** V8's --heap-growing-percent for this process; 0 leaves V8's heuristics alone. */
  heapGrowingPercent: number;
  /** 0 = one per CPU core. */
  workers: number;
  logLevel: MediaEnv["LOG_LEVEL"];
  storage: StorageConfig;
  /** From MEDIA_PRESETS_FILE (empty without one). */
  presets: PresetTable;
  /** The presets marked eager, with the URLs each renders after an upload or replace. */
  eagerPresets: EagerPreset[];
  presetsOnly: boolean;
  /** MEDIA_REDACT_FACES_ALWAYS */
  redactFacesAlways: boolean;
  /** MEDIA_AUTO_FORMAT in order of preference; empty = negotiation off. */
  autoFormat: AutoFormat[];
  avifEffort: number;
  /** MEDIA_DECODED_CACHE_BYTES; 0 = no shared decodes. */
  decodedCacheBytes: number;
  /** MEDIA_MAX_ANIMATION_FRAMES */
  maxAnimationFrames: number;
  /** MEDIA_AUTO_QUALITY_TARGET */
  autoQualityTarget: number;
  /** Unset: the embedded shared secret file (resolved by startMedia). */
  purgeSecret: string | undefined;
  /** MEDIA_USAGE_REPORT_INTERVAL_SECONDS in ms; 0 = no usage reports. */
  usageReportIntervalMs: number;
  cachePolicy: CachePolicy;
}

/** The services' one ConfigError (runtime package), under the name media's callers know. */
export { ConfigError as MediaConfigError };

/** Validates the environment; throws ConfigError naming each bad variable. */
export function loadMediaConfig(env: Record<string, string | undefined> = process.env): MediaConfig {
  const e = parseEnv(mediaEnvSchema, env);
  const dataDir = path.resolve(e.DATA_DIR);
  // A StorageConfigError is a ConfigError: it propagates as is.
  const storage: StorageConfig = parseStorageEnv({ ...env, STORAGE_DIR: e.STORAGE_DIR ?? path.join(dataDir, "blobs") });
  const limits: MediaLimits = {
    maxDimension: e.MEDIA_MAX_DIMENSION,
    maxOutputPixels: e.MEDIA_MAX_OUTPUT_PIXELS,
    maxWorkPixels: e.MEDIA_MAX_WORK_PIXELS,
    maxWorkCost: e.MEDIA_MAX_WORK_COST,
    maxMultiplier: e.MEDIA_MAX_MULTIPLIER,
    maxNoiseAmount: e.MEDIA_MAX_NOISE_AMOUNT,
    maxWaveAmplitude: e.MEDIA_MAX_WAVE_AMPLITUDE,
    maxWaveLength: e.MEDIA_MAX_WAVE_LENGTH,
    maxSharpen: e.MEDIA_MAX_SHARPEN,
  };
  let presets: PresetTable = {};
  let eagerPresets: EagerPreset[] = [];
  if (e.MEDIA_PRESETS_FILE) {
    const loaded = loadPresetsFile(e.MEDIA_PRESETS_FILE, limits);
    if (!loaded.ok) {
      throw new ConfigError(loaded.problems.map((message) => ({ variable: "MEDIA_PRESETS_FILE", message })));
    }
    presets = loaded.presets;
    eagerPresets = loaded.eager;
  } else if (e.MEDIA_PRESETS_ONLY) {
    throw new ConfigError([
      { variable: "MEDIA_PRESETS_ONLY", message: "needs MEDIA_PRESETS_FILE (there would be nothing to serve)" },
    ]);
  }
  return {
    port: e.MEDIA_PORT,
    host: e.HOST,
    dataDir,
    redis: e.REDIS_URL
      ? { url: e.REDIS_URL, keyPrefix: e.REDIS_KEY_PREFIX, timeoutMs: e.REDIS_COMMAND_TIMEOUT_MS }
      : undefined,
    cache: {
      memoryBytes: e.CACHE_MEMORY_BYTES,
      ttlSeconds: e.CACHE_TTL_SECONDS,
      maxEntryBytes: e.CACHE_MAX_ENTRY_BYTES,
    },
    signingKey: e.MEDIA_SIGNING_KEY,
    purgeSecret: e.MEDIA_PURGE_SECRET,
    usageReportIntervalMs: e.MEDIA_USAGE_REPORT_INTERVAL_SECONDS * 1000,
    cachePolicy: { maxAgeSeconds: e.MEDIA_CACHE_MAX_AGE, staleWhileRevalidateSeconds: e.MEDIA_STALE_WHILE_REVALIDATE },
    allowQuery: e.MEDIA_ALLOW_QUERY,
    limitInputPixels: e.LIMIT_INPUT_PIXELS,
    limits,
    requestTimeoutMs: e.MEDIA_REQUEST_TIMEOUT_MS,
    sendTimeoutMs: e.MEDIA_SEND_TIMEOUT_MS,
    maxResultBytes: e.MEDIA_MAX_RESULT_BYTES,
    inflightPixels: e.MEDIA_MAX_INFLIGHT_PIXELS,
    clientShare: e.MEDIA_CLIENT_SHARE,
    trustedProxies: e.MEDIA_TRUSTED_PROXIES ?? [],
    concurrency: e.MEDIA_CONCURRENCY || RENDERS_PER_CORE * availableParallelism(),
    queueLimit: e.MEDIA_QUEUE_LIMIT,
    vipsConcurrency: e.MEDIA_VIPS_CONCURRENCY,
    isolatedRenderCost: e.MEDIA_ISOLATED_RENDER_COST,
    renderProcesses: e.MEDIA_RENDER_PROCESSES || availableParallelism(),
    heapGrowingPercent: e.MEDIA_HEAP_GROWING_PERCENT,
    workers: e.MEDIA_WORKERS,
    logLevel: e.LOG_LEVEL,
    storage,
    presets,
    eagerPresets,
    presetsOnly: e.MEDIA_PRESETS_ONLY,
    redactFacesAlways: e.MEDIA_REDACT_FACES_ALWAYS,
    autoFormat: e.MEDIA_AUTO_FORMAT ?? [],
    avifEffort: e.MEDIA_AVIF_EFFORT,
    maxAnimationFrames: e.MEDIA_MAX_ANIMATION_FRAMES,
    autoQualityTarget: e.MEDIA_AUTO_QUALITY_TARGET,
    decodedCacheBytes: e.MEDIA_DECODED_CACHE_BYTES,
  };
}
