import type { Readable } from "node:stream";

/**
 * Small facts stored with a blob and returned by get() (S3 user metadata, the filesystem
 * sidecar): what a reader would otherwise have to work out from the bytes again. Names are
 * lower-case `[a-z0-9-]`, values printable ASCII, 2 KiB in all (S3's own limit); keys.ts checks.
 */
export type BlobMetadata = Record<string, string>;

/** Metadata of a stored blob. */
export interface BlobInfo {
  key: string;
  contentType: string;
  size: number;
  /** What put() was given; absent when it was given none. */
  metadata?: BlobMetadata;
}

export interface BlobObject extends BlobInfo {
  /** The bytes as a stream; the filesystem driver opens it on first access. */
  body: Readable;
  /**
   * Frees what get() holds, whatever the reader did: the body if it was not read to its end, the
   * descriptor `read` uses. Idempotent. A reader that used `read` and never touched `body` calls
   * this instead of `body.destroy()`, which would open a stream only to close it.
   */
  release(): void;
  /**
   * Positional reads of the blob as get() opened it, as fs.read: fills `target` with the bytes
   * from `position` on and resolves with how many it read (0 past the end). Valid until
   * release(), which the reader must still call. Offered by the filesystem driver, so a reader
   * can fill a buffer of its own (reused across reads) instead of receiving freshly allocated
   * chunks; it still sees the blob as it was when get() opened it if it is replaced or deleted
   * meanwhile. Failures reject with StorageUnavailableError.
   */
  read?(target: Buffer, position: number): Promise<number>;
}

/**
 * The only way either service touches stored bytes. Keys are slash-separated
 * (`originals/<assetId>`); drivers must reject keys that could escape their root.
 */
export interface BlobStore {
  /**
   * Writes the whole stream; the blob becomes visible only once complete (no partial objects).
   * If `body` itself errors, put rejects with that same error object (so e.g. an upload size
   * limit stays recognisable) and nothing is stored; storage failures reject with
   * StorageUnavailableError; a bad key with InvalidBlobKeyError (see keys.ts for the grammar).
   */
  put(key: string, body: Readable | Buffer, contentType: string, metadata?: BlobMetadata): Promise<BlobInfo>;
  /** Returns null when the key does not exist. Other failures throw StorageUnavailableError. */
  get(key: string): Promise<BlobObject | null>;
  head(key: string): Promise<BlobInfo | null>;
  /** Idempotent: deleting a missing key succeeds. */
  delete(key: string): Promise<void>;
  /**
   * Moves the blob at `from` to `to` (bytes, content type, metadata) without the bytes passing
   * through this process: a rename on the filesystem, CopyObject + DeleteObject on S3. Overwrites
   * `to`. Resolves false when `from` does not exist. A failure rejects with
   * StorageUnavailableError; on S3 the blob may then exist at both keys, never at neither.
   */
  move(from: string, to: string): Promise<boolean>;
  /** Cheap reachability probe for readiness checks. */
  ping(): Promise<void>;
  /**
   * Every complete blob whose key starts with `prefix` + "/" (e.g. "originals"), with its
   * last-modified time: what the orphan sweep compares with the database.
   */
  list?(prefix: string): AsyncIterable<ListedBlob>;
  /**
   * Removes what writes that never completed left behind (a crash mid-put): the filesystem
   * driver's `@tmp-` files, S3's incomplete multipart uploads, when older than `olderThan`.
   * Returns how many were removed.
   */
  removeIncompleteWrites?(olderThan: Date): Promise<number>;
}

export interface ListedBlob {
  key: string;
  modifiedAt: Date;
}

/** The backing store could not be reached or failed; callers map it to 503. */
export class StorageUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StorageUnavailableError";
  }
}

/** Key that does not match the allowed grammar (path traversal, empty segment, ...). */
export class InvalidBlobKeyError extends Error {
  constructor(key: string) {
    super(`invalid blob key: ${JSON.stringify(key)}`);
    this.name = "InvalidBlobKeyError";
  }
}

export const originalKey = (assetId: string): string => `originals/${assetId}`;
/**
 * Small JSON beside the original (contracts' assetAttributesSchema: the focal point) that the
 * media service reads instead of the database. Written by management's PATCH; its own prefix so
 * trash/restore (which move `originals/<id>`) leave it in place and the orphan sweep can list it.
 */
export const attributesKey = (assetId: string): string => `attributes/${assetId}`;
/**
 * The rendering source of version `version` of an asset's original: a JPEG made once at upload
 * from an original libvips cannot decode itself (HEIC, camera RAW), which renders read instead of
 * it. One per version, never moved: media reaches it only through the live original's blob
 * metadata (contracts' RENDERING_SOURCE_METADATA), so a trashed asset's is unreachable.
 */
export const renderingSourceKey = (assetId: string, version: number): string => `sources/${assetId}/v${version}`;
