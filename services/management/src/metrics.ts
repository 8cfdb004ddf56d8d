import { Counter, Gauge, Histogram } from "prom-client";
import { createMetrics, type Metrics, type MetricsOptions } from "@media-platform/observability";

/**
 * Every series of the management service, created (and so scraped from zero) with the registry.
 * `http_request_duration_seconds`, `dependency_errors_total` and the process metrics come from
 * @media-platform/observability; the series below are management's own. Each is counted at one site:
 *   upload_size_bytes             assets/routes.ts (create and replace, after the asset is stored)
 *   webhook_deliveries_total      webhooks/dispatcher.ts onOutcome (wired in lifecycle/runtime.ts)
 *   cache_purge_failures_total    lifecycle/propagation.ts onFailure (wired in lifecycle/runtime.ts)
 *   dependency_errors_total       problem.ts error handler (503s caused by the database or storage)
 *   workspace_storage_bytes,      usage/gauges.ts, only with WORKSPACE_USAGE_METRICS=true (a series
 *   workspace_assets              per workspace: opt-in because of the label cardinality)
 */

/** 1 KiB .. 64 MiB, x4 steps. */
export const UPLOAD_BYTES_BUCKETS = [1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];

export interface ManagementMetrics extends Metrics {
  /** `upload_size_bytes` histogram; its `_sum` is the total bytes uploaded. */
  readonly uploadBytes: Histogram;
  observeUpload(bytes: number): void;
  /** `webhook_deliveries_total{outcome}`: delivered, failed (retried later), dead. */
  readonly webhookDeliveries: Counter<"outcome">;
  /** `cache_purge_failures_total{target}`: media, cdn. */
  readonly purgeFailures: Counter<"target">;
  /** `workspace_storage_bytes{workspace}` and `workspace_assets{workspace}` (WORKSPACE_USAGE_METRICS). */
  readonly workspaceStorageBytes: Gauge<"workspace">;
  readonly workspaceAssets: Gauge<"workspace">;
}

/** The management service's registry (label service="management") with all of its series. */
export function createManagementMetrics(options: Partial<Omit<MetricsOptions, "service">> = {}): ManagementMetrics {
  const base = createMetrics({ dependencies: ["database", "storage"], ...options, service: "management" });
  const registers = [base.registry];
  const uploadBytes = new Histogram({
    name: "upload_size_bytes",
    help: "Size of accepted uploads in bytes (_sum = total bytes uploaded)",
    buckets: UPLOAD_BYTES_BUCKETS,
    registers,
  });
  const webhookDeliveries = new Counter({
    name: "webhook_deliveries_total",
    help: "Webhook delivery attempts by outcome: delivered, failed (retried later), dead (gave up after the retry window)",
    labelNames: ["outcome"] as const,
    registers,
  });
  const purgeFailures = new Counter({
    name: "cache_purge_failures_total",
    help: "Cache purges (media service, CDN) that failed every retry after a delete or replace",
    labelNames: ["target"] as const,
    registers,
  });
  const workspaceStorageBytes = new Gauge({
    name: "workspace_storage_bytes",
    help: "Bytes a workspace stores: originals, versions and the trash (WORKSPACE_USAGE_METRICS=true only)",
    labelNames: ["workspace"] as const,
    registers,
  });
  const workspaceAssets = new Gauge({
    name: "workspace_assets",
    help: "Assets of a workspace, the trash included (WORKSPACE_USAGE_METRICS=true only)",
    labelNames: ["workspace"] as const,
    registers,
  });
  // Shown from zero, before the first event.
  for (const outcome of ["delivered", "failed", "dead"]) webhookDeliveries.inc({ outcome }, 0);
  for (const target of ["media", "cdn"]) purgeFailures.inc({ target }, 0);
  return {
    ...base,
    uploadBytes,
    observeUpload: (bytes) => uploadBytes.observe(bytes),
    webhookDeliveries,
    purgeFailures,
    workspaceStorageBytes,
    workspaceAssets,
  };
}
