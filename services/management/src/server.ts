import type { AddressInfo } from "node:net";
import http from "node:http";
import { createBlobStore, type BlobStore } from "@media-platform/storage";
import {
  gracefulShutdown,
  type CloseHook,
  type Logger,
  type Metrics,
  type ShutdownController,
  type ShutdownOptions,
} from "@media-platform/observability";
import { createApp, createManagementMetrics } from "./app";
import { createVerifier, resolveKeySource } from "./auth/keys";
import { loadConfig, type ManagementConfig } from "./config";
import { openDatabase, type Database } from "./db/client";
import { migrate } from "./db/migrate";
import { createLogger } from "./logger";
import { createLifecycleMetrics, createPropagator, startBackgroundJobs } from "./lifecycle/runtime";

export interface RunningManagement {
  /** Base URL, e.g. http://127.0.0.1:3000 */
  url: string;
  port: number;
  /** The listening HTTP server (for gracefulShutdown or tests). */
  server: http.Server;
  log: Logger;
  metrics: Metrics;
  /** What to close once the server has drained, in order (the database, when this service opened it). */
  closeHooks: CloseHook[];
  /**
   * Graceful shutdown on SIGTERM/SIGINT: stop accepting, let in-flight requests finish within
   * `deadlineMs` (default 30 s), /readyz answers 503 `draining` meanwhile, then run `closeHooks`
   * and exit 0 (1 if a hook failed).
   */
  shutdownOnSignals(options?: Omit<ShutdownOptions, "hooks" | "logger">): ShutdownController;
  /** Immediate close (tests): cuts open connections, closes the database. */
  close(): Promise<void>;
}

export interface StartOverrides {
  logger?: Logger;
  blobStore?: BlobStore;
  database?: Database;
}

/**
 * Opens the database (PGlite or Postgres), applies pending migrations, builds the blob store and
 * the token verifier, and listens. `config.port` 0 picks a free port.
 */
export async function startManagement(
  config: ManagementConfig = loadConfig(),
  overrides: StartOverrides = {},
): Promise<RunningManagement> {
  const log = overrides.logger ?? createLogger(config.logLevel);
  const db =
    overrides.database ??
    (await openDatabase(config.databaseUrl ? { databaseUrl: config.databaseUrl } : { pgliteDir: config.pgliteDir }));
  try {
    const conn = await db.migrationConnection();
    const result = await migrate(conn);
    if (result.applied.length > 0) log.info({ applied: result.applied }, "migrations applied");
    const blobStore = overrides.blobStore ?? createBlobStore(config.storage);
    const keySource = resolveKeySource(config);
    const verifier = createVerifier(keySource, {
      issuer: config.auth.issuer,
      audience: config.auth.audience,
      workspaceClaim: config.auth.workspaceClaim,
    });
    const metrics = createManagementMetrics();
    const lifecycleMetrics = createLifecycleMetrics(metrics.registry);
    const propagator = createPropagator(config.lifecycle, config.dataDir, log, lifecycleMetrics);
    let shutdown: ShutdownController | undefined;
    const ctx = {
      metrics,
      isDraining: () => shutdown?.isShuttingDown() ?? false,
      prisma: db.prisma,
      blobStore,
      log,
      verifier,
      mediaPublicUrl: config.mediaPublicUrl,
      maxUploadBytes: config.maxUploadBytes,
      limitInputPixels: config.limitInputPixels,
      duplicateHammingThreshold: config.duplicateHammingThreshold,
      assetVersionsKept: config.lifecycle.assetVersionsKept,
      webhookUrls: config.lifecycle.webhookUrls,
      propagator,
    };
    const app = createApp(ctx);
    const server = http.createServer(app);
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(config.port, config.host, () => {
        server.off("error", reject);
        resolve();
      });
    });
    const { port } = server.address() as AddressInfo;
    const host = config.host === "0.0.0.0" || config.host === "::" ? "localhost" : config.host;
    const url = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
    log.info(
      {
        url,
        database: db.kind,
        storage: config.storage.STORAGE_DRIVER,
        auth: keySource.kind === "secret" && keySource.embedded ? "embedded" : keySource.kind,
      },
      "management API listening",
    );
    let dbClosed: Promise<void> | undefined;
    const closeDatabase = (): Promise<void> => (dbClosed ??= overrides.database ? Promise.resolve() : db.close());
    // Trash retention and webhook delivery run on every replica (row locks keep them exclusive).
    const jobs = startBackgroundJobs({ ...ctx, metrics }, config.lifecycle, lifecycleMetrics);
    const closeHooks: CloseHook[] = [
      { name: "background jobs", close: () => jobs.stop() },
      { name: "database", close: closeDatabase },
    ];
    let closed = false;
    return {
      url,
      port,
      server,
      log,
      metrics,
      closeHooks,
      shutdownOnSignals(options = {}) {
        shutdown ??= gracefulShutdown(server, {
          deadlineMs: 30_000,
          ...options,
          logger: log,
          hooks: closeHooks,
        });
        return shutdown;
      },
      async close() {
        if (closed) return;
        closed = true;
        shutdown?.dispose();
        await jobs.stop();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
        await closeDatabase();
      },
    };
  } catch (err) {
    if (!overrides.database) await db.close().catch(() => undefined);
    throw err;
  }
}
