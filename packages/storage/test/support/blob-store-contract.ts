import { createHash, randomBytes } from "node:crypto";
import { createReadStream, readFileSync } from "node:fs";
import path from "node:path";
import { Readable } from "node:stream";
import { type BlobStore, InvalidBlobKeyError, originalKey } from "../../src";

export const ROCKET = path.resolve(__dirname, "../../../../fixtures/images/rocket.jpg");
export const ROCKET_BYTES = 112_525;

export const sha256 = (buf: Buffer): string => createHash("sha256").update(buf).digest("hex");

export async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
}

/** Yields `data` in chunks up to `failAfter` bytes, then errors with `error`. */
export function failingStream(data: Buffer, failAfter: number, error: Error, chunkSize = 64 * 1024): Readable {
  async function* gen(): AsyncGenerator<Buffer> {
    for (let offset = 0; offset < failAfter; offset += chunkSize) {
      yield data.subarray(offset, Math.min(offset + chunkSize, failAfter));
      await new Promise((resolve) => setImmediate(resolve));
    }
    throw error;
  }
  return Readable.from(gen(), { objectMode: false });
}

export const TRAVERSAL_KEYS = [
  "../x",
  "originals/../../etc",
  "/abs",
  "a//b",
  "a\\b",
  "a\0b",
  "",
  ".",
  "..",
  "a/./b",
  "a/",
  "originals/%2e%2e",
  "spaces are bad",
  "ünïcode",
];

export interface ContractHarness {
  store(): BlobStore;
  /** Everything physically left in the backing store (files or object keys), for leak checks. */
  residue(): Promise<string[]>;
}

/** The behaviour every BlobStore driver must show; run once per driver. */
export function describeBlobStoreContract(name: string, harness: () => ContractHarness): void {
  describe(`BlobStore contract: ${name}`, () => {
    let store: BlobStore;
    let residue: () => Promise<string[]>;
    const rocket = readFileSync(ROCKET);
    let n = 0;
    const freshKey = (): string => originalKey(`${name}-${Date.now()}-${n++}`);

    beforeAll(() => {
      const h = harness();
      store = h.store();
      residue = h.residue;
    });

    test("fixture is the expected file", () => {
      expect(rocket.length).toBe(ROCKET_BYTES);
    });

    test("ping succeeds", async () => {
      await expect(store.ping()).resolves.toBeUndefined();
    });

    test("streamed put/get round-trips the exact bytes (sha256) with size and content type", async () => {
      const key = freshKey();
      const info = await store.put(key, createReadStream(ROCKET), "image/jpeg");
      expect(info).toEqual({
        key,
        contentType: "image/jpeg",
        size: ROCKET_BYTES,
      });

      expect(await store.head(key)).toEqual({
        key,
        contentType: "image/jpeg",
        size: ROCKET_BYTES,
      });

      const got = await store.get(key);
      expect(got).not.toBeNull();
      expect(got!.key).toBe(key);
      expect(got!.contentType).toBe("image/jpeg");
      expect(got!.size).toBe(ROCKET_BYTES);
      const bytes = await readAll(got!.body);
      expect(bytes.length).toBe(ROCKET_BYTES);
      expect(sha256(bytes)).toBe(sha256(rocket));
    });

    test("Buffer put round-trips", async () => {
      const key = freshKey();
      const data = Buffer.from("hello, blob store\n");
      await expect(store.put(key, data, "text/plain; charset=utf-8")).resolves.toEqual({
        key,
        contentType: "text/plain; charset=utf-8",
        size: data.length,
      });
      const got = await store.get(key);
      expect(got!.contentType).toBe("text/plain; charset=utf-8");
      expect((await readAll(got!.body)).equals(data)).toBe(true);
    });

    test("release() frees a blob read part way or not at all, and may be called again", async () => {
      const key = freshKey();
      await store.put(key, rocket, "image/jpeg");
      const partly = (await store.get(key))!;
      const first = await new Promise<Buffer>((resolve) => partly.body.once("data", resolve));
      expect(first.length).toBeGreaterThan(0);
      partly.release();
      partly.release();
      expect(partly.body.destroyed).toBe(true);
      const unread = (await store.get(key))!;
      unread.release();
      expect(unread.body.destroyed).toBe(true);
      // The blob itself is untouched.
      expect(sha256(await readAll((await store.get(key))!.body))).toBe(sha256(rocket));
    });

    test("metadata round-trips through get and head, streamed or buffered, and an overwrite replaces it", async () => {
      const key = freshKey();
      const metadata = { "image-header": '{"width":4000,"height":3000}', "x-1": "" };
      await expect(store.put(key, createReadStream(ROCKET), "image/jpeg", metadata)).resolves.toEqual({
        key,
        contentType: "image/jpeg",
        size: ROCKET_BYTES,
        metadata,
      });
      const got = await store.get(key);
      expect(got!.metadata).toEqual(metadata);
      got!.body.destroy();
      expect((await store.head(key))!.metadata).toEqual(metadata);
      const buffered = freshKey();
      await store.put(buffered, Buffer.from("b"), "text/plain", { a: "1" });
      expect((await store.head(buffered))!.metadata).toEqual({ a: "1" });
      // Written again without metadata: none is left of the old.
      await store.put(key, Buffer.from("x"), "text/plain");
      const after = await store.get(key);
      expect(after!.metadata).toBeUndefined();
      after!.body.destroy();
    });

    test("metadata that could not travel as S3 headers is rejected before anything is stored", async () => {
      const key = freshKey();
      await expect(store.put(key, rocket, "image/jpeg", { Upper: "x" })).rejects.toBeInstanceOf(TypeError);
      await expect(store.put(key, rocket, "image/jpeg", { ok: "line\r\nX-Evil: 1" })).rejects.toBeInstanceOf(TypeError);
      await expect(store.put(key, rocket, "image/jpeg", { big: "x".repeat(2048) })).rejects.toBeInstanceOf(TypeError);
      expect(await store.head(key)).toBeNull();
    });

    test("empty blob round-trips", async () => {
      const key = freshKey();
      await store.put(key, Readable.from([]), "application/octet-stream");
      expect(await store.head(key)).toEqual({
        key,
        contentType: "application/octet-stream",
        size: 0,
      });
      expect((await readAll((await store.get(key))!.body)).length).toBe(0);
    });

    test("a large streamed body (several multipart parts on S3) round-trips", async () => {
      const key = freshKey();
      const data = randomBytes(11 * 1024 * 1024 + 123);
      const info = await store.put(key, chunkedStream(data), "application/octet-stream");
      expect(info.size).toBe(data.length);
      expect((await store.head(key))!.size).toBe(data.length);
      expect(sha256(await readAll((await store.get(key))!.body))).toBe(sha256(data));
    });

    test("put overwrites an existing key (bytes and content type)", async () => {
      const key = freshKey();
      await store.put(key, Buffer.from("first"), "text/plain");
      await store.put(key, rocket, "image/jpeg");
      expect(await store.head(key)).toEqual({
        key,
        contentType: "image/jpeg",
        size: ROCKET_BYTES,
      });
      expect(sha256(await readAll((await store.get(key))!.body))).toBe(sha256(rocket));
    });

    test("a key and a longer key below it coexist", async () => {
      const base = freshKey();
      await store.put(base, Buffer.from("parent"), "text/plain");
      await store.put(`${base}/child`, Buffer.from("child!"), "text/plain");
      expect((await readAll((await store.get(base))!.body)).toString()).toBe("parent");
      expect((await readAll((await store.get(`${base}/child`))!.body)).toString()).toBe("child!");
    });

    test("missing key: get and head return null", async () => {
      const key = freshKey();
      await expect(store.get(key)).resolves.toBeNull();
      await expect(store.head(key)).resolves.toBeNull();
      await expect(store.get(`${key}/deeper/still`)).resolves.toBeNull();
    });

    test("delete removes the blob and is idempotent", async () => {
      const key = freshKey();
      await store.put(key, rocket, "image/jpeg");
      await expect(store.delete(key)).resolves.toBeUndefined();
      await expect(store.head(key)).resolves.toBeNull();
      await expect(store.get(key)).resolves.toBeNull();
      await expect(store.delete(key)).resolves.toBeUndefined();
      await expect(store.delete(freshKey())).resolves.toBeUndefined();
    });

    test("move takes bytes, content type and metadata to the new key, overwriting it, and leaves nothing behind", async () => {
      const from = freshKey();
      const to = `trash/${from.slice("originals/".length)}`;
      await store.put(from, rocket, "image/jpeg", { width: "640" });
      await store.put(to, Buffer.from("older"), "text/plain");
      await expect(store.move(from, to)).resolves.toBe(true);
      await expect(store.head(from)).resolves.toBeNull();
      await expect(store.get(from)).resolves.toBeNull();
      const moved = await store.get(to);
      expect(moved).toMatchObject({ contentType: "image/jpeg", size: ROCKET_BYTES, metadata: { width: "640" } });
      expect(sha256(await readAll(moved!.body))).toBe(sha256(rocket));
      // And back: the sidecar travels both ways.
      await expect(store.move(to, from)).resolves.toBe(true);
      expect(await store.head(from)).toMatchObject({ contentType: "image/jpeg", metadata: { width: "640" } });
      await expect(store.head(to)).resolves.toBeNull();
      await store.delete(from);
      expect((await residue()).filter((r) => r.includes(from.slice("originals/".length)))).toEqual([]);
    });

    test("move of a missing key resolves false and creates nothing", async () => {
      const from = freshKey();
      const to = `trash/${from.slice("originals/".length)}`;
      await expect(store.move(from, to)).resolves.toBe(false);
      await expect(store.head(to)).resolves.toBeNull();
      expect((await residue()).filter((r) => r.includes(from.slice("originals/".length)))).toEqual([]);
    });

    test.each(TRAVERSAL_KEYS)("key %j is rejected by every operation", async (key) => {
      const body = createReadStream(ROCKET);
      try {
        await expect(store.put(key, body, "image/jpeg")).rejects.toBeInstanceOf(InvalidBlobKeyError);
      } finally {
        body.destroy();
      }
      await expect(store.put(key, rocket, "image/jpeg")).rejects.toBeInstanceOf(InvalidBlobKeyError);
      await expect(store.get(key)).rejects.toBeInstanceOf(InvalidBlobKeyError);
      await expect(store.head(key)).rejects.toBeInstanceOf(InvalidBlobKeyError);
      await expect(store.delete(key)).rejects.toBeInstanceOf(InvalidBlobKeyError);
      await expect(store.move(key, freshKey())).rejects.toBeInstanceOf(InvalidBlobKeyError);
      await expect(store.move(freshKey(), key)).rejects.toBeInstanceOf(InvalidBlobKeyError);
    });

    test("a content type that could inject headers is rejected", async () => {
      await expect(store.put(freshKey(), rocket, "image/jpeg\r\nX-Evil: 1")).rejects.toBeInstanceOf(TypeError);
      await expect(store.put(freshKey(), rocket, "")).rejects.toBeInstanceOf(TypeError);
    });

    test("a stream that errors halfway rejects with that error and leaves nothing", async () => {
      const before = await residue();
      const key = freshKey();
      const boom = new Error("client went away");
      await expect(store.put(key, failingStream(rocket, 50_000, boom), "image/jpeg")).rejects.toBe(boom);
      await expect(store.head(key)).resolves.toBeNull();
      await expect(store.get(key)).resolves.toBeNull();
      expect(await residue()).toEqual(before);
    });

    test("a large stream that errors after several MiB leaves nothing (aborted multipart on S3)", async () => {
      const before = await residue();
      const key = freshKey();
      const data = randomBytes(12 * 1024 * 1024);
      const boom = new Error("upload limit exceeded");
      await expect(store.put(key, failingStream(data, 11 * 1024 * 1024, boom), "image/jpeg")).rejects.toBe(boom);
      await expect(store.head(key)).resolves.toBeNull();
      expect(await residue()).toEqual(before);
    });

    test("a failed overwrite keeps the previous blob intact", async () => {
      const key = freshKey();
      await store.put(key, rocket, "image/jpeg");
      const boom = new Error("truncated upload");
      await expect(
        store.put(key, failingStream(Buffer.alloc(200_000, 7), 100_000, boom), "application/octet-stream"),
      ).rejects.toBe(boom);
      expect(await store.head(key)).toEqual({
        key,
        contentType: "image/jpeg",
        size: ROCKET_BYTES,
      });
      expect(sha256(await readAll((await store.get(key))!.body))).toBe(sha256(rocket));
    });
  });
}

/** A well-behaved multi-chunk stream (64 KiB chunks) over `data`. */
function chunkedStream(data: Buffer): Readable {
  async function* gen(): AsyncGenerator<Buffer> {
    for (let offset = 0; offset < data.length; offset += 64 * 1024) yield data.subarray(offset, offset + 64 * 1024);
  }
  return Readable.from(gen(), { objectMode: false });
}
