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
  process.stdout.write(
    `Management API: ${running.url}\n` +
      `Get a token:    pnpm token --workspace <workspace-id>\n` +
      `Then:           curl -H "Authorization: Bearer <token>" ${running.url}/v1/assets\n`,
  );
  const stop = (signal: string) => {
    process.stdout.write(`management: ${signal}, shutting down\n`);
    running.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once("SIGINT", () => stop("SIGINT"));
  process.once("SIGTERM", () => stop("SIGTERM"));
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`management: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
