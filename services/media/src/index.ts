import { gracefulShutdown, type ShutdownController } from "@media-platform/observability";
import { loadMediaConfig, MediaConfigError } from "./config";
import { startMedia } from "./server";

export { mediaEnvSchema, loadMediaConfig, MediaConfigError, type MediaConfig, type MediaEnv } from "./config";
export {
  startMedia,
  createMediaServer,
  defaultMediaServerOptions,
  type MediaServer,
  type MediaServerDeps,
  type MediaServerOptions,
  type RunningMedia,
} from "./server";
export { signMediaPath, signedMediaUrl } from "./delivery/signing";
export { MediaCounters, counterHelp, type CounterName } from "./delivery/counters";
export { ROUTE_MEDIA } from "./app";
export type { RenderFn } from "./delivery/rendition-service";

async function main(): Promise<void> {
  let config;
  try {
    config = loadMediaConfig(process.env);
  } catch (err) {
    if (err instanceof MediaConfigError) {
      console.error(err.message);
      process.exit(1);
    }
    throw err;
  }
  // libuv's pool (4 threads unless UV_THREADPOOL_SIZE is set) runs both sharp's pipelines and every
  // fs call. With MEDIA_CONCURRENCY pipelines holding its threads, each blob read step (open, stat,
  // read, close) would wait for a whole render to finish; room for 4 more threads keeps reads
  // flowing. Read by libuv when the pool first starts, which is after this line.
  process.env.UV_THREADPOOL_SIZE ??= String(config.concurrency + 4);
  const draining: { controller?: ShutdownController } = {};
  const running = await startMedia(config, { isDraining: () => draining.controller?.isShuttingDown() ?? false });
  // SIGTERM/SIGINT: stop accepting, /readyz answers 503 draining, let in-flight requests finish
  // (a transformation takes at most MEDIA_REQUEST_TIMEOUT_MS, so that plus a second), then close
  // Redis, the pixel workers and the face detector, and exit 0 (1 if one of them failed).
  draining.controller = gracefulShutdown(running.media.server, {
    deadlineMs: config.requestTimeoutMs + 1000,
    logger: running.logger,
    hooks: running.closeHooks,
  });
  console.log(`media service listening on ${running.url}`);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error("media service failed to start:", err);
    process.exit(1);
  });
}
