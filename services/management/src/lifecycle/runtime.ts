import { PURGE_SECRET_FILE } from "@media-platform/contracts";
import { embeddedSharedSecret } from "@media-platform/storage";
import type { Logger } from "pino";
import type { AppContext } from "../context";
import type { PrismaClient } from "../generated/prisma/client";
import { trashRetentionJob } from "../jobs/trash-retention";
import type { ManagementMetrics } from "../metrics";
import { WebhookDispatcher } from "../webhooks/dispatcher";
import type { LifecycleConfig } from "../config/lifecycle";
import { ChangePropagator } from "./propagation";

/** Embedded mode: both services find the same generated secret in the shared DATA_DIR. */
const mediaSecret = (config: LifecycleConfig, dataDir: string) =>
  config.mediaPurgeSecret ?? embeddedSharedSecret(dataDir, PURGE_SECRET_FILE);

export function createPropagator(
  config: LifecycleConfig,
  dataDir: string,
  log: Logger,
  metrics: Pick<ManagementMetrics, "purgeFailures">,
): ChangePropagator {
  return new ChangePropagator({
    mediaPurgeUrls: config.mediaPurgeUrls,
    // Embedded mode: both services find the same generated secret in the shared DATA_DIR.
    mediaPurgeSecret: mediaSecret(config, dataDir),
    cdnPurgeUrl: config.cdnPurgeUrl,
    log,
    onFailure: (target) => metrics.purgeFailures.inc({ target }),
  });
}

/** The background work every replica runs: trash retention and (with WEBHOOK_URLS) the webhook dispatcher. */
export function startBackgroundJobs(
  ctx: AppContext & { prisma: PrismaClient },
  config: LifecycleConfig,
  dataDir: string,
  metrics: Pick<ManagementMetrics, "webhookDeliveries">,
): { stop(): Promise<void> } {
  const trash = trashRetentionJob(ctx, config.trashRetentionDays, config.trashSweepIntervalMs);
  trash.start();
  let dispatcher: WebhookDispatcher | undefined;
  // The outbox also carries the eager-render requests to media (MEDIA_EAGER_RENDERS).
  const eager = config.mediaEagerUrls.length > 0;
  if ((config.webhookUrls.length > 0 && config.webhookSecret) || eager) {
    dispatcher = new WebhookDispatcher({
      prisma: ctx.prisma,
      log: ctx.log,
      secret: config.webhookSecret,
      internalSecret: eager ? mediaSecret(config, dataDir) : undefined,
      retryMs: config.webhookRetryMs,
      backoffBaseMs: config.webhookBackoffBaseMs,
      pollIntervalMs: config.webhookPollIntervalMs,
      onOutcome: (outcome) => metrics.webhookDeliveries.inc({ outcome }),
    });
    dispatcher.start();
    if (eager && ctx.eagerRenders) ctx.eagerRenders.wake = () => dispatcher?.wake();
  }
  return {
    async stop() {
      await Promise.all([trash.stop(), dispatcher?.stop()]);
    },
  };
}
