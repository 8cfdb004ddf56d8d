import http from "node:http";
import { createBlobStore, type BlobStore } from "@media-platform/storage";
import { traceRequests, type CloseHook, type Logger } from "@media-platform/observability";
import { listen } from "@media-platform/runtime";
import { createApp } from "./app";
import { s3ConnectionOf } from "./config/transports";
import { resumableUploads } from "./assets/tus";
import { uploadGateOf } from "./assets/upload-intake";
import { Periodic } from "./jobs/periodic";
import { ApiKeyAuthenticator } from "./auth/api-keys";
import { createRateLimit } from "./auth/rate-limit";
import { ingestUsageReports, refreshUsageGauges } from "./usage/ingest";
import { scheduleOrphanSweep } from "./assets/orphans";
import { createVerifier, resolveKeySource } from "./auth/keys";
import { loadConfig, type ManagementConfig } from "./config";
import { openDatabase, type Database } from "./db/client";
import { migrate } from "./db/migrate";
import { createLogger } from "./logger";
import { findLibraryDir } from "./library/router";
import { trashRetentionJob } from "./jobs/trash-retention";
import { directUploadSweepJob } from "./assets/direct-uploads";
import { createPropagator, mediaPurgeSecret } from "./lifecycle/propagation";
import { createManagementMetrics, type ManagementMetrics } from "./metrics";
import { startDispatcher } from "./webhooks/dispatcher";

export interface RunningManagement {
  /** Base URL, e.g. http://127.0.0.1:3000 */
  url: string;
  port: number;
  /** The listening HTTP server (for gracefulShutdown or tests). */
  server: http.Server;
  log: Logger;
  metrics: ManagementMetrics;
  /** What to close once the server has drained, in order (the database, when this service opened it). */
  closeHooks: CloseHook[];
  /** Immediate close (tests): cuts open connections, closes the database. */
  close(): Promise<void>;
}

export interface StartOverrides {
  logger?: Logger;
  blobStore?: BlobStore;
  database?: Database;
  /** True while shutting down (runService's graceful shutdown): /readyz answers 503 `draining`. */
  isDraining?: () => boolean;
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
    (await openDatabase(
      config.databaseUrl
        ? { databaseUrl: config.databaseUrl, statementCache: config.statementCache }
        : { pgliteDir: config.pgliteDir },
    ));
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
      requireExpiry: config.auth.requireExpiry,
      maxLifetimeSeconds: config.auth.maxTokenLifetimeSeconds,
      clockSkewSeconds: config.auth.clockSkewSeconds,
    });
    const metrics = createManagementMetrics();
    const propagator = createPropagator(config.lifecycle, config.dataDir, log, metrics);
    const apiKeys = new ApiKeyAuthenticator(db.prisma, { cacheMs: config.auth.apiKeyCacheSeconds * 1000, log });
    const ctx = {
      metrics,
      isDraining: overrides.isDraining,
      prisma: db.prisma,
      reads: db.reads,
      blobStore,
      log,
      verifier,
      mediaPublicUrl: config.mediaPublicUrl,
      mediaSigningKey: config.mediaSigningKey,
      mediaUrlLifetimeSeconds: config.mediaUrlLifetimeSeconds,
      maxUploadBytes: config.maxUploadBytes,
      limitInputPixels: config.limitInputPixels,
      keepGps: config.keepGps,
      originalMetadata: config.originalMetadata,
      uploads: config.uploads,
      transports: config.transports,
      s3: s3ConnectionOf(config.storage),
      duplicateHammingThreshold: config.duplicateHammingThreshold,
      assetVersionsKept: config.lifecycle.assetVersionsKept,
      webhookUrls: config.webhooks.urls,
      eagerRenders:
        config.lifecycle.mediaEagerUrls.length > 0
          ? { mediaUrls: config.lifecycle.mediaEagerUrls, wake: (): void => undefined }
          : undefined,
      propagator,
      quotas: config.usage.quotas,
      apiKeys,
    };
    // Resumable uploads: expired ones' bytes and old receipts swept on every replica (idempotent).
    const uploadGate = uploadGateOf(config.uploads);
    const resumable = resumableUploads(ctx, verifier, uploadGate, apiKeys);
    const resumableSweep = new Periodic(
      Math.min(3_600_000, Math.max(60_000, config.transports.tus.expiryMs / 4)),
      () => resumable.sweep(),
      log,
      "resumable-upload-sweep",
    );
    resumableSweep.start();
    const rateLimit =
      config.rateLimit.requestsPerMinute > 0
        ? createRateLimit({
            requestsPerMinute: config.rateLimit.requestsPerMinute,
            redisUrl: config.rateLimit.redisUrl,
            redisKeyPrefix: config.rateLimit.redisKeyPrefix,
            log,
          })
        : undefined;
    // Direct uploads: expired ones aborted on every replica, each row by one (SKIP LOCKED).
    const directSweep = directUploadSweepJob(
      ctx,
      Math.min(3_600_000, Math.max(60_000, config.transports.direct.expiryMs / 4)),
    );
    if (ctx.s3) directSweep.start();
    const embedded = keySource.kind === "secret" && keySource.embedded;
    const app = createApp({
      ...ctx,
      resumable,
      uploadGate,
      libraryDir: findLibraryDir(),
      rateLimit: rateLimit?.middleware,
      oidc: config.auth.oidc ? { ...config.auth.oidc, workspaceClaim: config.auth.workspaceClaim } : undefined,
      // The development sign-in exists only while the embedded secret signs the tokens.
      devSignIn: embedded
        ? {
            secret: keySource.secret,
            workspaceClaim: config.auth.workspaceClaim,
            ttlSeconds: Math.min(3600, config.auth.maxTokenLifetimeSeconds || 3600),
            issuer: config.auth.issuer,
            audience: config.auth.audience,
          }
        : undefined,
    });
    const server = http.createServer(
      {
        // A stalled header is cut after HEADERS_TIMEOUT_MS (Node answers 408); the check runs every
        // second instead of Node's default 30 s. Stalled upload bodies have their own idle timeout.
        headersTimeout: config.headersTimeoutMs,
        requestTimeout: Math.max(300_000, config.headersTimeoutMs + 1),
        connectionsCheckingInterval: 1000,
      },
      traceRequests((req: http.IncomingMessage, res: http.ServerResponse) => app(req, res)),
    );
    const { port, url } = await listen(server, config.port, config.host);
    log.info(
      {
        url,
        database: db.kind,
        storage: config.storage.STORAGE_DRIVER,
        auth: keySource.kind === "secret" && keySource.embedded ? "embedded" : keySource.kind,
      },
      "management API listening",
    );
    // Blobs, temp and spool files a crash left behind: removed at start-up and on a timer. An
    // original it puts back is purged from media caches, like after a replace.
    const stopSweep = scheduleOrphanSweep(
      { prisma: db.prisma, blobStore, log, propagator },
      { ...config.orphanSweep, spoolDir: config.uploads.spoolDir },
    );
    let dbClosed: Promise<void> | undefined;
    const closeDatabase = (): Promise<void> =>
      (dbClosed ??= stopSweep().then(() => (overrides.database ? undefined : db.close())));
    // Trash retention and webhook delivery run on every replica (row locks keep them exclusive).
    const trash = trashRetentionJob(ctx, config.lifecycle.trashRetentionDays, config.lifecycle.trashSweepIntervalMs);
    trash.start();
    // The media service's usage reports, and the opt-in per-workspace gauges.
    const usageIngest = new Periodic(
      config.usage.ingestIntervalMs,
      () => ingestUsageReports({ prisma: db.prisma, blobStore, log }),
      log,
      "usage reports",
    );
    usageIngest.start();
    const usageGauges = config.usage.metrics
      ? new Periodic(60_000, () => refreshUsageGauges(db.prisma, metrics), log, "usage gauges")
      : undefined;
    usageGauges?.start();
    // The outbox also carries the eager-render requests to media (MEDIA_EAGER_RENDERS).
    const eager = config.lifecycle.mediaEagerUrls.length > 0;
    const dispatcher = startDispatcher({
      prisma: db.prisma,
      log,
      webhooks: config.webhooks,
      eagerSecret: eager ? mediaPurgeSecret(config.lifecycle, config.dataDir) : undefined,
      onOutcome: (outcome) => metrics.webhookDeliveries.inc({ outcome }),
    });
    if (dispatcher && ctx.eagerRenders) ctx.eagerRenders.wake = () => dispatcher.wake();
    const stopJobs = async (): Promise<void> => {
      await Promise.all([
        trash.stop(),
        dispatcher?.stop(),
        resumableSweep.stop().then(() => resumable.close()),
        usageIngest.stop(),
        usageGauges?.stop(),
        directSweep.stop(),
      ]);
    };
    const closeHooks: CloseHook[] = [
      { name: "background jobs", close: stopJobs },
      { name: "database", close: closeDatabase },
      ...(rateLimit ? [{ name: "rate limit", close: () => rateLimit.close() }] : []),
    ];
    let closed = false;
    return {
      url,
      port,
      server,
      log,
      metrics,
      closeHooks,
      async close() {
        if (closed) return;
        closed = true;
        await stopJobs();
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
