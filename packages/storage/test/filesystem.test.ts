import { mkdtemp, readFile, readdir, readlink, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { FilesystemBlobStore, StorageUnavailableError } from "../src";
import { ROCKET, ROCKET_BYTES, describeBlobStoreContract, failingStream, sha256 } from "./support/blob-store-contract";

let root: string;

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "blobs-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .sort();
}

describeBlobStoreContract("filesystem", () => ({
  store: () => new FilesystemBlobStore(path.join(root, "contract")),
  residue: () => listFiles(path.join(root, "contract")).catch(() => []),
}));

describe("FilesystemBlobStore specifics", () => {
  test("stores the exact bytes on disk and the content type in a sidecar, no temp files left", async () => {
    const dir = path.join(root, "layout");
    const store = new FilesystemBlobStore(dir);
    const { createReadStream } = await import("node:fs");
    await store.put("originals/abc", createReadStream(ROCKET), "image/jpeg");
    expect(await listFiles(dir)).toEqual([path.join("originals", "abc@blob"), path.join("originals", "abc@meta.json")]);
    const onDisk = await readFile(path.join(dir, "originals", "abc@blob"));
    expect(onDisk.length).toBe(ROCKET_BYTES);
    expect(sha256(onDisk)).toBe(sha256(await readFile(ROCKET)));
    expect(JSON.parse(await readFile(path.join(dir, "originals", "abc@meta.json"), "utf8"))).toEqual({
      contentType: "image/jpeg",
    });
  });

  describe("descriptors of reads", () => {
    // Descriptors this process has open on blob files below `dir` (Linux: /proc/self/fd).
    const openBlobFiles = async (dir: string) => {
      const fds = await readdir("/proc/self/fd");
      const targets = await Promise.all(fds.map((fd) => readlink(`/proc/self/fd/${fd}`).catch(() => "")));
      return targets.filter((t) => t.startsWith(dir)).length;
    };
    const linux = process.platform === "linux" ? test : test.skip;
    const closed = (body: NodeJS.ReadableStream) => new Promise((resolve) => body.once("close", resolve));

    linux("a body read to its end, or destroyed unread, leaves no descriptor open", async () => {
      const dir = path.join(root, "descriptors");
      const store = new FilesystemBlobStore(dir);
      await store.put("originals/a", Buffer.alloc(200_000, 7), "image/png");
      for (let i = 0; i < 20; i++) {
        const read = (await store.get("originals/a"))!;
        const chunks: Buffer[] = [];
        for await (const chunk of read.body) chunks.push(chunk as Buffer);
        expect(Buffer.concat(chunks).equals(Buffer.alloc(200_000, 7))).toBe(true);
        const unread = (await store.get("originals/a"))!;
        const done = closed(unread.body);
        unread.body.destroy();
        await done;
      }
      await new Promise((r) => setImmediate(r));
      expect(await openBlobFiles(dir)).toBe(0);
    });

    linux("release() without touching the body closes the descriptor at once; the body is then destroyed", async () => {
      const dir = path.join(root, "released");
      const store = new FilesystemBlobStore(dir);
      await store.put("originals/r", Buffer.alloc(5000, 3), "image/png");
      const blob = (await store.get("originals/r"))!;
      const target = Buffer.alloc(5000);
      expect(await blob.read!(target, 0)).toBe(5000);
      expect(target.equals(Buffer.alloc(5000, 3))).toBe(true);
      expect(await openBlobFiles(dir)).toBe(1);
      blob.release();
      // Synchronous: no stream was opened, so nothing is left to close later.
      expect(await openBlobFiles(dir)).toBe(0);
      blob.release();
      await expect(blob.read!(Buffer.alloc(4), 0)).rejects.toBeInstanceOf(StorageUnavailableError);
      // As on every driver, the body of a released blob is destroyed (and opens no descriptor).
      expect(blob.body.destroyed).toBe(true);
      expect(await openBlobFiles(dir)).toBe(0);
    });

    test("read() fills the caller's buffer with the blob as get() opened it, until the body is destroyed", async () => {
      const dir = path.join(root, "positional");
      const store = new FilesystemBlobStore(dir);
      await store.put("originals/x", Buffer.from("version one"), "text/plain");
      const blob = (await store.get("originals/x"))!;
      const readAll = async () => {
        const target = Buffer.alloc(blob.size);
        expect(await blob.read!(target.subarray(0, 7), 0)).toBe(7);
        expect(await blob.read!(target.subarray(7), 7)).toBe(4);
        expect(await blob.read!(Buffer.alloc(4), blob.size)).toBe(0);
        return target.toString();
      };
      // Replaced, then deleted: the open blob still reads its own bytes.
      await store.put("originals/x", Buffer.from("version two"), "text/plain");
      expect(await readAll()).toBe("version one");
      await store.delete("originals/x");
      expect(await readAll()).toBe("version one");
      const done = closed(blob.body);
      blob.body.destroy();
      await done;
      await expect(blob.read!(Buffer.alloc(4), 0)).rejects.toBeInstanceOf(StorageUnavailableError);
      expect(await openBlobFiles(dir)).toBe(0);
    });
  });

  test("read() up to 4 MiB answers synchronously (no hop through libuv's pool); a larger one is asynchronous, with the same bytes", async () => {
    const dir = path.join(root, "sync-read");
    const store = new FilesystemBlobStore(dir);
    const bytes = Buffer.alloc(5 * 1024 * 1024);
    for (let i = 0; i < bytes.length; i += 4096) bytes.writeUInt32BE(i, i);
    await store.put("originals/x", bytes, "image/jpeg");
    const blob = (await store.get("originals/x"))!;
    const PENDING = Symbol("pending");
    // An already settled promise wins a race against a resolved one listed after it; a pending one loses.
    const stateOf = (p: Promise<number>) => Promise.race([p, Promise.resolve(PENDING)]);

    const small = Buffer.alloc(4 * 1024 * 1024);
    const smallRead = blob.read!(small, 4096);
    expect(await stateOf(smallRead)).toBe(small.length);
    expect(small.equals(bytes.subarray(4096, 4096 + small.length))).toBe(true);

    const large = Buffer.alloc(bytes.length);
    const largeRead = blob.read!(large, 0);
    expect(await stateOf(largeRead)).toBe(PENDING);
    expect(await largeRead).toBe(bytes.length);
    expect(large.equals(bytes)).toBe(true);
    blob.release();
    await expect(blob.read!(Buffer.alloc(4), 0)).rejects.toBeInstanceOf(StorageUnavailableError);
  });

  test("a failed stream removes its temp file", async () => {
    const dir = path.join(root, "failed");
    const store = new FilesystemBlobStore(dir);
    const boom = new Error("boom");
    await expect(
      store.put("originals/x", failingStream(Buffer.alloc(300_000, 1), 200_000, boom), "image/png"),
    ).rejects.toBe(boom);
    expect(await listFiles(dir)).toEqual([]);
  });

  test("a blob whose sidecar is missing is still served, as octet-stream", async () => {
    const dir = path.join(root, "nometa");
    const store = new FilesystemBlobStore(dir);
    await store.put("k", Buffer.from("x"), "text/plain");
    await rm(path.join(dir, "k@meta.json"));
    expect(await store.head("k")).toEqual({
      key: "k",
      contentType: "application/octet-stream",
      size: 1,
    });
  });

  test("a sidecar larger than one read (written by another writer) is read whole", async () => {
    const dir = path.join(root, "bigmeta");
    const store = new FilesystemBlobStore(dir);
    await store.put("k", Buffer.from("x"), "text/plain");
    const long = "\u00e9".repeat(6000); // 12,000 bytes of UTF-8, split across the first read's end
    await writeFile(
      path.join(dir, "k@meta.json"),
      JSON.stringify({ contentType: "image/png", metadata: { note: long } }),
    );
    const blob = await store.get("k");
    blob!.release();
    expect(blob!.contentType).toBe("image/png");
    expect(blob!.metadata).toEqual({ note: long });
  });

  test("an unusable root surfaces as StorageUnavailableError, not null", async () => {
    const file = path.join(root, "not-a-dir");
    await writeFile(file, "I am a file");
    const store = new FilesystemBlobStore(file);
    await expect(store.ping()).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(store.put("originals/a", Buffer.from("x"), "text/plain")).rejects.toBeInstanceOf(
      StorageUnavailableError,
    );
    await expect(store.get("originals/a")).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(store.head("originals/a")).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(store.delete("originals/a")).rejects.toBeInstanceOf(StorageUnavailableError);
  });

  test("a key below a path component that is a file is StorageUnavailableError, a key below a missing directory null", async () => {
    const dir = path.join(root, "component-file");
    const store = new FilesystemBlobStore(dir);
    await store.put("originals/a", Buffer.from("x"), "text/plain");
    // `attributes` is a file where the store expects a directory (ENOTDIR on open).
    await writeFile(path.join(dir, "attributes"), "not a directory");
    await expect(store.get("attributes/a")).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(store.get("attributes/deeper/a")).rejects.toBeInstanceOf(StorageUnavailableError);
    // Missing directories, or a missing root, are plain misses.
    await expect(store.get("versions/a/1")).resolves.toBeNull();
    await expect(new FilesystemBlobStore(path.join(dir, "absent")).get("originals/a")).resolves.toBeNull();
  });

  test("ping creates a missing root", async () => {
    const dir = path.join(root, "fresh", "nested");
    await new FilesystemBlobStore(dir).ping();
    expect(await readdir(dir)).toEqual([]);
  });

  test("a relative root resolves against the working directory", () => {
    expect(new FilesystemBlobStore("./.data/blobs").rootDir).toBe(path.resolve(".data/blobs"));
  });

  test("removeIncompleteWrites removes a sidecar whose data file never arrived (a put killed between its renames)", async () => {
    const dir = path.join(root, "half-written");
    const store = new FilesystemBlobStore(dir);
    await store.put("originals/kept", Buffer.from("bytes"), "image/png");
    // What a SIGKILL between the metadata rename and the data rename leaves behind.
    await writeFile(path.join(dir, "originals", "lost@meta.json"), JSON.stringify({ contentType: "image/png" }));
    expect(await store.removeIncompleteWrites(new Date(0))).toBe(0); // younger than the grace period: kept
    expect(await store.removeIncompleteWrites(new Date(Date.now() + 60_000))).toBe(1);
    expect(await listFiles(dir)).toEqual([
      path.join("originals", "kept@blob"),
      path.join("originals", "kept@meta.json"),
    ]);
  });
});
