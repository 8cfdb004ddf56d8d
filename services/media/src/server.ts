import http from "node:http";
import { UsageReporter } from "./usage/usage-reports";
import { Router, type Express } from "express";
import { PURGE_SECRET_FILE } from "@media-platform/contracts";
import { createLogger, traceRequests, type CloseHook, type Logger } from "@media-platform/observability";
import { listen } from "@media-platform/runtime";
import { createBlobStore, embeddedSharedSecret, type BlobStore } from "@media-platform/storage";
import { createDirectEntry, createMediaApp, createMediaRoute, createOperationRoutes } from "./app";
import { MemoryCache } from "./cache/memory-cache";
import { RedisCache } from "./cache/redis-cache";
import { loadMediaConfig, type MediaConfig } from "./config";
import { ClientShare, clientIdentity } from "./delivery/client-share";
import { sendTimeout } from "./delivery/send-timeout";
import { createHotPath } from "./delivery/hot-path";
import { Limiter, WorkGate } from "./delivery/limiter";
import { MediaAdmission } from "./delivery/admission";
import { RenditionService } from "./delivery/rendition-service";
import type { RenderFn } from "./render/pipeline/render";
import { UrlSigner } from "./delivery/signing";
import { createMediaMetrics, type MediaCounters, type MediaMetrics } from "./metrics";
import { FormatNegotiator } from "./negotiation";
import { presetsOnlyGate } from "./presets";
import { AssetPurger } from "./purge/asset-purger";
import { bearerAuthorization, purgeRouter } from "./purge/router";
import { infoRouter } from "./info";
import { EagerRenderer } from "./eager/eager-renders";
import { eagerRouter } from "./eager/router";
import type { DecodedImages } from "./render/pipeline/decoded-images";

/** Behaviour settings of one server: the fields of MediaConfig it uses, so a config can be passed as is. */
export type MediaServerOptions = Pick<
  MediaConfig,
  | "limits"
  | "limitInputPixels"
  | "cache"
  | "redis"
  | "signingKey"
  | "allowQuery"
  | "requestTimeoutMs"
  | "sendTimeoutMs"
  | "maxResultBytes"
  | "inflightPixels"
  | "clientShare"
  | "trustedProxies"
  | "concurrency"
  | "queueLimit"
  | "presets"
  | "eagerPresets"
  | "presetsOnly"
  | "redactFacesAlways"
  | "autoFormat"
  | "avifEffort"
  | "purgeSecret"
  | "cachePolicy"
  | "maxAnimationFrames"
  | "usageReportIntervalMs"
>;

/** The config schema's defaults (an empty environment), so each default is stated once, in config.ts. */
// MediaConfig carries every MediaServerOptions field (plus process-level ones the server ignores).
export const defaultMediaServerOptions: Readonly<MediaServerOptions> = Object.freeze(loadMediaConfig({}));

export interface MediaServerDeps {
  store: BlobStore;
  /** Decode + steps + encode; startMedia passes pipeline/render.ts with the real workers. */
  render: RenderFn;
  /** Default: the shared JSON logger (service "media") at level silent. */
  logger?: Logger;
  /** Default: a fresh registry (createMediaMetrics()). */
  metrics?: MediaMetrics;
  options?: Partial<MediaServerOptions>;
  /** The render's shared decodes (MEDIA_DECODED_CACHE_BYTES), dropped by a purge; none = not shared. */
  decoded?: DecodedImages;
  /** Extra clean-up after the server and Redis closed (worker pools, detectors), in order. */
  closeHooks?: CloseHook[];
  /** True while shutting down (gracefulShutdown's isShuttingDown): /readyz answers 503 `draining`. */
  isDraining?: () => boolean;
}

export interface MediaServer {
  /** node:http server: hot path first, then the Express app. Hand it to supertest as is. */
  server: http.Server;
  app: Express;
  service: RenditionService;
  /** Read view of the media_<name>_total event counters (metrics.counters). */
  counters: MediaCounters;
  /** The service's Prometheus registry and all of its series (GET /metrics; see metrics.ts). */
  metrics: MediaMetrics;
  logger: Logger;
  memory: MemoryCache;
  redis: RedisCache | undefined;
  limiter: Limiter;
  purger: AssetPurger;
  /** Renders eager presets into the cache tiers (POST /internal/eager). */
  eager: EagerRenderer;
  /**
   * What to close once the HTTP server has drained, in order: Redis (when configured), then the
   * deps' closeHooks (pixel workers, face detector). gracefulShutdown runs these.
   */
  closeHooks: CloseHook[];
  /** Listens and resolves with the base URL (http://host:port). */
  listen(port?: number, host?: string): Promise<string>;
  /**
   * Immediate close (tests): stops accepting, gives in-flight responses up to 2 s, cuts open
   * connections, then runs closeHooks. Idempotent. Production uses gracefulShutdown instead.
   */
  close(): Promise<void>;
}

/** Builds the service from its dependencies, without listening (in-process tests use this). */
export function createMediaServer(deps: MediaServerDeps): MediaServer {
  const options: MediaServerOptions = { ...defaultMediaServerOptions, ...deps.options };
  const logger = deps.logger ?? createLogger({ service: "media", level: "silent" });
  const metrics = deps.metrics ?? createMediaMetrics();
  const memory = new MemoryCache({ maxBytes: options.cache.memoryBytes, maxEntryBytes: options.cache.maxEntryBytes });
  const redis = options.redis
    ? new RedisCache({
        url: options.redis.url,
        // Renditions with forced face redaction never share keys with those made without it.
        keyPrefix: options.redactFacesAlways ? `${options.redis.keyPrefix}redact-faces:` : options.redis.keyPrefix,
        timeoutMs: options.redis.timeoutMs,
        ttlSeconds: options.cache.ttlSeconds,
        maxEntryBytes: options.cache.maxEntryBytes,
        logger,
        metrics,
      })
    : undefined;
  const limiter = new Limiter(options.concurrency, options.queueLimit);
  const guardSend = sendTimeout(options.sendTimeoutMs);
  // Media's own series exist from the start (metrics.ts); the dependency series are shown from
  // zero too. The queue depth is read at scrape time.
  metrics.trackQueueDepth(() => limiter.waiting);
  if (deps.decoded) metrics.trackDecodedImages(deps.decoded);
  metrics.dependencyErrors.inc({ dependency: "storage" }, 0);
  if (redis) metrics.dependencyErrors.inc({ dependency: "redis" }, 0);
  const signer = options.signingKey
    ? new UrlSigner(options.signingKey, Date.now, options.cachePolicy.maxAgeSeconds)
    : undefined;
  const negotiator = options.autoFormat.length ? new FormatNegotiator(options.autoFormat) : undefined;
  const purger = new AssetPurger(memory, redis, logger, deps.decoded);
  const service = new RenditionService({
    purger,
    cachePolicy: options.cachePolicy,
    store: deps.store,
    render: deps.render,
    memory,
    redis,
    limiter,
    // Half the transformation slots at most run heavy renders, so the rest stays free for light
    // ones; heavy renders beyond it wait without a slot, counted in the queue.
    gate: new WorkGate(options.inflightPixels, Math.max(1, Math.floor(options.concurrency / 2))),
    clients: options.clientShare < 1 ? new ClientShare(options.inflightPixels, options.clientShare) : undefined,
    metrics,
    logger,
    requestTimeoutMs: options.requestTimeoutMs,
    maxResultBytes: options.maxResultBytes,
    redactFacesAlways: options.redactFacesAlways,
  });
  // The rules a media URL is admitted by: the image URL and its GET /info twin share them.
  const admission = new MediaAdmission({
    presets: options.presets,
    presetsOnly: options.presetsOnly,
    signer,
    allowQuery: options.allowQuery,
    negotiator,
    avifEffort: options.avifEffort,
    limits: options.limits,
  });
  const eager = new EagerRenderer({
    service,
    admission,
    presets: options.eagerPresets,
    purger,
    metrics,
    logger,
  });
  // Renders and bytes sent per asset, for the workspaces' usage (management counts the reports).
  const usage =
    options.usageReportIntervalMs > 0
      ? new UsageReporter(deps.store, { intervalMs: options.usageReportIntervalMs, log: logger })
      : undefined;
  usage?.start();
  const hotPath = createHotPath({ guardSend, memory, signer, metrics, negotiator, usage });
  const route = createMediaRoute({
    service,
    admission,
    negotiator,
    hotPath: redis ? hotPath : undefined,
    clientOf: options.clientShare < 1 ? clientIdentity(options.trustedProxies) : undefined,
    guardSend,
    usage,
  });
  const operations = createOperationRoutes({
    metrics,
    logger,
    readiness: {
      storage: () => deps.store.ping(),
      redis: redis ? () => redis.ping() : undefined,
    },
    isDraining: deps.isDraining,
  });
  const app = createMediaApp({
    route,
    originals: {
      store: deps.store,
      signer,
      metrics,
      gate: options.presetsOnly ? (target) => presetsOnlyGate(target, signer !== undefined) : undefined,
      cachePolicy: options.cachePolicy,
    },
    presets: options.presets,
    presetsOnly: options.presetsOnly,
    limits: options.limits,
    metrics,
    logger,
    operations,
    purgeRouter: options.purgeSecret
      ? Router().use(
          purgeRouter(purger, options.purgeSecret),
          eagerRouter(eager, bearerAuthorization(options.purgeSecret)),
        )
      : undefined,
    infoRouter: infoRouter({
      service,
      admission,
      negotiator,
      cachePolicy: options.cachePolicy,
      plan: {
        limitInputPixels: options.limitInputPixels,
        maxAnimationFrames: options.maxAnimationFrames,
        limits: options.limits,
        avifEffort: options.avifEffort,
      },
    }),
  });
  // The stages of a request: the hot path (memory tier), then the direct entry (media route:
  // admission, Redis tier, flight, answer; probes), then the Express app for everything else.
  // A memory-tier HIT records its server span once answered (recordRawRequest); every other
  // request runs in one (traceRequests). Both are the plain functions when tracing is off.
  const directEntry = traceRequests(createDirectEntry({ route, operations, app, logger, metrics }));
  const server = http.createServer((req, res) => hotPath.handle(req, res, directEntry));

  const closeHooks: CloseHook[] = [
    ...(usage ? [{ name: "usage reports", close: () => usage.stop() }] : []),
    ...(redis ? [{ name: "redis", close: () => redis.close() }] : []),
    ...(deps.closeHooks ?? []),
  ];

  let closing: Promise<void> | undefined;
  return {
    server,
    app,
    service,
    counters: metrics.counters,
    metrics,
    logger,
    closeHooks,
    memory,
    redis,
    limiter,
    purger,
    eager,
    async listen(port = 0, host = "127.0.0.1") {
      // Give Redis one connection attempt so the first requests can use it; never wait longer.
      await redis?.waitReady();
      return (await listen(server, port, host)).url;
    },
    close() {
      closing ??= (async () => {
        if (server.listening) {
          const closed = new Promise<void>((resolve) => server.close(() => resolve()));
          server.closeIdleConnections();
          // In-flight responses get a moment; then every connection is cut.
          const cut = setTimeout(() => server.closeAllConnections(), 2000);
          cut.unref();
          await closed;
          clearTimeout(cut);
        }
        for (const hook of closeHooks) await (typeof hook === "function" ? hook() : hook.close());
      })();
      return closing;
    },
  };
}

export interface RunningMedia {
  /** Base URL, e.g. http://127.0.0.1:3001 */
  url: string;
  media: MediaServer;
  logger: Logger;
  /** Redis, pixel workers, face detector: hand these to gracefulShutdown. */
  closeHooks: CloseHook[];
  /** Immediate close (tests); see MediaServer.close. */
  close(): Promise<void>;
}

/**
 * Starts the media service as configured (default: from process.env) with the real render
 * pipeline, pixel worker threads and face detector. `overrides` replaces single dependencies.
 */
export async function startMedia(
  config: MediaConfig = loadMediaConfig(process.env),
  overrides: { store?: BlobStore; render?: RenderFn; logger?: Logger; isDraining?: () => boolean } = {},
): Promise<RunningMedia> {
  const logger = overrides.logger ?? createLogger({ service: "media", level: config.logLevel });
  const store = overrides.store ?? createBlobStore(config.storage);
  // Loaded here, not at module load, so in-process tests with an injected render never start workers.
  const { render, decoded, closeHooks } = overrides.render
    ? { render: overrides.render, decoded: undefined, closeHooks: [] }
    : (
        require("./render/pipeline/service-render") as typeof import("./render/pipeline/service-render")
      ).createServiceRender(config);
  const media = createMediaServer({
    store,
    render,
    logger,
    // Embedded mode: management finds the same generated secret in the shared DATA_DIR.
    options: { ...config, purgeSecret: config.purgeSecret ?? embeddedSharedSecret(config.dataDir, PURGE_SECRET_FILE) },
    closeHooks,
    isDraining: overrides.isDraining,
    decoded,
  });
  const url = await media.listen(config.port, config.host);
  logger.info(
    {
      url,
      redis: config.redis ? "on" : "off",
      signing: config.signingKey ? "on" : "off",
      storage: config.storage.STORAGE_DRIVER,
    },
    "media service listening",
  );
  return { url, media, logger, closeHooks: media.closeHooks, close: () => media.close() };
}
