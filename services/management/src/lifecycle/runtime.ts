import { Counter, type Registry } from "prom-client";
import { PURGE_SECRET_FILE } from "@media-platform/contracts";
import { embeddedSharedSecret } from "@media-platform/storage";
import type { Logger } from "pino";
import type { AppContext } from "../context";
import type { PrismaClient } from "../generated/prisma/client";
import { trashRetentionJob } from "../jobs/trash-retention";
import { WebhookDispatcher } from "../webhooks/dispatcher";
import type { LifecycleConfig } from "./config";
import { ChangePropagator } from "./propagation";

export interface LifecycleMetrics {
  webhookDeliveries: Counter<"outcome">;
  purgeFailures: Counter<"target">;
}

export function createLifecycleMetrics(registry: Registry): LifecycleMetrics {
  const webhookDeliveries = new Counter({
    name: "webhook_deliveries_total",
    help: "Webhook delivery attempts by outcome: delivered, failed (retried later), dead (gave up after the retry window)",
    labelNames: ["outcome"] as const,
    registers: [registry],
  });
  const purgeFailures = new Counter({
    name: "cache_purge_failures_total",
    help: "Cache purges (media service, CDN) that failed every retry after a delete or replace",
    labelNames: ["target"] as const,
    registers: [registry],
  });
  // Shown from zero, before the first event.
  for (const outcome of ["delivered", "failed", "dead"]) webhookDeliveries.inc({ outcome }, 0);
  for (const target of ["media", "cdn"]) purgeFailures.inc({ target }, 0);
  return { webhookDeliveries, purgeFailures };
}

export function createPropagator(
  config: LifecycleConfig,
  dataDir: string,
  log: Logger,
  metrics: LifecycleMetrics,
): ChangePropagator {
  return new ChangePropagator({
    mediaPurgeUrls: config.mediaPurgeUrls,
    // Embedded mode: both services find the same generated secret in the shared DATA_DIR.
    mediaPurgeSecret: config.mediaPurgeSecret ?? embeddedSharedSecret(dataDir, PURGE_SECRET_FILE),
    cdnPurgeUrl: config.cdnPurgeUrl,
    log,
    onFailure: (target) => metrics.purgeFailures.inc({ target }),
  });
}

/** The background work every replica runs: trash retention and (with WEBHOOK_URLS) the webhook dispatcher. */
export function startBackgroundJobs(
  ctx: AppContext & { prisma: PrismaClient },
  config: LifecycleConfig,
  metrics: LifecycleMetrics,
): { stop(): Promise<void> } {
  const trash = trashRetentionJob(ctx, config.trashRetentionDays, config.trashSweepIntervalMs);
  trash.start();
  let dispatcher: WebhookDispatcher | undefined;
  if (config.webhookUrls.length > 0 && config.webhookSecret) {
    dispatcher = new WebhookDispatcher({
      prisma: ctx.prisma,
      log: ctx.log,
      secret: config.webhookSecret,
      retryMs: config.webhookRetryMs,
      backoffBaseMs: config.webhookBackoffBaseMs,
      pollIntervalMs: config.webhookPollIntervalMs,
      onOutcome: (outcome) => metrics.webhookDeliveries.inc({ outcome }),
    });
    dispatcher.start();
  }
  return {
    async stop() {
      await Promise.all([trash.stop(), dispatcher?.stop()]);
    },
  };
}
