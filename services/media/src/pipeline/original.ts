import sharp from "sharp";

/** Header reads try prefixes of these sizes before reading the whole original. */
const HEADER_PREFIXES = [64 * 1024, 512 * 1024, 4 * 1024 * 1024];

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

  constructor(source: Buffer | AsyncIterable<Buffer>) {
    if (Buffer.isBuffer(source)) {
      this.chunks.push(source);
      this.length = source.length;
      this.done = true;
    } else {
      this.iterator = source[Symbol.asyncIterator]();
    }
  }

  /** The header of the original (first frame, EXIF orientation known), from as few bytes as it takes. */
  async metadata(options: sharp.SharpOptions): Promise<sharp.Metadata> {
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
    if (this.chunks.length > 1) this.chunks.splice(0, this.chunks.length, Buffer.concat(this.chunks, this.length));
    return this.chunks[0] ?? Buffer.alloc(0);
  }

  private async readUntil(size: number): Promise<void> {
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

  /** Stops reading (e.g. the request was refused from the header): the underlying stream is closed. */
  async close(): Promise<void> {
    if (!this.done) await this.iterator?.return?.();
    this.done = true;
  }
}
