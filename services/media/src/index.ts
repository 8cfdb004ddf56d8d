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
  const running = await startMedia(config);
  console.log(`media service listening on ${running.url}`);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`media service stopping (${signal})`);
    running.close().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error(err);
        process.exit(1);
      },
    );
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error("media service failed to start:", err);
    process.exit(1);
  });
}
