import sharp from "sharp";

/** Header reads try prefixes of these sizes before reading the whole original. */
const HEADER_PREFIXES = [64 * 1024, 512 * 1024, 4 * 1024 * 1024];

/**
 * Originals up to this size are read whole before the header is parsed, when the store offers
 * positional reads (a local disk): one read instead of two, and reading a few megabytes from a
 * local file is no work worth refusing. Larger ones are read header first, like streams.
 */
const WHOLE_READ_MAX_BYTES = 4 * 1024 * 1024;

/**
 * An original the store can read into a buffer of ours (BlobObject.read, the filesystem driver),
 * `size` bytes in all.
 */
export interface OriginalReader {
  size: number;
  read(target: Buffer, position: number): Promise<number>;
}

/**
 * Buffers for originals read through an OriginalReader, reused across renders. A fresh
 * multi-megabyte buffer per MISS is external memory V8 only reclaims with a full mark-compact,
 * which it then ran every few renders; a reused buffer costs no allocation and no collection.
 * A buffer returns here only once libvips is done with it (OriginalSource.close, after the
 * render), so no two renders ever share one. At most `maxPooledBytes` wait here between renders.
 */
export class OriginalBufferPool {
  private readonly free: Buffer[] = [];
  private pooledBytes = 0;

  constructor(
    private readonly maxPooledBytes: number,
    /** Larger originals get a buffer of their own, never pooled. */
    private readonly maxBufferBytes: number,
  ) {}

  acquire(size: number): Buffer {
    // The smallest free buffer that fits.
    let best = -1;
    for (let i = 0; i < this.free.length; i++) {
      const length = this.free[i]!.length;
      if (length >= size && (best < 0 || length < this.free[best]!.length)) best = i;
    }
    if (best >= 0) {
      const [buffer] = this.free.splice(best, 1);
      this.pooledBytes -= buffer!.length;
      return buffer!;
    }
    // Rounded up to a power of two (at least 64 KiB), so originals of similar size reuse one
    // another's buffers; one that would exceed maxBufferBytes gets exactly its size, never pooled.
    const capacity = Math.max(64 * 1024, 2 ** Math.ceil(Math.log2(Math.max(size, 1))));
    return Buffer.allocUnsafeSlow(capacity > this.maxBufferBytes ? size : capacity);
  }

  release(buffer: Buffer): void {
    const length = buffer.length;
    // Only the pool's own sizes come back (powers of two up to maxBufferBytes).
    if (length > this.maxBufferBytes || (length & (length - 1)) !== 0) return;
    // Full: the smallest buffers leave first.
    this.free.push(buffer);
    this.pooledBytes += buffer.length;
    this.free.sort((a, b) => b.length - a.length);
    while (this.pooledBytes > this.maxPooledBytes) this.pooledBytes -= this.free.pop()!.length;
  }

  /** Bytes waiting in the pool (tests). */
  get idleBytes(): number {
    return this.pooledBytes;
  }
}

/** The process's pool: up to 64 MiB of buffers kept between renders, none larger than 32 MiB. */
export const originalBuffers = new OriginalBufferPool(64 * 1024 * 1024, 32 * 1024 * 1024);

const isReader = (source: unknown): source is OriginalReader =>
  typeof (source as OriginalReader).read === "function" && typeof (source as OriginalReader).size === "number";

/**
 * The stored original, read in two phases: enough bytes for its header (sizes, bands, colour
 * space: what the plan needs), then, only once the request is admitted, the rest. A request
 * refused from the header never reads a 50 MB original to the end.
 */
export class OriginalSource {
  private readonly chunks: Buffer[] = [];
  private length = 0;
  private done = false;
  private readonly iterator: AsyncIterator<Buffer> | undefined;
  /** Reader sources: the pooled buffer the bytes are read into, and who returns it. */
  private readonly reader: OriginalReader | undefined;
  private buffer: Buffer | undefined;

  constructor(
    source: Buffer | AsyncIterable<Buffer> | OriginalReader,
    private readonly pool: OriginalBufferPool = originalBuffers,
  ) {
    if (Buffer.isBuffer(source)) {
      this.chunks.push(source);
      this.length = source.length;
      this.done = true;
    } else if (isReader(source)) {
      // No buffer yet: the header phase takes one the size of the prefix it reads, and only the
      // whole read (after admission) one the size of the original. A request refused from the
      // header of an 80 MB original never allocates 80 MB (external memory that made V8 run a
      // full collection, about 20 ms, on every such refusal).
      this.reader = source;
    } else {
      this.iterator = source[Symbol.asyncIterator]();
    }
  }

  /** The header of the original (first frame, EXIF orientation known), from as few bytes as it takes. */
  async metadata(options: sharp.SharpOptions): Promise<sharp.Metadata> {
    if (this.reader && this.reader.size <= WHOLE_READ_MAX_BYTES) await this.readUntil(this.reader.size);
    for (const size of HEADER_PREFIXES) {
      await this.readUntil(size);
      if (this.done) break;
      try {
        return await sharp(this.bytes(), options).metadata();
      } catch {
        // The header reaches further (a large EXIF/ICC block, a TIFF directory at the end): read on.
      }
    }
    return sharp(await this.all(), options).metadata();
  }

  /** Every byte of the original. */
  async all(): Promise<Buffer> {
    await this.readUntil(Number.POSITIVE_INFINITY);
    return this.bytes();
  }

  private bytes(): Buffer {
    if (this.buffer) return this.buffer.subarray(0, this.length);
    if (this.chunks.length > 1) this.chunks.splice(0, this.chunks.length, Buffer.concat(this.chunks, this.length));
    return this.chunks[0] ?? Buffer.alloc(0);
  }

  private async readUntil(size: number): Promise<void> {
    if (this.reader) return this.readerUntil(this.reader, this.bufferFor(Math.min(size, this.reader.size)), size);
    while (!this.done && this.length < size) {
      const next = await this.iterator!.next();
      if (next.done) {
        this.done = true;
        break;
      }
      this.chunks.push(next.value);
      this.length += next.value.length;
    }
  }

  /** A pooled buffer of at least `size` bytes holding the bytes read so far. */
  private bufferFor(size: number): Buffer {
    const current = this.buffer;
    if (current && current.length >= size) return current;
    const buffer = this.pool.acquire(size);
    if (current) {
      current.copy(buffer, 0, 0, this.length);
      this.pool.release(current);
    }
    this.buffer = buffer;
    return buffer;
  }

  private async readerUntil(reader: OriginalReader, buffer: Buffer, size: number): Promise<void> {
    const end = Math.min(size, reader.size);
    while (!this.done && this.length < end) {
      // No further than asked: a header read must not pull the whole of a large original.
      const read = await reader.read(buffer.subarray(this.length, end), this.length);
      // A blob shorter than its stated size ends here; libvips then reports what is missing.
      if (read === 0) this.done = true;
      this.length += read;
    }
    if (this.length >= reader.size) this.done = true;
  }

  /**
   * Called once libvips is done with the bytes (the render ended): a stream is closed if it was
   * not read to its end (e.g. the request was refused from the header), a pooled buffer returns.
   */
  async close(): Promise<void> {
    if (!this.done) await this.iterator?.return?.();
    this.done = true;
    if (this.buffer) this.pool.release(this.buffer);
    this.buffer = undefined;
  }
}
