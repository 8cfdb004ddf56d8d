import { mkdtemp, readdir, readlink, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { randomUUID } from "node:crypto";
import sharp from "sharp";
import { ORIGINAL_HEADER_METADATA, originalHeaderMetadata, originalHeaderOf } from "@media-platform/contracts";
import { FilesystemBlobStore, originalKey } from "@media-platform/storage";
import { createMediaServer, type MediaServer } from "../src/server";
import { OriginalBufferPool, OriginalSource } from "../src/render/pipeline/original";
import { pipelineRender } from "./support/media-server";
import { FIXTURES_DIR } from "./support/memory-store";

describe("originals read from the filesystem store", () => {
  let dir: string;
  let store: FilesystemBlobStore;
  let media: MediaServer;
  let url: string;
  const rocket = () => readFile(path.join(FIXTURES_DIR, "rocket.jpg"));

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "media-original-reads-"));
    store = new FilesystemBlobStore(dir);
    media = createMediaServer({ store, render: pipelineRender() });
    url = await media.listen(0, "127.0.0.1");
  });
  afterAll(async () => {
    await media.close();
    await rm(dir, { recursive: true, force: true });
  });
  afterEach(() => jest.restoreAllMocks());

  async function stored(metadata?: Record<string, string>): Promise<string> {
    const id = randomUUID();
    await store.put(originalKey(id), await rocket(), "image/jpeg", metadata);
    return id;
  }
  const get = async (target: string) => {
    const res = await fetch(`${url}${target}`);
    return { status: res.status, xCache: res.headers.get("x-cache"), body: Buffer.from(await res.arrayBuffer()) };
  };

  it("a MISS plans from the header facts stored with the blob, without reading the header again; same bytes out", async () => {
    const header = originalHeaderOf(await sharp(await rocket()).metadata());
    const withFacts = await stored(originalHeaderMetadata(header));
    const without = await stored();
    const metadata = jest.spyOn(sharp.prototype, "metadata");

    const fast = await get(`/crop:width=300:height=200/${withFacts}.jpg`);
    expect(fast.status).toBe(200);
    expect(fast.xCache).toBe("MISS");
    expect(metadata).not.toHaveBeenCalled();

    const slow = await get(`/crop:width=300:height=200/${without}.jpg`);
    expect(slow.status).toBe(200);
    expect(metadata).toHaveBeenCalledTimes(1);
    expect(fast.body.equals(slow.body)).toBe(true);
    const info = await sharp(fast.body).metadata();
    expect([info.width, info.height, info.format]).toEqual([300, 200, "jpeg"]);
  });

  it("facts that do not parse are ignored: the header is read from the bytes", async () => {
    const id = await stored({ [ORIGINAL_HEADER_METADATA]: '{"width":"wide"}' });
    const metadata = jest.spyOn(sharp.prototype, "metadata");
    const res = await get(`/thumbnail:size=64/${id}.jpg`);
    expect(res.status).toBe(200);
    expect(metadata).toHaveBeenCalledTimes(1);
    const info = await sharp(res.body).metadata();
    expect([info.width, info.height]).toEqual([64, 64]);
  });

  it("planned limits still apply to stored facts: work above the budget is refused before any decode", async () => {
    const header = originalHeaderOf(await sharp(await rocket()).metadata())!;
    const id = await stored(originalHeaderMetadata(header));
    const tight = createMediaServer({
      store,
      render: pipelineRender(undefined, header.width * header.height - 1),
      options: { limitInputPixels: header.width * header.height - 1 },
    });
    const base = await tight.listen(0, "127.0.0.1");
    try {
      const pipeline = jest.spyOn(sharp.prototype, "toBuffer");
      const res = await fetch(`${base}/grayscale/${id}.jpg`);
      expect(res.status).toBe(422);
      expect(((await res.json()) as { type: string }).type).toBe("https://media-platform.dev/problems/image-too-large");
      expect(pipeline).not.toHaveBeenCalled();
    } finally {
      await tight.close();
    }
  });

  const linux = process.platform === "linux" ? it : it.skip;
  linux("leaves no descriptor open on the store's files, after MISSes and after refusals", async () => {
    const ids = await Promise.all([stored(), stored(), stored()]);
    for (const id of ids) {
      expect((await get(`/thumbnail:size=64/${id}.jpg`)).status).toBe(200);
      // Refused from the header (output above the cap): the original is opened, never decoded.
      expect((await get(`/resize:width=20000:height=20000/${id}.jpg`)).status).toBe(400);
    }
    await new Promise((r) => setTimeout(r, 50));
    const fds = await readdir("/proc/self/fd");
    const targets = await Promise.all(fds.map((fd) => readlink(`/proc/self/fd/${fd}`).catch(() => "")));
    expect(targets.filter((t) => t.startsWith(dir))).toEqual([]);
  });
});

describe("OriginalSource over positional reads", () => {
  it("reads a large original header first: the header from a prefix, the rest only when asked", async () => {
    const jpeg = await readFile(path.join(FIXTURES_DIR, "rocket.jpg"));
    // 6 MiB: the fixture's bytes first (its header parses from them), the rest never decoded here.
    const bytes = Buffer.concat([jpeg, Buffer.alloc(6 * 1024 * 1024 - jpeg.length)]);
    const reads: Array<[number, number]> = [];
    const reader = {
      size: bytes.length,
      read: async (target: Buffer, position: number) => {
        reads.push([position, target.length]);
        return bytes.copy(target, 0, position, position + target.length);
      },
    };
    const pool = new OriginalBufferPool(64 * 1024 * 1024, 32 * 1024 * 1024);
    const acquire = jest.spyOn(pool, "acquire");
    const source = new OriginalSource(reader, pool);
    const meta = await source.metadata({});
    expect([meta.width, meta.height, meta.format]).toEqual([640, 427, "jpeg"]);
    expect(reads).toEqual([[0, 64 * 1024]]);
    // The header phase holds a buffer the size of its prefix, not of the original.
    expect(acquire.mock.calls).toEqual([[64 * 1024]]);
    const all = await source.all();
    expect(all.equals(bytes)).toBe(true);
    expect(reads).toEqual([
      [0, 64 * 1024],
      [64 * 1024, bytes.length - 64 * 1024],
    ]);
    expect(acquire.mock.calls).toEqual([[64 * 1024], [bytes.length]]);
    await source.close();
    // Both back in the pool: the prefix's buffer when the whole read replaced it, then the whole one.
    expect(pool.idleBytes).toBe(8 * 1024 * 1024 + 64 * 1024);
  });

  it("a request refused from the header never acquires a buffer the size of the original", async () => {
    const jpeg = await readFile(path.join(FIXTURES_DIR, "rocket.jpg"));
    const size = 80 * 1024 * 1024;
    const pool = new OriginalBufferPool(64 * 1024 * 1024, 32 * 1024 * 1024);
    const acquire = jest.spyOn(pool, "acquire");
    const source = new OriginalSource(
      {
        size,
        read: async (target: Buffer, position: number) => jpeg.copy(target, 0, position, position + target.length),
      },
      pool,
    );
    expect((await source.metadata({})).width).toBe(640);
    await source.close();
    expect(acquire.mock.calls).toEqual([[64 * 1024]]);
    expect(pool.idleBytes).toBe(64 * 1024);
  });

  it("reads an original up to 4 MiB whole, in one read", async () => {
    const jpeg = await readFile(path.join(FIXTURES_DIR, "rocket.jpg"));
    const reads: number[] = [];
    const source = new OriginalSource({
      size: jpeg.length,
      read: async (target: Buffer, position: number) => {
        reads.push(target.length);
        return jpeg.copy(target, 0, position, position + target.length);
      },
    });
    expect((await source.metadata({})).width).toBe(640);
    expect((await source.all()).equals(jpeg)).toBe(true);
    expect(reads).toEqual([jpeg.length]);
    await source.close();
  });
});

describe("OriginalBufferPool", () => {
  it("reuses a released buffer for an original that fits, never hands out one still in use", () => {
    const pool = new OriginalBufferPool(1 << 20, 1 << 19);
    const a = pool.acquire(100_000);
    const b = pool.acquire(100_000);
    expect(a).not.toBe(b);
    expect(a.length).toBe(131_072); // rounded up to a power of two
    pool.release(a);
    expect(pool.idleBytes).toBe(131_072);
    expect(pool.acquire(120_000)).toBe(a);
    expect(pool.idleBytes).toBe(0);
    expect(pool.acquire(1000)).not.toBe(b);
  });

  it("keeps at most maxPooledBytes idle, dropping the smallest first, and never pools an oversized buffer", () => {
    const pool = new OriginalBufferPool(300_000, 300_000);
    const small = pool.acquire(60_000); // 64 KiB
    const large = pool.acquire(200_000); // 256 KiB
    const huge = pool.acquire(290_000); // 512 KiB would pass maxBufferBytes: exactly its size
    expect([small.length, large.length, huge.length]).toEqual([65_536, 262_144, 290_000]);
    pool.release(huge);
    expect(pool.idleBytes).toBe(0);
    pool.release(large);
    pool.release(small);
    expect(pool.idleBytes).toBe(262_144);
    expect(pool.acquire(10)).toBe(large);
  });
});
