import type { Logger } from "@media-platform/observability";
import { StorageUnavailableError } from "@media-platform/storage";
import type { MediaAdmission } from "../delivery/admission";
import { QueueFullError } from "../delivery/limiter";
import { RequestTimeoutError } from "../delivery/errors";
import type { RenditionService } from "../delivery/rendition-service";
import type { MediaMetrics } from "../metrics";
import type { EagerPreset } from "../presets";
import type { AssetPurger } from "../purge/asset-purger";

export interface EagerRenderResult {
  /** The media path rendered (as a public request would spell it). */
  path: string;
  outcome: "done" | "failed";
  /** For a failure: why, in one line. */
  error?: string;
}

export interface EagerRenderSummary {
  results: EagerRenderResult[];
  /** Some render failed for a reason that may pass (storage, overload, timeout): worth a retry. */
  retry: boolean;
}

/** Failures another attempt may not meet: the outbox retries the request when one occurs. */
const isTransient = (err: unknown) =>
  err instanceof StorageUnavailableError || err instanceof QueueFullError || err instanceof RequestTimeoutError;

/**
 * Renders an asset's eager presets (MEDIA_PRESETS_FILE, `eager: true`) into the cache tiers,
 * through the miss path a public request takes (RenditionService.deliver): same cache keys, same
 * single-flight, same limiter and pixel gate, same purge generations. So the first public request
 * of each URL is a HIT, and a render racing a purge never lands in the cache. All URLs of the
 * asset are started at once, so they share one decode of the original (pipeline/decoded-cache.ts).
 */
export class EagerRenderer {
  constructor(
    private readonly deps: {
      service: RenditionService;
      admission: MediaAdmission;
      presets: readonly EagerPreset[];
      purger: AssetPurger;
      metrics: Pick<MediaMetrics, "eagerRender">;
      logger: Logger;
    },
  ) {}

  /** The media paths rendered for an asset (stored format, extension as the asset's URLs use it). */
  pathsFor(assetId: string, extension: string): string[] {
    return this.deps.presets.flatMap((preset) => preset.paths.map((steps) => `/${steps}/${assetId}.${extension}`));
  }

  /**
   * `replaced`: the original changed, so every cached rendition of the asset is purged first (the
   * purge call management makes may come before or after this one: either way the old original's
   * renditions are gone and the new one's are rendered).
   */
  async render(assetId: string, extension: string, replaced = false): Promise<EagerRenderSummary> {
    const { service, admission, purger, metrics, logger } = this.deps;
    if (replaced) await purger.purge([assetId]);
    const targets = this.pathsFor(assetId, extension);
    for (let i = 0; i < targets.length; i++) metrics.eagerRender("queued");
    let retry = false;
    const results = await Promise.all(
      targets.map(async (path): Promise<EagerRenderResult> => {
        try {
          await service.deliver(admission.internal(path), { log: logger });
          metrics.eagerRender("done");
          return { path, outcome: "done" };
        } catch (err) {
          metrics.eagerRender("failed");
          if (isTransient(err)) retry = true;
          logger.warn({ err, path }, "eager render failed");
          return { path, outcome: "failed", error: err instanceof Error ? err.message.split("\n", 1)[0] : String(err) };
        }
      }),
    );
    return { results, retry };
  }
}
