import sharp from "sharp";

/** Header reads try prefixes of these sizes before reading the whole original. */
const HEADER_PREFIXES = [64 * 1024, 512 * 1024, 4 * 1024 * 1024];

/** An original libvips reads itself, from a path (BlobObject.localFile): no bytes pass through JavaScript. */
export interface OriginalFile {
  file: string;
}

/**
 * The stored original, read in two phases: enough bytes for its header (sizes, bands, colour
 * space: what the plan needs), then, only once the request is admitted, the rest. A request
 * refused from the header never reads a 50 MB original to the end. A file is handed to libvips
 * as a path, which reads only the header for the first phase.
 */
export class OriginalSource {
  private readonly chunks: Buffer[] = [];
  private length = 0;
  private done = false;
  private readonly iterator: AsyncIterator<Buffer> | undefined;
  private readonly file: string | undefined;

  constructor(source: Buffer | AsyncIterable<Buffer> | OriginalFile) {
    if ("file" in source && typeof source.file === "string") {
      this.file = source.file;
      this.done = true;
    } else if (Buffer.isBuffer(source)) {
      this.chunks.push(source);
      this.length = source.length;
      this.done = true;
    } else {
      this.iterator = (source as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
    }
  }

  /** The header of the original (first frame, EXIF orientation known), from as few bytes as it takes. */
  async metadata(options: sharp.SharpOptions): Promise<sharp.Metadata> {
    if (this.file !== undefined) return sharp(this.file, options).metadata();
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

  /** The whole original as sharp's input: every byte of it, or its path. */
  async all(): Promise<Buffer | string> {
    if (this.file !== undefined) return this.file;
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
