import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import sharp from "sharp";
import request from "supertest";
import { originalKey } from "@media-platform/storage";
import { etagOf, ifNoneMatchMatches, makeEntry } from "../src/cache/entry";
import { MemoryCache } from "../src/cache/memory-cache";
import { startTestMedia } from "./support/media-server";

describe("cache entries", () => {
  it("carry a strong ETag (quoted base64url sha256 of the sharp/libvips versions and the bytes) and precomputed HIT headers", () => {
    const body = Buffer.from("hello image");
    const entry = makeEntry(body, "image/png", undefined, { assetId: "a1", cacheControl: "public, max-age=60" });
    const versions = `${Object.entries(sharp.versions)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([name, version]) => `${name} ${version}`)
      .join("; ")}\0`;
    expect(versions).toContain(`sharp ${sharp.versions.sharp}; `);
    expect(versions).toContain(`vips ${sharp.versions.vips}`);
    expect(entry.etag).toBe(`"${createHash("sha256").update(versions).update(body).digest("base64url")}"`);
    expect(etagOf(body)).toBe(entry.etag);
    expect(entry.hitHeaders).toEqual({
      "Content-Type": "image/png",
      "Content-Length": String(body.length),
      ETag: entry.etag,
      "Cache-Control": "public, max-age=60",
      "Surrogate-Key": "a1",
      "Cache-Tag": "a1",
      "X-Cache": "HIT",
      "X-Content-Type-Options": "nosniff",
      "Access-Control-Allow-Origin": "*",
      "Access-Control-Expose-Headers": "X-Cache",
    });
    // The hot path writes the flat lists: the same headers, tags and Cache-Control included.
    expect(entry.hitHeaderList).toEqual(Object.entries(entry.hitHeaders).flatMap(([k, v]) => [k, String(v)]));
    expect(entry.notModifiedHeaderList).toEqual([
      "ETag",
      entry.etag,
      "Cache-Control",
      "public, max-age=60",
      "Surrogate-Key",
      "a1",
      "Cache-Tag",
      "a1",
      "X-Cache",
      "HIT",
      "X-Content-Type-Options",
      "nosniff",
      "Access-Control-Allow-Origin",
      "*",
      "Access-Control-Expose-Headers",
      "X-Cache",
    ]);
  });

  it("If-None-Match: exact, list, weak and * match; others do not", () => {
    const etag = '"abc"';
    expect(ifNoneMatchMatches(undefined, etag)).toBe(false);
    expect(ifNoneMatchMatches('"abc"', etag)).toBe(true);
    expect(ifNoneMatchMatches('"x", "abc"', etag)).toBe(true);
    expect(ifNoneMatchMatches('W/"abc"', etag)).toBe(true);
    expect(ifNoneMatchMatches("*", etag)).toBe(true);
    expect(ifNoneMatchMatches('"abcd"', etag)).toBe(false);
    expect(ifNoneMatchMatches("abc", etag)).toBe(false);
  });
});

describe("MemoryCache", () => {
  const entry = (bytes: number) => makeEntry(Buffer.alloc(bytes, 1), "image/png");

  it("evicts the least recently used entries to stay within its byte budget", () => {
    const cache = new MemoryCache({ maxBytes: 10_000, maxEntryBytes: 5000 });
    cache.set("a", entry(3000));
    cache.set("b", entry(3000));
    expect(cache.get("a")).toBeDefined(); // a is now more recent than b
    cache.set("c", entry(3000));
    expect(cache.get("b")).toBeUndefined();
    expect(cache.get("a")).toBeDefined();
    expect(cache.get("c")).toBeDefined();
    expect(cache.bytes).toBeLessThanOrEqual(10_000);
  });

  it("does not keep entries above maxEntryBytes, and a budget of 0 disables it", () => {
    const cache = new MemoryCache({ maxBytes: 1_000_000, maxEntryBytes: 1000 });
    cache.set("big", entry(1001));
    expect(cache.get("big")).toBeUndefined();
    cache.set("small", entry(1000));
    expect(cache.get("small")).toBeDefined();
    const off = new MemoryCache({ maxBytes: 0, maxEntryBytes: 1000 });
    off.set("x", entry(10));
    expect(off.get("x")).toBeUndefined();
    expect(off.size).toBe(0);
  });
});

describe("the in-process tier in the service", () => {
  it("with CACHE_MEMORY_BYTES=0 every request is computed (MISS)", async () => {
    const media = await startTestMedia({ cache: { memoryBytes: 0, ttlSeconds: 60, maxEntryBytes: 1 << 20 } });
    try {
      const id = await media.store.putFixture("rocket.jpg");
      const a = await request(media.server).get(`/thumbnail:size=50/${id}.jpg`);
      const b = await request(media.server).get(`/thumbnail:size=50/${id}.jpg`);
      expect([a.headers["x-cache"], b.headers["x-cache"]]).toEqual(["MISS", "MISS"]);
      expect(b.body.equals(a.body)).toBe(true);
    } finally {
      await media.close();
    }
  });

  it("a blob body that breaks off mid-read is a 503 (storage), not a 500", async () => {
    const media = await startTestMedia();
    try {
      const id = await media.store.putFixture("rocket.jpg");
      const store = media.store;
      const get = store.get.bind(store);
      store.get = async (key: string) => {
        const blob = await get(key);
        if (!blob || key !== originalKey(id)) return blob;
        const body = new Readable({
          read() {
            this.destroy(new Error("ECONNRESET"));
          },
        });
        return { ...blob, body };
      };
      const res = await request(media.server).get(`/thumbnail:size=50/${id}.jpg`);
      expect(res.status).toBe(503);
      expect(res.headers["retry-after"]).toBe("5");
    } finally {
      await media.close();
    }
  });
});
