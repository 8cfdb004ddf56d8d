import { randomUUID } from "node:crypto";
import {
  closeSync,
  constants as fsConstants,
  createReadStream,
  fstatSync,
  openSync,
  promises as fs,
  read as readFd,
  readFileSync,
  readSync,
  statSync,
  type ReadStream,
} from "node:fs";
import type { FileHandle } from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import {
  type BlobInfo,
  type BlobMetadata,
  type BlobObject,
  type BlobStore,
  type ListedBlob,
  InvalidBlobKeyError,
  StorageUnavailableError,
} from "./blob-store";
import { assertValidBlobKey, assertValidBlobMetadata, assertValidContentType } from "./keys";

const DEFAULT_CONTENT_TYPE = "application/octet-stream";

/*
 * On-disk layout for key "a/b/c":  <root>/a/b/c@blob  (the exact bytes)
 *                                  <root>/a/b/c@meta.json  ({"contentType": ...})
 *                                  <root>/a/b/c@tmp-<uuid>  (in-flight writes)
 * "@" cannot occur in a key segment, so files never collide with the directories
 * of longer keys ("a" and "a/b" can both exist, as on S3) nor with each other.
 */
const DATA_SUFFIX = "@blob";
const META_SUFFIX = "@meta.json";
const TMP_INFIX = "@tmp-";
/** Largest single read of a blob body (bigger blobs stream in chunks of this size). */
const READ_CHUNK_MAX = 16 * 1024 * 1024;
/**
 * Positional reads up to this size are synchronous. From the page cache a pread of 200 KB took
 * 10 µs on the bench VM, while the same read through libuv's pool took 150 µs idle and 0.5-0.9 ms
 * under MISS load (a hand-off to a pool thread that image work keeps busy, and back): latency on
 * the critical path of every MISS. A 4 MiB read blocks the event loop for about 0.2 ms on an idle
 * core (several times that while libvips keeps the cores busy); larger reads still go through the pool.
 */
const SYNC_READ_MAX = 4 * 1024 * 1024;

interface BlobPaths {
  /** The key's directory (writes and missing keys only: computed on demand). */
  dir(): string;
  data: string;
  meta: string;
  tmp(): string;
}

interface MetaFile {
  contentType: string;
  metadata?: BlobMetadata;
}

const errorCode = (err: unknown): string | undefined =>
  typeof err === "object" && err !== null && "code" in err ? String((err as { code: unknown }).code) : undefined;

const isNotFound = (err: unknown): boolean => errorCode(err) === "ENOENT";

/** Every file below `dir` (none when it does not exist), depth first. */
async function* walkFiles(dir: string): AsyncGenerator<{ name: string; path: string }> {
  let entries;
  try {
    entries = await fs.readdir(dir, { withFileTypes: true });
  } catch (err) {
    if (isNotFound(err)) return;
    throw err;
  }
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* walkFiles(full);
    else if (entry.isFile()) yield { name: entry.name, path: full };
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // nothing left to do with a descriptor that will not close
  }
}

/**
 * Sidecars are small (a content type and the header facts): read with one read into a reused
 * buffer, without the fstat and the fresh buffer readFileSync takes for its size. Safe to share:
 * the read and the decode are synchronous. A larger sidecar is read whole from the same descriptor.
 */
const SIDECAR_SCRATCH = Buffer.allocUnsafe(8 * 1024);

function readSmallFileSync(file: string): string {
  const fd = openSync(file, "r");
  try {
    const n = readSync(fd, SIDECAR_SCRATCH, 0, SIDECAR_SCRATCH.length, 0);
    // pread leaves the descriptor's offset at 0, so readFileSync reads it from the start.
    return n < SIDECAR_SCRATCH.length ? SIDECAR_SCRATCH.toString("utf8", 0, n) : readFileSync(fd, "utf8");
  } finally {
    closeSync(fd);
  }
}

function sidecarOf(text: string): MetaFile {
  const meta = JSON.parse(text) as Partial<MetaFile>;
  const contentType = typeof meta.contentType === "string" ? meta.contentType : DEFAULT_CONTENT_TYPE;
  const metadata = meta.metadata;
  const valid =
    typeof metadata === "object" &&
    metadata !== null &&
    Object.values(metadata).every((value) => typeof value === "string");
  return valid ? { contentType, metadata } : { contentType };
}

function toBuffer(chunk: unknown): Buffer {
  if (Buffer.isBuffer(chunk)) return chunk;
  if (typeof chunk === "string") return Buffer.from(chunk);
  if (chunk instanceof Uint8Array) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  throw new TypeError("blob body must yield Buffer, Uint8Array or string chunks");
}

async function writeAll(handle: FileHandle, buf: Buffer): Promise<void> {
  // FileHandle.write may write fewer bytes than asked; loop until all are on disk.
  let offset = 0;
  while (offset < buf.length) {
    const { bytesWritten } = await handle.write(buf, offset, buf.length - offset);
    offset += bytesWritten;
  }
}

async function fsyncDir(dir: string): Promise<void> {
  // Makes the rename itself durable. Some platforms cannot open/fsync a directory:
  // that only weakens crash durability, never atomicity, so it is not an error.
  let handle: FileHandle | undefined;
  try {
    handle = await fs.open(dir, "r");
    await handle.sync();
  } catch {
    /* best effort */
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

/**
 * Blob store on a local directory (the embedded default). Writes go to a temp file
 * next to the target, are fsynced and then renamed into place, so readers see either
 * the previous blob or the complete new one, never a partial file.
 */
export class FilesystemBlobStore implements BlobStore {
  readonly rootDir: string;

  /** rootDir with a trailing separator: every blob path starts with it. */
  private readonly rootPrefix: string;

  constructor(rootDir: string) {
    this.rootDir = path.resolve(rootDir);
    this.rootPrefix = this.rootDir.endsWith(path.sep) ? this.rootDir : this.rootDir + path.sep;
  }

  private paths(key: string): BlobPaths {
    assertValidBlobKey(key);
    // One join (a normalisation) per key: this runs on every read of a MISS.
    const file = path.join(this.rootDir, key);
    // Defence in depth: the grammar already excludes traversal, but never trust one check.
    if (!file.startsWith(this.rootPrefix)) throw new InvalidBlobKeyError(key);
    return {
      dir: () => path.dirname(file),
      data: file + DATA_SUFFIX,
      meta: file + META_SUFFIX,
      tmp: () => `${file}${TMP_INFIX}${randomUUID()}`,
    };
  }

  private unavailable(op: string, key: string, err: unknown): StorageUnavailableError {
    if (err instanceof StorageUnavailableError) return err;
    const reason = err instanceof Error ? err.message : String(err);
    return new StorageUnavailableError(`filesystem blob store: ${op} ${key} failed: ${reason}`, { cause: err });
  }

  async put(key: string, body: Readable | Buffer, contentType: string, metadata?: BlobMetadata): Promise<BlobInfo> {
    const p = this.paths(key);
    assertValidContentType(contentType);
    assertValidBlobMetadata(metadata);
    const tmpData = p.tmp();
    const tmpMeta = p.tmp();
    let handle: FileHandle | undefined;
    try {
      try {
        await fs.mkdir(p.dir(), { recursive: true });
        handle = await fs.open(tmpData, "wx");
      } catch (err) {
        throw this.unavailable("put", key, err);
      }

      let size = 0;
      const write = async (chunk: Buffer): Promise<void> => {
        try {
          await writeAll(handle as FileHandle, chunk);
        } catch (err) {
          throw this.unavailable("put", key, err);
        }
        size += chunk.length;
      };
      if (Buffer.isBuffer(body)) {
        await write(body);
      } else {
        // Errors thrown by the iteration itself come from the caller's stream and are
        // rethrown untouched (e.g. an upload size limit must stay recognisable);
        // breaking out of the loop destroys the source.
        for await (const chunk of body) await write(toBuffer(chunk));
      }

      try {
        await handle.sync();
        await handle.close();
        handle = undefined;
        const meta: MetaFile = { contentType, ...(metadata && { metadata }) };
        const metaHandle = await fs.open(tmpMeta, "wx");
        try {
          await metaHandle.writeFile(JSON.stringify(meta));
          await metaHandle.sync();
        } finally {
          await metaHandle.close();
        }
        // Metadata first: the data rename is the commit point that makes the blob visible.
        await fs.rename(tmpMeta, p.meta);
        await fs.rename(tmpData, p.data);
      } catch (err) {
        throw this.unavailable("put", key, err);
      }
      await fsyncDir(p.dir());
      return { key, contentType, size, ...(metadata && { metadata }) };
    } catch (err) {
      await handle?.close().catch(() => undefined);
      await Promise.all([fs.rm(tmpData, { force: true }), fs.rm(tmpMeta, { force: true })]).catch(() => undefined);
      throw err;
    }
  }

  private readSidecarSync(p: BlobPaths, key: string): MetaFile {
    try {
      return sidecarOf(readSmallFileSync(p.meta));
    } catch (err) {
      // A blob whose sidecar is gone (e.g. crash mid-delete) is still served, as bytes.
      if (isNotFound(err) || err instanceof SyntaxError) return { contentType: DEFAULT_CONTENT_TYPE };
      throw this.unavailable("read metadata of", key, err);
    }
  }

  /*
   * Reads open the data file, stat it and read the sidecar with synchronous calls: on a local
   * disk each takes microseconds, while each hop through libuv's pool (which image work keeps
   * busy) costs a thread hand-off both ways; a MISS made eight such hops before any byte of the
   * body arrived. The body's positional reads (`read`) are synchronous too up to SYNC_READ_MAX;
   * its stream is asynchronous. (Shared storage belongs on S3.)
   * A missing blob is found with a stat that does not throw: the media service asks for the
   * attributes of every asset whose steps use a focal point, and most have none, so an ENOENT
   * exception (a stack trace captured) per MISS was the common case.
   */
  async get(key: string): Promise<BlobObject | null> {
    const p = this.paths(key);
    let fd: number;
    try {
      if (statSync(p.data, { throwIfNoEntry: false }) === undefined) {
        this.assertDirectories(p.dir(), key);
        return null;
      }
      fd = openSync(p.data, "r");
    } catch (err) {
      // Deleted between the stat and the open.
      if (isNotFound(err)) return null;
      throw this.unavailable("get", key, err);
    }
    try {
      // Size comes from the open descriptor, so it matches the bytes streamed even if
      // the key is replaced or deleted meanwhile.
      const { size } = fstatSync(fd);
      const sidecar = this.readSidecarSync(p, key);
      return this.opened(fd, { key, ...sidecar, size });
    } catch (err) {
      closeQuietly(fd);
      throw this.unavailable("get", key, err);
    }
  }

  /**
   * For a key statSync found no entry for: its directory, or the nearest ancestor that exists,
   * must be a directory. From Node 22 on, `throwIfNoEntry: false` answers ENOTDIR (a path
   * component that is a file: an unusable root) as "no entry" too, and that is a 503, not a
   * missing key. Misses are common (most assets have no attributes), so this costs one stat
   * where the key's directory exists, never an exception.
   */
  private assertDirectories(dir: string, key: string): void {
    for (let d = dir; ; d = path.dirname(d)) {
      const stat = statSync(d, { throwIfNoEntry: false });
      if (stat) {
        if (!stat.isDirectory()) throw this.unavailable("get", key, new Error(`${d} is not a directory`));
        return;
      }
      // Nothing exists up to the root (nothing stored yet): a plain miss, as an open's ENOENT was.
      if (d === this.rootDir || path.dirname(d) === d) return;
    }
  }

  /**
   * The three ways to the bytes of an open descriptor. The stream is created on first access of
   * `body`: a reader that only uses `read` (the media service) never builds one, and release()
   * then closes the descriptor right away instead of through a stream's asynchronous close.
   */
  private opened(fd: number, info: BlobInfo): BlobObject {
    const { key, size } = info;
    let stream: ReadStream | undefined;
    let released = false;
    const open = (): ReadStream => {
      // Blobs up to READ_CHUNK_MAX are read in one read() instead of 64 KiB chunks: a reader
      // collecting the whole body then waits for one pool slot, not for dozens. `end` stops at
      // the size read from the descriptor (blobs are never written in place), which saves the
      // extra read that would only find the end.
      const highWaterMark = Math.min(Math.max(size, 64 * 1024), READ_CHUNK_MAX);
      return createReadStream("", {
        fd,
        highWaterMark,
        start: 0,
        end: size > 0 ? size - 1 : undefined,
        // The stream owns the descriptor: it closes it exactly once, when it ends or is
        // destroyed. (With autoClose off a stream read to its end never closed it, one leaked
        // descriptor per read, and destroy() closed it while a listener here closed it again,
        // which could close a descriptor another request had just been given.)
        autoClose: true,
      });
    };
    // Not spread anywhere: spreading would call the getter and open the stream.
    return {
      ...info,
      get body(): Readable {
        if (stream) return stream;
        // Released before anyone asked for the stream: the descriptor is closed (and its number
        // may belong to another file by now), so the body is an already destroyed stream, as
        // on every driver after release().
        if (released) return Readable.from([]).destroy();
        stream = open();
        // Once the stream has closed the descriptor, positional reads must not use its number.
        stream.once("close", () => {
          released = true;
        });
        return stream;
      },
      read: (target: Buffer, position: number) =>
        new Promise<number>((resolve, reject) => {
          if (released) return reject(this.unavailable("read", key, new Error("blob already released")));
          if (target.length <= SYNC_READ_MAX) {
            try {
              return resolve(readSync(fd, target, 0, target.length, position));
            } catch (err) {
              return reject(this.unavailable("read", key, err));
            }
          }
          readFd(fd, target, 0, target.length, position, (err, bytesRead) =>
            err ? reject(this.unavailable("read", key, err)) : resolve(bytesRead),
          );
        }),
      release: () => {
        if (released) return;
        released = true;
        if (stream) stream.destroy();
        else closeQuietly(fd);
      },
    };
  }

  async head(key: string): Promise<BlobInfo | null> {
    const p = this.paths(key);
    let size: number;
    try {
      ({ size } = await fs.stat(p.data));
    } catch (err) {
      if (isNotFound(err)) return null;
      throw this.unavailable("head", key, err);
    }
    return { key, ...this.readSidecarSync(p, key), size };
  }

  async delete(key: string): Promise<void> {
    const p = this.paths(key);
    try {
      // Data first: once it is gone the blob is invisible, whatever happens to the sidecar.
      await fs.rm(p.data, { force: true });
      await fs.rm(p.meta, { force: true });
    } catch (err) {
      throw this.unavailable("delete", key, err);
    }
  }

  async move(from: string, to: string): Promise<boolean> {
    const src = this.paths(from);
    const dst = this.paths(to);
    const tmpMeta = dst.tmp();
    try {
      let meta: string;
      try {
        meta = await fs.readFile(src.meta, "utf8");
      } catch (err) {
        if (!isNotFound(err)) throw err;
        // No sidecar (a crash mid-delete): the data file alone decides whether the blob exists.
        await fs.stat(src.data);
        meta = JSON.stringify({ contentType: DEFAULT_CONTENT_TYPE });
      }
      await fs.mkdir(dst.dir(), { recursive: true });
      // The sidecar is copied first (it is tiny); the data rename is the commit point, as in put.
      await fs.writeFile(tmpMeta, meta, { flag: "wx" });
      await fs.rename(tmpMeta, dst.meta);
      await fs.rename(src.data, dst.data);
    } catch (err) {
      await fs.rm(tmpMeta, { force: true }).catch(() => undefined);
      if (isNotFound(err)) return false;
      throw this.unavailable("move", from, err);
    }
    // The source sidecar is left over only if this fails; removeIncompleteWrites sweeps it.
    await fs.rm(src.meta, { force: true }).catch(() => undefined);
    await fsyncDir(dst.dir());
    await fsyncDir(src.dir());
    return true;
  }

  async *list(prefix: string): AsyncIterable<ListedBlob> {
    assertValidBlobKey(prefix);
    const start = path.join(this.rootDir, ...prefix.split("/"));
    try {
      for await (const file of walkFiles(start)) {
        if (!file.name.endsWith(DATA_SUFFIX)) continue;
        const stat = await fs.stat(file.path).catch(() => null);
        const key = `${prefix}/${path.relative(start, file.path).split(path.sep).join("/")}`.slice(
          0,
          -DATA_SUFFIX.length,
        );
        if (stat) yield { key, modifiedAt: stat.mtime };
      }
    } catch (err) {
      throw this.unavailable("list", prefix, err);
    }
  }

  async removeIncompleteWrites(olderThan: Date): Promise<number> {
    let removed = 0;
    const walk = async (): Promise<void> => {
      for await (const { name, path: full } of walkFiles(this.rootDir)) {
        if (name.includes(TMP_INFIX)) {
          const stat = await fs.stat(full).catch(() => null);
          if (stat && stat.mtime < olderThan) {
            await fs.rm(full, { force: true });
            removed++;
          }
        } else if (name.endsWith(META_SUFFIX)) {
          // A sidecar without its data file: a put killed between its two renames (metadata is
          // renamed first) or a delete killed between its two removals. Never visible as a blob.
          const data = `${full.slice(0, -META_SUFFIX.length)}${DATA_SUFFIX}`;
          const [stat, hasData] = await Promise.all([
            fs.stat(full).catch(() => null),
            fs.access(data).then(
              () => true,
              () => false,
            ),
          ]);
          if (stat && !hasData && stat.mtime < olderThan) {
            await fs.rm(full, { force: true });
            removed++;
          }
        }
      }
    };
    try {
      await walk();
    } catch (err) {
      throw this.unavailable("sweep", this.rootDir, err);
    }
    return removed;
  }

  async ping(): Promise<void> {
    try {
      await fs.mkdir(this.rootDir, { recursive: true });
      await fs.access(this.rootDir, fsConstants.R_OK | fsConstants.W_OK);
    } catch (err) {
      throw this.unavailable("ping", this.rootDir, err);
    }
  }
}
