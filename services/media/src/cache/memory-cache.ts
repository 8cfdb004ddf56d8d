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

  delete(key: string): void {
    this.lru?.delete(key);
  }

  /** Deletes every entry `match` selects (a purge: rare, so a scan of the LRU is fine). */
  deleteWhere(match: (entry: CacheEntry) => boolean): number {
    if (!this.lru) return 0;
    const keys: string[] = [];
    for (const [key, entry] of this.lru.entries()) if (match(entry)) keys.push(key);
    for (const key of keys) this.lru.delete(key);
    return keys.length;
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
