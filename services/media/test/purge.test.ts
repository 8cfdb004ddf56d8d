import { Redis } from "ioredis";
import sharp from "sharp";
import { originalKey } from "@media-platform/storage";
import { PURGE_PATH } from "@media-platform/contracts";
import { countingRender, gatedRender, startTestMedia, type TestMedia } from "./support/media-server";
import { MemoryBlobStore } from "./support/memory-store";
import { deleteRedisPrefix, describeWithRedis, TEST_REDIS_URL, uniqueRedisPrefix } from "./support/redis";

const SECRET = "purge-secret-for-tests-0123456789";

async function get(url: string, init?: RequestInit) {
  const res = await fetch(url, init);
  return { res, body: Buffer.from(await res.arrayBuffer()) };
}

const purge = (media: { url: string }, assetIds: string[], secret = SECRET) =>
  fetch(`${media.url}${PURGE_PATH}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${secret}`, "Content-Type": "application/json" },
    body: JSON.stringify({ assetIds }),
  });

/** Polls `url` until `done` holds; returns the milliseconds it took (the propagation delay), bounded by the 2 s. */
async function until(
  url: string,
  done: (r: { res: Response; body: Buffer }) => boolean | Promise<boolean>,
  boundMs = 2000,
) {
  const start = performance.now();
  for (;;) {
    const r = await get(url);
    if (await done(r)) return performance.now() - start;
    if (performance.now() - start > boundMs) throw new Error(`${url} did not change within ${boundMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const replaceWith = async (store: MemoryBlobStore, id: string, color: string) =>
  store.put(
    originalKey(id),
    await sharp({ create: { width: 300, height: 200, channels: 3, background: color } })
      .png()
      .toBuffer(),
    "image/png",
  );
const centrePixel = async (png: Buffer) => {
  const { data } = await sharp(png)
    .extract({ left: 10, top: 10, width: 1, height: 1 })
    .raw()
    .toBuffer({ resolveWithObject: true });
  return [...data.subarray(0, 3)];
};

describe("purge without Redis (embedded mode: one media process told over HTTP)", () => {
  let media: TestMedia;
  beforeAll(async () => {
    media = await startTestMedia({ purgeSecret: SECRET, render: countingRender().render });
  });
  afterAll(() => media.close());

  it("tags every 200 and 304 with Surrogate-Key and Cache-Tag; unversioned URLs and an unsigned ?v= (unverifiable) revalidate", async () => {
    const id = await media.store.putFixture("astronaut.png");
    const plain = await get(`${media.url}/thumbnail:size=64/${id}.png`);
    expect(plain.res.status).toBe(200);
    expect(plain.res.headers.get("surrogate-key")).toBe(id);
    expect(plain.res.headers.get("cache-tag")).toBe(id);
    expect(plain.res.headers.get("cache-control")).toBe("public, max-age=3600, stale-while-revalidate=60");
    const hit = await get(`${media.url}/thumbnail:size=64/${id}.png`);
    expect(hit.res.headers.get("x-cache")).toBe("HIT");
    expect(hit.res.headers.get("surrogate-key")).toBe(id);
    // The HIT comes from the hot path's flat header list: the same tags, Cache-Control and nosniff.
    expect(hit.res.headers.get("cache-tag")).toBe(id);
    expect(hit.res.headers.get("cache-control")).toBe("public, max-age=3600, stale-while-revalidate=60");
    expect(hit.res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(hit.res.headers.get("x-request-id")).toBeTruthy();
    // The service cannot check v against the asset's version: a v nobody signed is not immutable.
    const versioned = await get(`${media.url}/thumbnail:size=64/${id}.png?v=3`);
    expect(versioned.res.status).toBe(200);
    expect(versioned.res.headers.get("cache-control")).toBe("public, max-age=3600, stale-while-revalidate=60");
    const notModified = await get(`${media.url}/thumbnail:size=64/${id}.png`, {
      headers: { "If-None-Match": plain.res.headers.get("etag")! },
    });
    expect(notModified.res.status).toBe(304);
    expect(notModified.res.headers.get("cache-tag")).toBe(id);
    expect(notModified.res.headers.get("surrogate-key")).toBe(id);
    expect(notModified.res.headers.get("cache-control")).toBe("public, max-age=3600, stale-while-revalidate=60");
    expect(notModified.res.headers.get("x-content-type-options")).toBe("nosniff");
  });

  it("refuses purges without the secret (401) and malformed ones (400), and caches neither", async () => {
    const id = await media.store.putFixture("rocket.jpg");
    const noAuth = await fetch(`${media.url}${PURGE_PATH}`, { method: "POST", body: "{}" });
    expect(noAuth.status).toBe(401);
    expect(noAuth.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect((await purge(media, [id], "wrong-secret-wrong-secret")).status).toBe(401);
    const bad = await purge(media, ["not-a-uuid"]);
    expect(bad.status).toBe(400);
    const malformed = await fetch(`${media.url}${PURGE_PATH}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${SECRET}`, "Content-Type": "application/json" },
      body: "{nope",
    });
    expect(malformed.status).toBe(400);
    expect((await purge(media, [id])).status).toBe(204);
  });

  it("GET /internal/generation/<id> tells edge caches the asset's generation, which a purge moves", async () => {
    const id = await media.store.putFixture("rocket.jpg");
    const before = await fetch(`${media.url}/internal/generation/${id}`);
    expect(before.status).toBe(204);
    expect(before.headers.get("cache-control")).toBe("public, max-age=1");
    const generation = before.headers.get("x-asset-generation");
    await purge(media, [id]);
    const after = await fetch(`${media.url}/internal/generation/${id}`);
    expect(after.headers.get("x-asset-generation")).not.toBe(generation);
    expect((await fetch(`${media.url}/internal/generation/`)).headers.get("x-asset-generation")).toBe("0");
  });

  it("a HIT answers 404 right after the original is deleted and purged", async () => {
    const id = await media.store.putFixture("astronaut.png");
    const url = `${media.url}/thumbnail:size=100/${id}.png`;
    await get(url);
    expect((await get(url)).res.headers.get("x-cache")).toBe("HIT");
    await media.store.delete(originalKey(id));
    expect((await purge(media, [id])).status).toBe(204);
    const after = await get(url);
    expect(after.res.status).toBe(404);
    expect(after.res.headers.get("cache-control")).toBe("no-store");
  });

  it("a replaced original is rendered anew by a URL that was a HIT", async () => {
    const id = await media.store.putFixture("astronaut.png");
    await replaceWith(media.store, id, "#ff0000");
    const url = `${media.url}/thumbnail:size=50/${id}.png`;
    await get(url);
    const before = await get(url);
    expect(before.res.headers.get("x-cache")).toBe("HIT");
    expect(await centrePixel(before.body)).toEqual([255, 0, 0]);
    await replaceWith(media.store, id, "#0000ff");
    await purge(media, [id]);
    const after = await get(url);
    expect(after.res.status).toBe(200);
    expect(after.res.headers.get("x-cache")).toBe("MISS");
    expect(await centrePixel(after.body)).toEqual([0, 0, 255]);
  });

  it("a render that started before the purge neither serves later requests nor enters the cache", async () => {
    const render = gatedRender();
    const gated = await startTestMedia({ purgeSecret: SECRET, render: render.render });
    try {
      const id = await gated.store.putFixture("astronaut.png");
      await replaceWith(gated.store, id, "#ff0000");
      const url = `${gated.url}/thumbnail:size=50/${id}.png`;
      const first = get(url);
      await render.started(1);
      await replaceWith(gated.store, id, "#00ff00");
      await purge(gated, [id]);
      const second = get(url);
      await render.started(2);
      render.release();
      expect(await centrePixel((await first).body)).toEqual([255, 0, 0]);
      expect(await centrePixel((await second).body)).toEqual([0, 255, 0]);
      const third = await get(url);
      expect(third.res.headers.get("x-cache")).toBe("HIT");
      expect(await centrePixel(third.body)).toEqual([0, 255, 0]);
    } finally {
      await gated.close();
    }
  });
});

describeWithRedis("purge across two media replicas sharing Redis", () => {
  const prefix = uniqueRedisPrefix();
  const store = new MemoryBlobStore();
  let a: TestMedia;
  let b: TestMedia;
  const redis = new Redis(TEST_REDIS_URL);
  const delays: number[] = [];

  beforeAll(async () => {
    const options = { store, purgeSecret: SECRET, redis: { url: TEST_REDIS_URL, keyPrefix: prefix, timeoutMs: 500 } };
    a = await startTestMedia(options);
    b = await startTestMedia(options);
  });
  afterAll(async () => {
    await Promise.all([a.close(), b.close()]);
    await deleteRedisPrefix(prefix);
    redis.disconnect();
    process.stdout.write(`purge propagation delays (ms): ${delays.map((d) => d.toFixed(1)).join(", ")}\n`);
  });

  it("a URL that was a HIT on both replicas answers 404 on both after one purge call", async () => {
    const id = await store.putFixture("rocket.jpg");
    const path1 = `/thumbnail:size=80/${id}.jpg`;
    expect((await get(`${a.url}${path1}`)).res.headers.get("x-cache")).toBe("MISS");
    expect((await get(`${a.url}${path1}`)).res.headers.get("x-cache")).toBe("HIT");
    expect((await get(`${b.url}${path1}`)).res.headers.get("x-cache")).toBe("HIT"); // from Redis
    expect((await get(`${b.url}${path1}`)).res.headers.get("x-cache")).toBe("HIT"); // memory tier
    expect(await redis.keys(`${prefix}r:*${id}*`)).toHaveLength(1);

    await store.delete(originalKey(id));
    expect((await purge(a, [id])).status).toBe(204); // one replica is told; Redis tells the other
    delays.push(await until(`${b.url}${path1}`, (r) => r.res.status === 404));
    expect((await get(`${a.url}${path1}`)).res.status).toBe(404);
    // The stored results are gone from Redis too, and the generation moved on.
    expect(await redis.keys(`${prefix}r:*${id}*`)).toHaveLength(0);
    expect(await redis.get(`${prefix}gen:${id}`)).toBe("1");
  });

  it("a replace is seen by a URL that was a HIT on the other replica", async () => {
    const id = await store.putFixture("astronaut.png");
    await replaceWith(store, id, "#ff0000");
    const url = `/thumbnail:size=60/${id}.png`;
    await get(`${a.url}${url}`);
    await get(`${b.url}${url}`);
    const hit = await get(`${b.url}${url}`);
    expect(hit.res.headers.get("x-cache")).toBe("HIT");
    expect(await centrePixel(hit.body)).toEqual([255, 0, 0]);
    await replaceWith(store, id, "#0000ff");
    await purge(a, [id]);
    delays.push(
      await until(`${b.url}${url}`, async (r) => r.res.status === 200 && (await centrePixel(r.body))[2] === 255),
    );
    const now = await get(`${b.url}${url}`);
    expect(await centrePixel(now.body)).toEqual([0, 0, 255]);
    expect(await centrePixel((await get(`${a.url}${url}`)).body)).toEqual([0, 0, 255]);
  });
});
