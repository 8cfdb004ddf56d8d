import { runService } from "@media-platform/runtime";
import { loadMediaConfig } from "./config";
import { configureHeapGrowth } from "./heap";
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
export { createMediaMetrics, counterHelp, type CounterName, type MediaCounters, type MediaMetrics } from "./metrics";
export { ROUTE_MEDIA } from "./app";
export type { RenderFn } from "./delivery/rendition-service";

if (require.main === module) {
  void runService({
    name: "media",
    loadConfig: loadMediaConfig,
    start: (config, { isDraining }) => {
      // libuv's pool (4 threads unless UV_THREADPOOL_SIZE is set) runs both sharp's pipelines and
      // every fs call. With MEDIA_CONCURRENCY pipelines holding its threads, each blob read would
      // wait for a whole render; room for 4 more threads keeps reads flowing. libuv reads the
      // variable when the pool first starts, which is after this line.
      process.env.UV_THREADPOOL_SIZE ??= String(config.concurrency + 4);
      configureHeapGrowth(config.heapGrowingPercent);
      return startMedia(config, { isDraining });
    },
    // Drain: in-flight requests get MEDIA_REQUEST_TIMEOUT_MS (the longest a transformation
    // takes) plus a second; then Redis, the pixel workers and the face detector close.
    shutdown: (running, config) => ({
      server: running.media.server,
      deadlineMs: config.requestTimeoutMs + 1000,
      logger: running.logger,
      hooks: running.closeHooks,
    }),
    banner: (running) => `media service listening on ${running.url}`,
  });
}
