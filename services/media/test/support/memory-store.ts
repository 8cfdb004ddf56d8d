import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import { buffer } from "node:stream/consumers";
import {
  originalKey,
  StorageUnavailableError,
  type BlobInfo,
  type BlobObject,
  type BlobStore,
} from "@media-platform/storage";

/** The repository's fixture images (fixtures/images at the workspace root). */
export const FIXTURES_DIR = path.join(__dirname, "..", "..", "..", "..", "fixtures", "images");

const TYPES: Record<string, string> = {
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".tif": "image/tiff",
  ".webp": "image/webp",
};

/**
 * In-memory BlobStore for in-process tests. `unavailable = true` makes every call fail the
 * way a real driver does when its backend is down (StorageUnavailableError).
 */
export class MemoryBlobStore implements BlobStore {
  readonly blobs = new Map<string, { data: Buffer; contentType: string; metadata?: Record<string, string> }>();
  unavailable = false;
  /**
   * Reads of originals (`originals/<id>`): one per transformation, whatever the steps. The small
   * attributes blob a focal-point step also reads (`attributes/<id>`) is counted apart.
   */
  gets = 0;
  attributeGets = 0;

  private check(): void {
    if (this.unavailable) throw new StorageUnavailableError("memory store switched off by the test");
  }

  async put(
    key: string,
    body: Readable | Buffer,
    contentType: string,
    metadata?: Record<string, string>,
  ): Promise<BlobInfo> {
    this.check();
    const data = Buffer.isBuffer(body) ? body : await buffer(body);
    this.blobs.set(key, { data, contentType, metadata });
    return { key, contentType, size: data.length };
  }

  async get(key: string): Promise<BlobObject | null> {
    this.check();
    if (key.startsWith("attributes/")) this.attributeGets++;
    else this.gets++;
    const blob = this.blobs.get(key);
    if (!blob) return null;
    const body = Readable.from([blob.data]);
    return {
      key,
      contentType: blob.contentType,
      size: blob.data.length,
      metadata: blob.metadata,
      body,
      release: () => body.destroy(),
    };
  }

  async head(key: string): Promise<BlobInfo | null> {
    this.check();
    const blob = this.blobs.get(key);
    return blob ? { key, contentType: blob.contentType, size: blob.data.length } : null;
  }

  async delete(key: string): Promise<void> {
    this.check();
    this.blobs.delete(key);
  }

  async move(from: string, to: string): Promise<boolean> {
    this.check();
    const blob = this.blobs.get(from);
    if (!blob) return false;
    this.blobs.set(to, blob);
    this.blobs.delete(from);
    return true;
  }

  async ping(): Promise<void> {
    this.check();
  }

  /** Stores a fixture at originals/<new uuid> with its content type; returns the asset id. */
  async putFixture(
    file: string,
    contentType = TYPES[path.extname(file).toLowerCase()] ?? "application/octet-stream",
    metadata?: Record<string, string>,
  ): Promise<string> {
    const id = randomUUID();
    await this.put(originalKey(id), await readFile(path.join(FIXTURES_DIR, file)), contentType, metadata);
    return id;
  }
}
