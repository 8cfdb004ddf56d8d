import { setTimeout as sleep } from "node:timers/promises";
import { PURGE_PATH, MAX_PURGE_ASSETS, PURGE_SECRET_FILE } from "@media-platform/contracts";
import { embeddedSharedSecret } from "@media-platform/storage";
import type { Logger } from "pino";
import type { LifecycleConfig } from "../config/lifecycle";
import type { ChangePropagation } from "../context";
import type { ManagementMetrics } from "../metrics";

export interface PropagationOptions {
  /** Internal base URLs of the media service (MEDIA_PURGE_URLS, default MEDIA_PUBLIC_URL). */
  mediaPurgeUrls: string[];
  mediaPurgeSecret: string;
  /** CDN_PURGE_URL: `{assetId}` is replaced; the body is {"assetId": ...}. */
  cdnPurgeUrl: string | undefined;
  log: Logger;
  /**
   * Attempts per call (default 4, waiting 100, 200 and 400 ms between them; a 4xx other than 408
   * and 429 is not retried) and per-attempt timeout.
   */
  attempts?: number;
  timeoutMs?: number;
  /** Counts purge calls that failed every attempt (`lifecycle_purge_failures_total{target}`). */
  onFailure?: (target: "media" | "cdn") => void;
}

/**
 * Tells every cache tier that the originals of some assets changed (deleted or replaced):
 *  - the media service (each MEDIA_PURGE_URLS entry): POST /internal/purge with the shared secret.
 *    It drops the asset's renditions from its memory tier and, with Redis, bumps the asset's
 *    generation (part of every Redis cache key) and tells the other replicas over pub/sub;
 *  - the CDN (CDN_PURGE_URL), once per asset.
 * The caller awaits it before answering, so once a DELETE or PUT returns, media URLs already tell
 * the new truth. Each call is retried with backoff (isRetryable); a target still failing is logged and counted,
 * never turned into an error of the request (the change itself is committed).
 */
export class ChangePropagator implements ChangePropagation {
  private readonly attempts: number;
  private readonly timeoutMs: number;

  constructor(private readonly options: PropagationOptions) {
    this.attempts = options.attempts ?? 4;
    this.timeoutMs = options.timeoutMs ?? 2000;
  }

  async assetsChanged(assetIds: readonly string[]): Promise<void> {
    if (assetIds.length === 0) return;
    const calls: Promise<void>[] = [];
    for (let i = 0; i < assetIds.length; i += MAX_PURGE_ASSETS) {
      const chunk = assetIds.slice(i, i + MAX_PURGE_ASSETS);
      for (const base of this.options.mediaPurgeUrls) {
        calls.push(
          this.call("media", `${base}${PURGE_PATH}`, JSON.stringify({ assetIds: chunk }), {
            Authorization: `Bearer ${this.options.mediaPurgeSecret}`,
          }),
        );
      }
    }
    const cdn = this.options.cdnPurgeUrl;
    if (cdn) {
      for (const id of assetIds) {
        calls.push(this.call("cdn", cdn.replaceAll("{assetId}", id), JSON.stringify({ assetId: id }), {}));
      }
    }
    await Promise.all(calls);
  }

  private async call(target: "media" | "cdn", url: string, body: string, headers: Record<string, string>) {
    let lastError = "";
    let retried = true;
    for (let attempt = 1; attempt <= this.attempts; attempt++) {
      if (attempt > 1) await sleep(100 * 2 ** (attempt - 2));
      try {
        const res = await fetch(url, {
          method: "POST",
          headers: { "Content-Type": "application/json", ...headers },
          body,
          signal: AbortSignal.timeout(this.timeoutMs),
        });
        await res.arrayBuffer().catch(() => undefined);
        if (res.ok) return;
        lastError = `HTTP ${res.status}`;
        if (!isRetryable(res.status)) {
          retried = false;
          break;
        }
      } catch (err) {
        lastError = err instanceof Error ? err.message : String(err);
      }
    }
    this.options.onFailure?.(target);
    // The URL only (never the secret, which travels in a header).
    this.options.log.error(
      { target, url, error: lastError, retried },
      retried
        ? "cache purge failed; cached renditions may be stale"
        : "cache purge refused, not retried (check the purge URL and what it accepts); cached renditions may be stale",
    );
  }
}

/**
 * A purge answer worth another attempt: a server error, 408 (timeout) or 429 (throttled). Any
 * other 4xx (a refused secret, a wrong path or method, a bad request) answers the same next time.
 */
export const isRetryable = (status: number): boolean => status >= 500 || status === 408 || status === 429;

/** MEDIA_PURGE_SECRET, or in embedded mode the generated one both services find in the shared DATA_DIR. */
export const mediaPurgeSecret = (config: LifecycleConfig, dataDir: string): string =>
  config.mediaPurgeSecret ?? embeddedSharedSecret(dataDir, PURGE_SECRET_FILE);

export function createPropagator(
  config: LifecycleConfig,
  dataDir: string,
  log: Logger,
  metrics: Pick<ManagementMetrics, "purgeFailures">,
): ChangePropagator {
  return new ChangePropagator({
    mediaPurgeUrls: config.mediaPurgeUrls,
    mediaPurgeSecret: mediaPurgeSecret(config, dataDir),
    cdnPurgeUrl: config.cdnPurgeUrl,
    log,
    onFailure: (target) => metrics.purgeFailures.inc({ target }),
  });
}
