import type { RawImage } from "../types";

/** Bytes reserved per pixel before a decode ends (RGBA, the most toRaw gives): the budget holds even then. */
const RESERVED_BYTES_PER_PIXEL = 4;

interface Entry {
  key: string;
  width: number;
  height: number;
  /** Reserved while decoding, the pixels' own size after. */
  bytes: number;
  decoding: Promise<RawImage>;
  /** Renditions using it now. */
  users: number;
  /** Still the entry new renditions of its key join (not replaced by a larger one, not purged). */
  current: boolean;
  idle?: NodeJS.Timeout;
  /** Order of last use, for eviction of idle entries. */
  used: number;
}

/**
 * Decoded originals shared between renditions of the same original (pipeline/shared-decode.ts):
 * a burst of srcset widths decodes the original once, at the largest scale any of them needs,
 * and each rendition is resized from those pixels. Keyed by `<assetId>|<local generation>`, so a
 * purge both drops the asset's images (drop) and keeps later renders from joining an old one.
 *
 *  - single-flight: renditions of a key that arrive while it is decoding wait for that decode;
 *  - budget (MEDIA_DECODED_CACHE_BYTES): pixels held, decoding or decoded, never exceed it. A
 *    decode is reserved at 4 bytes per pixel before it starts; idle images are evicted first
 *    (least recently used); when the budget cannot make room the rendition decodes on its own;
 *  - lifetime: an image is released once no rendition uses it and `idleMs` passed without a new
 *    one (bursts whose renditions wait in the limiter still find it), or at once when replaced
 *    by a larger decode of its key or purged.
 */
export class DecodedImages {
  private readonly entries = new Map<string, Entry>();
  /** Every entry holding bytes: current ones and replaced/purged ones still in use. */
  private readonly holding = new Set<Entry>();
  private held = 0;
  private peak = 0;
  private clock = 0;
  /** Renditions that used a decode started by another one (tests, bench). */
  shared = 0;
  /** Decodes started. */
  decodes = 0;

  constructor(
    readonly budgetBytes: number,
    private readonly idleMs = 1000,
  ) {}

  /** Bytes held now, and the most ever held at once (never above budgetBytes). */
  get heldBytes(): number {
    return this.held;
  }
  get peakBytes(): number {
    return this.peak;
  }

  /** Whether an image of this asset is held (any generation). */
  holds(assetId: string): boolean {
    for (const entry of this.holding) if (entry.key.startsWith(`${assetId}|`)) return true;
    return false;
  }

  /**
   * Runs `use` with the decoded image of `key` at least `need` in size: the one held or decoding,
   * else a new decode of `size` pixels (`decode`). Undefined when the budget has no room: the
   * caller then renders on its own.
   */
  async with<T>(
    key: string,
    need: { width: number; height: number },
    size: { width: number; height: number },
    decode: () => Promise<RawImage>,
    use: (image: RawImage) => Promise<T>,
  ): Promise<T | undefined> {
    let entry = this.entries.get(key);
    if (entry && entry.width >= need.width && entry.height >= need.height) {
      this.shared++;
    } else {
      entry = this.start(key, size, decode);
      if (!entry) return undefined;
    }
    entry.users++;
    entry.used = ++this.clock;
    if (entry.idle) clearTimeout(entry.idle);
    entry.idle = undefined;
    try {
      return await use(await entry.decoding);
    } finally {
      this.leave(entry);
    }
  }

  /** Drops the images of these assets (a purge): released at once, or when their last user is done. */
  drop(assetIds: Iterable<string>): void {
    const ids = new Set(assetIds);
    for (const [key, entry] of this.entries) {
      if (!ids.has(key.slice(0, key.indexOf("|")))) continue;
      this.retire(entry);
    }
  }

  /** Drops every image (the memory tier was cleared as a whole). */
  clear(): void {
    for (const entry of [...this.entries.values()]) this.retire(entry);
  }

  private start(
    key: string,
    size: { width: number; height: number },
    decode: () => Promise<RawImage>,
  ): Entry | undefined {
    const bytes = size.width * size.height * RESERVED_BYTES_PER_PIXEL;
    if (!this.makeRoom(bytes)) return undefined;
    const previous = this.entries.get(key);
    const entry: Entry = {
      key,
      width: size.width,
      height: size.height,
      bytes,
      decoding: undefined as unknown as Promise<RawImage>,
      users: 0,
      current: true,
      used: ++this.clock,
    };
    this.hold(entry);
    this.entries.set(key, entry);
    if (previous) this.retire(previous);
    this.decodes++;
    entry.decoding = decode().then(
      (image) => {
        // The reservation shrinks to the pixels' size (3 bytes per pixel without alpha).
        if (this.holding.has(entry)) this.held -= entry.bytes - image.data.length;
        entry.bytes = image.data.length;
        return image;
      },
      (err: unknown) => {
        // A failed decode is not kept: the next rendition tries again (its error is each waiter's).
        this.retire(entry);
        throw err;
      },
    );
    return entry;
  }

  private makeRoom(bytes: number): boolean {
    if (bytes > this.budgetBytes) return false;
    if (this.held + bytes <= this.budgetBytes) return true;
    const idle = [...this.holding].filter((e) => e.users === 0).sort((a, b) => a.used - b.used);
    for (const entry of idle) {
      this.retire(entry);
      if (this.held + bytes <= this.budgetBytes) return true;
    }
    return false;
  }

  private hold(entry: Entry): void {
    this.holding.add(entry);
    this.held += entry.bytes;
    this.peak = Math.max(this.peak, this.held);
  }

  /** No longer joined by new renditions; freed once unused. */
  private retire(entry: Entry): void {
    if (entry.current) {
      entry.current = false;
      if (this.entries.get(entry.key) === entry) this.entries.delete(entry.key);
    }
    if (entry.users === 0) this.free(entry);
  }

  private leave(entry: Entry): void {
    entry.users--;
    if (entry.users > 0) return;
    if (!entry.current) {
      this.free(entry);
      return;
    }
    entry.idle = setTimeout(() => this.retire(entry), this.idleMs);
    entry.idle.unref();
  }

  private free(entry: Entry): void {
    if (entry.idle) clearTimeout(entry.idle);
    entry.idle = undefined;
    if (!this.holding.delete(entry)) return;
    this.held -= entry.bytes;
  }
}
