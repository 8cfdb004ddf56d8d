import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gracefulShutdown, type CloseHook, type ShutdownLogger } from "@media-platform/observability";
import { ConfigError } from "./env";

/** The base URL to print for a listening address: the wildcard hosts become localhost. */
export function serviceUrl(host: string, port: number): string {
  const shown = host === "0.0.0.0" || host === "::" || host === "" ? "localhost" : host;
  return `http://${shown.includes(":") ? `[${shown}]` : shown}:${port}`;
}

/** Listens (port 0 = any free port) and resolves with the bound port and the base URL. */
export function listen(server: Server, port: number, host: string): Promise<{ port: number; url: string }> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      const bound = (server.address() as AddressInfo).port;
      resolve({ port: bound, url: serviceUrl(host, bound) });
    });
  });
}

export interface ServiceMain<Config, Running> {
  /** Printed before messages on stderr: "media: invalid configuration: ...". */
  name: string;
  /** Validates the environment; a ConfigError stops the process with its message (exit 1). */
  loadConfig: (env: NodeJS.ProcessEnv) => Config;
  /** Builds and listens; `isDraining` turns true when shutdown starts (/readyz answers 503 draining). */
  start: (config: Config, context: { isDraining: () => boolean }) => Promise<Running>;
  /** What graceful shutdown drains and closes. */
  shutdown: (
    running: Running,
    config: Config,
  ) => { server: Server; deadlineMs: number; logger: ShutdownLogger; hooks: CloseHook[] };
  /** Printed on stdout once listening. */
  banner: (running: Running) => string;
}

/**
 * A service's `main`: load the config, start, then on SIGTERM/SIGINT stop accepting, let
 * in-flight requests finish within the deadline (/readyz answers 503 `draining` meanwhile),
 * run the close hooks in order and exit 0 (1 if a hook failed; a second signal exits at once).
 */
export async function runService<Config, Running>(main: ServiceMain<Config, Running>): Promise<void> {
  try {
    let config: Config;
    try {
      config = main.loadConfig(process.env);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      process.stderr.write(`${main.name}: ${err.message}\n`);
      process.exit(1);
    }
    let isShuttingDown = () => false;
    const running = await main.start(config, { isDraining: () => isShuttingDown() });
    const { server, ...options } = main.shutdown(running, config);
    isShuttingDown = gracefulShutdown(server, options).isShuttingDown;
    process.stdout.write(`${main.banner(running)}\n`);
  } catch (err) {
    process.stderr.write(
      `${main.name}: failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  }
}
