import "./tracing";
import { stopTracing } from "@media-platform/observability";
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
export { MEDIA_PROBLEMS } from "./problem";
export type { RenderFn } from "./render/pipeline/render";

if (require.main === module) {
  void runService({
    name: "media",
    loadConfig: loadMediaConfig,
    start: (config, { isDraining }) => {
      // libuv's pool keeps its default of 4 threads: 12 (slots + 4) measured 0.90-1.05x of 4 in
      // MISS req/s. UV_THREADPOOL_SIZE only counts set before start: loading sharp starts the pool.
      configureHeapGrowth(config.heapGrowingPercent);
      return startMedia(config, { isDraining });
    },
    // Drain: in-flight requests get MEDIA_REQUEST_TIMEOUT_MS (the longest a transformation
    // takes) plus a second; then Redis, the pixel workers and the face detector close.
    shutdown: (running, config) => ({
      server: running.media.server,
      deadlineMs: config.requestTimeoutMs + 1000,
      logger: running.logger,
      hooks: [...running.closeHooks, { name: "tracing", close: stopTracing }],
    }),
    banner: (running) => `media service listening on ${running.url}`,
  });
}
