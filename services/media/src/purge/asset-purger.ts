import type { Logger } from "@media-platform/observability";
import type { MemoryCache } from "../cache/memory-cache";
import type { RedisCache } from "../cache/redis-cache";
import type { DecodedImages } from "../render/pipeline/decoded-images";

/**
 * Forgets every cached rendition of an asset whose original changed (deleted or replaced), on
 * every tier and every replica (README, "Change propagation"):
 *  - memory tier: entries carry their asset id; a purge deletes them from the LRU, so the hot
 *    path needs no extra check (a purged URL simply misses);
 *  - in-flight renders: a per-asset local generation is part of the single-flight key and is
 *    checked before a result enters the memory tier, so a render that started before the purge
 *    neither serves later requests nor lands in the cache;
 *  - renditions that show another asset (overlays) carry its id too (entry.dependsOn, and in
 *    Redis the dependency's key set), so a purge of that asset reaches them on every tier;
 *  - Redis tier: a per-asset generation (INCR) is part of every Redis key, so old entries can no
 *    longer be found (and are deleted through the asset's key set); other replicas hear the purge
 *    on a pub/sub channel. Each process keeps the generations it has read (RedisCache.lookup) and
 *    forgets an asset's on every purge it hears of. A replica whose subscription dropped clears its
 *    whole memory tier and every kept generation on reconnect, since it may have missed purges.
 * Without Redis (embedded mode, or several replicas without Redis) each process must receive the
 * purge call itself (management's MEDIA_PURGE_URLS).
 */
export class AssetPurger {
  private readonly generations = new Map<string, number>();
  /** Bumped when the memory tier is cleared as a whole (a missed pub/sub window). */
  private epoch = 0;

  constructor(
    private readonly memory: MemoryCache,
    private readonly redis: RedisCache | undefined,
    private readonly logger: Logger,
    /** Decoded originals shared between renditions (pipeline/decoded-images.ts): a purge drops the asset's. */
    private readonly decoded?: DecodedImages,
  ) {
    redis?.onPurge(
      (assetIds) => this.purgeLocal(assetIds),
      () => {
        this.epoch++;
        this.memory.clear();
        this.decoded?.clear();
        this.redis?.forgetGenerations();
        this.logger.warn("purge subscription re-established: memory cache cleared (purges may have been missed)");
      },
    );
  }

  /** Token that changes whenever `assetId` is purged in this process (single-flight key, store check). */
  localGeneration(assetId: string): string {
    return `${this.epoch}.${this.generations.get(assetId) ?? 0}`;
  }

  /**
   * The asset's current generation as an edge cache should key on it (GET /internal/generation):
   * the shared Redis generation, else (no Redis, or Redis down) this process's own.
   */
  async edgeGeneration(assetId: string): Promise<string> {
    const shared = await this.redis?.generation(assetId);
    return shared ?? `l${this.localGeneration(assetId)}`;
  }

  /** Purge requested through the API: Redis (shared generation + other replicas), then this process. */
  async purge(assetIds: readonly string[]): Promise<void> {
    this.purgeLocal(assetIds);
    await this.redis?.purgeAssets(assetIds);
  }

  purgeLocal(assetIds: readonly string[]): void {
    this.redis?.forgetGenerations(assetIds);
    const ids = new Set(assetIds);
    for (const id of ids) this.generations.set(id, (this.generations.get(id) ?? 0) + 1);
    this.memory.deleteWhere(
      (entry) => (entry.assetId !== undefined && ids.has(entry.assetId)) || entry.dependsOn.some((id) => ids.has(id)),
    );
    this.decoded?.drop(ids);
  }
}
