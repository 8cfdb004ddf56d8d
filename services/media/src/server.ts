import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Express } from "express";
import pino, { type Logger } from "pino";
import { defaultMediaLimits, type MediaLimits } from "@media-platform/contracts";
import { createBlobStore, type BlobStore } from "@media-platform/storage";
import { createMediaApp } from "./app";
import { MemoryCache } from "./cache/memory-cache";
import { RedisCache } from "./cache/redis-cache";
import { loadMediaConfig, type MediaConfig } from "./config";
import { MediaCounters } from "./delivery/counters";
import { createHotPath } from "./delivery/hot-path";
import { Limiter } from "./delivery/limiter";
import { RenditionService, type RenderFn } from "./delivery/rendition-service";
import { UrlSigner } from "./delivery/signing";

/** Behaviour settings of one server; MediaConfig has the same fields, so a config can be passed as is. */
export interface MediaServerOptions {
  limits: MediaLimits;
  limitInputPixels: number;
  cache: { memoryBytes: number; ttlSeconds: number; maxEntryBytes: number };
  /** Unset: in-process cache only. */
  redis: { url: string; keyPrefix: string; timeoutMs: number } | undefined;
  signingKey: string | undefined;
  requestTimeoutMs: number;
  concurrency: number;
  queueLimit: number;
}

export const defaultMediaServerOptions: Readonly<MediaServerOptions> = Object.freeze({
  limits: defaultMediaLimits,
  limitInputPixels: 100_000_000,
  cache: { memoryBytes: 256 * 1024 * 1024, ttlSeconds: 7 * 86400, maxEntryBytes: 10 * 1024 * 1024 },
  redis: undefined,
  signingKey: undefined,
  requestTimeoutMs: 30_000,
  concurrency: 4,
  queueLimit: 64,
});

export interface MediaServerDeps {
  store: BlobStore;
  /** Decode + steps + encode; startMedia passes pipeline/render.ts with the real workers. */
  render: RenderFn;
  logger?: Logger;
  options?: Partial<MediaServerOptions>;
  /** Extra clean-up run by close() after the server and Redis (worker pools, detectors). */
  onClose?: () => Promise<void>;
}

export interface MediaServer {
  /** node:http server: hot path first, then the Express app. Hand it to supertest as is. */
  server: http.Server;
  app: Express;
  service: RenditionService;
  counters: MediaCounters;
  memory: MemoryCache;
  redis: RedisCache | undefined;
  limiter: Limiter;
  /** Listens and resolves with the base URL (http://host:port). */
  listen(port?: number, host?: string): Promise<string>;
  /** Stops accepting, ends open connections, disconnects Redis, runs onClose. Idempotent. */
  close(): Promise<void>;
}

/** Builds the service from its dependencies, without listening (in-process tests use this). */
export function createMediaServer(deps: MediaServerDeps): MediaServer {
  const options: MediaServerOptions = { ...defaultMediaServerOptions, ...deps.options };
  const logger = deps.logger ?? pino({ level: "silent" });
  const counters = new MediaCounters();
  const memory = new MemoryCache({ maxBytes: options.cache.memoryBytes, maxEntryBytes: options.cache.maxEntryBytes });
  const redis = options.redis
    ? new RedisCache({
        url: options.redis.url,
        keyPrefix: options.redis.keyPrefix,
        timeoutMs: options.redis.timeoutMs,
        ttlSeconds: options.cache.ttlSeconds,
        maxEntryBytes: options.cache.maxEntryBytes,
        logger,
        counters,
      })
    : undefined;
  const limiter = new Limiter(options.concurrency, options.queueLimit);
  const signer = options.signingKey ? new UrlSigner(options.signingKey) : undefined;
  const service = new RenditionService({
    store: deps.store,
    render: deps.render,
    memory,
    redis,
    limiter,
    counters,
    logger,
    requestTimeoutMs: options.requestTimeoutMs,
    maxEntryBytes: options.cache.maxEntryBytes,
  });
  const app = createMediaApp({
    service,
    signer,
    limits: options.limits,
    limitInputPixels: options.limitInputPixels,
    counters,
    logger,
  });
  const hotPath = createHotPath({ memory, signer, counters });
  const server = http.createServer((req, res) => {
    if (!hotPath(req, res)) app(req, res);
  });

  let closing: Promise<void> | undefined;
  return {
    server,
    app,
    service,
    counters,
    memory,
    redis,
    limiter,
    async listen(port = 0, host = "127.0.0.1") {
      // Give Redis one connection attempt so the first requests can use it; never wait longer.
      await redis?.waitReady();
      return new Promise<string>((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => {
          server.off("error", reject);
          const address = server.address() as AddressInfo;
          resolve(`http://${urlHost(host)}:${address.port}`);
        });
      });
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
        await redis?.close();
        await deps.onClose?.();
      })();
      return closing;
    },
  };
}

function urlHost(host: string): string {
  if (host === "0.0.0.0" || host === "::" || host === "") return "127.0.0.1";
  return host.includes(":") ? `[${host}]` : host;
}

export interface RunningMedia {
  /** Base URL, e.g. http://127.0.0.1:3001 */
  url: string;
  media: MediaServer;
  close(): Promise<void>;
}

/**
 * Starts the media service as configured (default: from process.env) with the real render
 * pipeline, pixel worker threads and face detector. `overrides` replaces single dependencies.
 */
export async function startMedia(
  config: MediaConfig = loadMediaConfig(process.env),
  overrides: { store?: BlobStore; render?: RenderFn; logger?: Logger } = {},
): Promise<RunningMedia> {
  const logger = overrides.logger ?? pino({ level: config.logLevel, base: { service: "media" } });
  const store = overrides.store ?? createBlobStore(config.storage);
  let onClose: (() => Promise<void>) | undefined;
  let render = overrides.render;
  if (!render) {
    // Loaded here, not at module load, so in-process tests with an injected render never start workers.
    const pipeline = require("./pipeline/render") as typeof import("./pipeline/render");
    const { createPixelWorkers } = require("./pixels/pool") as typeof import("./pixels/pool");
    const { createFaceDetector } = require("./faces/index") as typeof import("./faces/index");
    pipeline.configureSharp();
    const pixels = createPixelWorkers({
      size: config.workers > 0 ? config.workers : undefined,
      taskTimeoutMs: config.requestTimeoutMs,
    });
    const faces = createFaceDetector();
    const renderDeps = { pixels, faces, limits: config.limits, limitInputPixels: config.limitInputPixels };
    render = (input, options) => pipeline.render(input, renderDeps, options);
    onClose = async () => {
      await Promise.allSettled([pixels.close(), faces.close()]);
    };
  }
  const media = createMediaServer({ store, render, logger, options: config, onClose });
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
  return { url, media, close: () => media.close() };
}
