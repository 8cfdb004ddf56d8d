import "./tracing";
import { stopTracing } from "@media-platform/observability";
import { runService } from "@media-platform/runtime";
import { loadConfig } from "./config";
import { startManagement } from "./server";

export { createApp, type AppDeps } from "./app";
export { createManagementMetrics, type ManagementMetrics } from "./metrics";
export { loadConfig, managementEnvSchema, type ManagementConfig } from "./config";
export { startManagement, type RunningManagement } from "./server";

if (require.main === module) {
  void runService({
    name: "management",
    loadConfig,
    start: (config, { isDraining }) => startManagement(config, { isDraining }),
    // Drain: in-flight requests get 30 s; then the database closes.
    shutdown: (running) => ({
      server: running.server,
      deadlineMs: 30_000,
      logger: running.log,
      hooks: [...running.closeHooks, { name: "tracing", close: stopTracing }],
    }),
    banner: (running) =>
      `Management API: ${running.url}\n` +
      `API reference:  ${running.url}/docs\n` +
      `Media library:  ${running.url}/library\n` +
      // `pnpm token` alone runs pnpm's built-in token command, not this script.
      `Get a token:    pnpm run token --workspace <workspace-id>\n` +
      `Then:           curl -H "Authorization: Bearer <token>" ${running.url}/v1/assets`,
  });
}
