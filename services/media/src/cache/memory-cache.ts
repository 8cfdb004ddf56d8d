import { LRUCache } from "lru-cache";
import type { CacheEntry } from "./entry";

/** Rough per-entry bookkeeping overhead (headers objects, map node) added to the byte size. */
const ENTRY_OVERHEAD = 512;

/**
 * The in-process tier: an LRU bounded by a byte budget (CACHE_MEMORY_BYTES). Entries above
 * `maxEntryBytes` are not kept. A budget of 0 disables the tier.
 */
export class MemoryCache {
  private readonly lru: LRUCache<string, CacheEntry> | undefined;
  private readonly maxEntryBytes: number;

  constructor(options: { maxBytes: number; maxEntryBytes: number }) {
    this.maxEntryBytes = options.maxEntryBytes;
    if (options.maxBytes > 0) {
      this.lru = new LRUCache<string, CacheEntry>({
        maxSize: options.maxBytes,
        // An entry larger than the whole budget is refused by lru-cache itself.
        sizeCalculation: (entry, key) => entry.body.length + key.length + ENTRY_OVERHEAD,
      });
    }
  }

  get(key: string): CacheEntry | undefined {
    return this.lru?.get(key);
  }

  /** Keeps the entry unless its body is above maxEntryBytes (CACHE_MAX_ENTRY_BYTES). */
  set(key: string, entry: CacheEntry): void {
    if (entry.body.length > this.maxEntryBytes) return;
    this.lru?.set(key, entry);
  }

  clear(): void {
    this.lru?.clear();
  }

  get size(): number {
    return this.lru?.size ?? 0;
  }

  get bytes(): number {
    return this.lru?.calculatedSize ?? 0;
  }
}
