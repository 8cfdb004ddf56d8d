import { ConfigError, loadConfig } from "./config";
import { startManagement } from "./server";

export { createApp, type AppDeps } from "./app";
export { loadConfig, managementEnvSchema, type ManagementConfig } from "./config";
export { startManagement, type RunningManagement } from "./server";

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`management: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  const running = await startManagement(config);
  // SIGTERM/SIGINT: stop accepting, finish in-flight requests (30 s at most), close the database, exit 0.
  running.shutdownOnSignals({ deadlineMs: 30_000 });
  process.stdout.write(
    `Management API: ${running.url}\n` +
      `API reference:  ${running.url}/docs\n` +
      // `pnpm token` alone runs pnpm's built-in token command, not this script.
      `Get a token:    pnpm run token --workspace <workspace-id>\n` +
      `Then:           curl -H "Authorization: Bearer <token>" ${running.url}/v1/assets\n`,
  );
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`management: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
