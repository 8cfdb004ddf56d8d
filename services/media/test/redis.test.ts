import { Writable } from "node:stream";
import { Redis } from "ioredis";
import pino from "pino";
import { ROUTE_MEDIA } from "../src/app";
import { countingRender, gatedRender, metricValue, startTestMedia, type TestMedia } from "./support/media-server";
import { MemoryBlobStore } from "./support/memory-store";
import {
  closedPortUrl,
  deleteRedisPrefix,
  describeWithRedis,
  startRedisProxy,
  TEST_REDIS_URL,
  uniqueRedisPrefix,
} from "./support/redis";

const TIMEOUT_MS = 500;

/** Redis-tier hits (media_cache_lookups_total{tier="redis",result="hit"}). */
const redisHits = (media: TestMedia) =>
  metricValue(media, "media_cache_lookups_total", { tier: "redis", result: "hit" });
/** Failed Redis commands and connection errors (dependency_errors_total{dependency="redis"}). */
const redisErrors = (media: TestMedia) => metricValue(media, "dependency_errors_total", { dependency: "redis" });

async function fetchBytes(url: string) {
  const res = await fetch(url);
  return { res, body: Buffer.from(await res.arrayBuffer()) };
}

/** A pino logger whose lines the test can read. */
function capturingLogger() {
  const lines: Array<{ level: number; msg: string; operation?: string }> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split("\n").filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: "warn" }, stream), lines };
}

describeWithRedis("Redis result tier", () => {
  const prefix = uniqueRedisPrefix();
  const store = new MemoryBlobStore();
  const started: TestMedia[] = [];
  const redis = new Redis(TEST_REDIS_URL);

  const start = async (options: Parameters<typeof startTestMedia>[0] = {}) => {
    const media = await startTestMedia({
      store,
      redis: { url: TEST_REDIS_URL, keyPrefix: prefix, timeoutMs: TIMEOUT_MS },
      ...options,
    });
    started.push(media);
    return media;
  };

  afterAll(async () => {
    await Promise.all(started.map((m) => m.close()));
    await deleteRedisPrefix(prefix);
    redis.disconnect();
  });

  it("answers HIT after a restart: a second instance's first request is served from Redis", async () => {
    const id = await store.putFixture("astronaut.png");
    const path = `/thumbnail:size=150/${id}.png`;
    const firstRender = countingRender();
    const first = await start({ render: firstRender.render });
    const miss = await fetchBytes(`${first.url}${path}`);
    expect(miss.res.headers.get("x-cache")).toBe("MISS");
    await first.close();

    const secondRender = countingRender();
    const second = await start({ render: secondRender.render });
    const hit = await fetchBytes(`${second.url}${path}`);
    expect(hit.res.status).toBe(200);
    expect(hit.res.headers.get("x-cache")).toBe("HIT");
    expect(hit.res.headers.get("content-type")).toBe("image/png");
    expect(hit.res.headers.get("etag")).toBe(miss.res.headers.get("etag"));
    expect(hit.body.equals(miss.body)).toBe(true);
    expect(secondRender.calls).toHaveLength(0);
    expect(await redisHits(second)).toBe(1);
    // Filled into the in-process tier: the next one is a hot-path hit without Redis.
    const again = await fetchBytes(`${second.url}${path}`);
    expect(again.res.headers.get("x-cache")).toBe("HIT");
    expect(await redisHits(second)).toBe(1);
    expect(second.memory.get(path)).toBeDefined();

    // Stored with the TTL, as <content type>\n<etag>\n<bytes>.
    const ttl = await redis.ttl(`${prefix}r:0:${path}`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(7 * 86400);
    const raw = await redis.getBuffer(`${prefix}r:0:${path}`);
    expect(raw!.subarray(0, 10).toString()).toBe("image/png\n");
    const etag = miss.res.headers.get("etag")!;
    expect(raw!.subarray(10, 10 + etag.length + 1).toString()).toBe(`${etag}\n`);
    expect(raw!.subarray(10 + etag.length + 1).equals(miss.body)).toBe(true);
  });

  it("stores only the canonical spelling; another spelling on another replica is a Redis-tier HIT of it", async () => {
    const id = await store.putFixture("astronaut.png");
    const canonical = `/thumbnail:size=151/${id}.png`;
    const writer = await start({ render: countingRender().render });
    const miss = await fetchBytes(`${writer.url}/thumbnail:size=0151/${id.toUpperCase()}.png`);
    expect([miss.res.status, miss.res.headers.get("x-cache")]).toEqual([200, "MISS"]);
    expect(miss.res.headers.get("link")).toBe(`<${canonical}>; rel="canonical"`);
    expect(await redis.exists(`${prefix}r:0:${canonical}`)).toBe(1);
    expect(await redis.keys(`${prefix}r:*${id.toUpperCase()}*`)).toEqual([]);
    expect(await redis.keys(`${prefix}r:*size=0151*`)).toEqual([]);
    expect(writer.memory.get(`/thumbnail:size=0151/${id.toUpperCase()}.png`)).toBeUndefined();
    expect(writer.memory.get(canonical)).toBeDefined();

    const readerRender = countingRender();
    const reader = await start({ render: readerRender.render });
    const hit = await fetchBytes(`${reader.url}/thumbnail:size=%31%35%31/${id}.png`);
    expect([hit.res.status, hit.res.headers.get("x-cache"), hit.res.headers.get("etag")]).toEqual([
      200,
      "HIT",
      miss.res.headers.get("etag"),
    ]);
    expect(hit.res.headers.get("link")).toBe(`<${canonical}>; rel="canonical"`);
    expect(readerRender.calls).toHaveLength(0);
    expect(reader.memory.get(canonical)).toBeDefined();
  });

  it("asks Redis once per MISS: the hot path's lookup is handed to the flight, which then locks and stores", async () => {
    const id = await store.putFixture("astronaut.png");
    const path = `/thumbnail:size=154/${id}.png`;
    const media = await start({ render: countingRender().render });
    const lookups = jest.spyOn(media.redis!, "lookup");
    const locks = jest.spyOn(media.redis!, "tryLock");
    try {
      const miss = await fetchBytes(`${media.url}${path}`);
      expect([miss.res.status, miss.res.headers.get("x-cache")]).toEqual([200, "MISS"]);
      expect(lookups).toHaveBeenCalledTimes(1);
      expect(locks).toHaveBeenCalledTimes(1);
      // Counted once, by the flight, as before.
      expect(await metricValue(media, "media_cache_lookups_total", { tier: "redis", result: "miss" })).toBe(1);
      // Stored under the generation that one lookup read.
      expect((await redis.getBuffer(`${prefix}r:0:${path}`))!.subarray(10 + 1 + 45).equals(miss.body)).toBe(true);
      // An invalid URL is the Express app's: no Redis lookup hands anything on, and none is needed.
      const invalid = await fetch(`${media.url}/thumbnail:size=0/${id}.png`);
      expect(invalid.status).toBe(400);
    } finally {
      lookups.mockRestore();
      locks.mockRestore();
    }
  });

  it("reads values stored before the ETag line (<content type>\\n<bytes>) with the ETag computed from the bytes", async () => {
    const id = await store.putFixture("astronaut.png");
    const path = `/thumbnail:size=152/${id}.png`;
    const writer = await start({ render: countingRender().render });
    const miss = await fetchBytes(`${writer.url}${path}`);
    // Rewrite the stored value in the old layout, as an older replica would have written it.
    await redis.set(`${prefix}r:0:${path}`, Buffer.concat([Buffer.from("image/png\n"), miss.body]), "EX", 60);
    const reader = await start({ render: countingRender().render });
    const hit = await fetchBytes(`${reader.url}${path}`);
    expect(hit.res.headers.get("x-cache")).toBe("HIT");
    expect(hit.res.headers.get("content-type")).toBe("image/png");
    expect(hit.res.headers.get("etag")).toBe(miss.res.headers.get("etag"));
    expect(hit.body.equals(miss.body)).toBe(true);
  });

  it("a Redis-tier hit reads the generation and the value in one round trip (lookup) and serves the stored ETag", async () => {
    const id = await store.putFixture("astronaut.png");
    const path = `/thumbnail:size=154/${id}.png`;
    const writer = await start({ render: countingRender().render });
    const miss = await fetchBytes(`${writer.url}${path}`);
    const reader = await start({ render: countingRender().render });
    const commands: string[] = [];
    const client = reader.redis!.client;
    const sendCommand = client.sendCommand.bind(client);
    client.sendCommand = ((command: { name: string }) => {
      commands.push(command.name);
      return sendCommand(command as never);
    }) as typeof client.sendCommand;
    const hit = await fetchBytes(`${reader.url}${path}`);
    client.sendCommand = sendCommand;
    expect(hit.res.headers.get("x-cache")).toBe("HIT");
    expect(hit.res.headers.get("etag")).toBe(miss.res.headers.get("etag"));
    // One script call (EVALSHA, or EVAL the first time the script is unknown), nothing else.
    expect(commands.filter((c) => c !== "evalsha" && c !== "eval")).toEqual([]);
    expect(commands.length).toBeGreaterThanOrEqual(1);
    expect(commands.at(-1)).toMatch(/^eval/);
    // After a purge the lookup sees the new generation: the next request renders again.
    await reader.purger.purge([id]);
    const after = await fetchBytes(`${reader.url}${path}`);
    expect(after.res.headers.get("x-cache")).toBe("MISS");
  });

  it("a Redis-tier hit is answered before Express (route hot_path): 200, HEAD and 304, counted as a memory miss and a Redis hit", async () => {
    const id = await store.putFixture("astronaut.png");
    const path = `/thumbnail:size=156/${id}.png`;
    const writer = await start({ render: countingRender().render });
    const miss = await fetchBytes(`${writer.url}${path}`);
    const etag = miss.res.headers.get("etag")!;
    const httpCount = async (media: TestMedia, route: string, status: string) => {
      const { values } = await media.metrics.registry.getSingleMetric("http_request_duration_seconds")!.get();
      return values
        .filter((v) => (v as { metricName?: string }).metricName === "http_request_duration_seconds_count")
        .filter((v) => v.labels.route === route && String(v.labels.status_code) === status)
        .reduce((sum, v) => sum + v.value, 0);
    };
    const lookups = (media: TestMedia, tier: string, result: string) =>
      metricValue(media, "media_cache_lookups_total", { tier, result });

    // GET: bytes, headers and request id as a memory hit would give them.
    const get = await start({ render: countingRender().render });
    const hit = await fetch(`${get.url}${path}`, { headers: { "X-Request-Id": "redis-hot-1" } });
    const body = Buffer.from(await hit.arrayBuffer());
    expect(hit.status).toBe(200);
    expect(body.equals(miss.body)).toBe(true);
    expect(
      Object.fromEntries(
        [
          "x-cache",
          "etag",
          "content-type",
          "content-length",
          "surrogate-key",
          "x-content-type-options",
          "x-request-id",
          "cache-control",
        ].map((h) => [h, hit.headers.get(h)]),
      ),
    ).toEqual({
      "x-cache": "HIT",
      etag,
      "content-type": "image/png",
      "content-length": String(miss.body.length),
      "surrogate-key": id,
      "x-content-type-options": "nosniff",
      "x-request-id": "redis-hot-1",
      "cache-control": miss.res.headers.get("cache-control"),
    });
    expect(await httpCount(get, "hot_path", "200")).toBe(1);
    expect(await httpCount(get, ROUTE_MEDIA, "200")).toBe(0);
    expect([
      await lookups(get, "memory", "miss"),
      await lookups(get, "redis", "hit"),
      await lookups(get, "redis", "miss"),
    ]).toEqual([1, 1, 0]);
    expect(get.memory.get(path)?.etag).toBe(etag);

    // HEAD and a revalidation on fresh replicas: the same path, no body / 304.
    const head = await start({ render: countingRender().render });
    const headRes = await fetch(`${head.url}${path}`, { method: "HEAD" });
    expect([headRes.status, headRes.headers.get("x-cache"), headRes.headers.get("content-length")]).toEqual([
      200,
      "HIT",
      String(miss.body.length),
    ]);
    expect(await httpCount(head, "hot_path", "200")).toBe(1);
    const revalidate = await start({ render: countingRender().render });
    const notModified = await fetch(`${revalidate.url}${path}`, { headers: { "If-None-Match": etag } });
    expect([notModified.status, notModified.headers.get("etag"), notModified.headers.get("x-cache")]).toEqual([
      304,
      etag,
      "HIT",
    ]);
    expect(await httpCount(revalidate, "hot_path", "304")).toBe(1);
    expect(await httpCount(revalidate, ROUTE_MEDIA, "304")).toBe(0);
  });

  it("keeps an asset's generation after its first lookup (then one GET per lookup) and forgets it on a purge another replica made", async () => {
    const id = await store.putFixture("astronaut.png");
    const path = `/thumbnail:size=160/${id}.png`;
    const a = await start({ render: countingRender().render });
    expect((await fetchBytes(`${a.url}${path}`)).res.headers.get("x-cache")).toBe("MISS");
    const stale = await redis.getBuffer(`${prefix}r:0:${path}`);
    expect(stale).not.toBeNull();
    // Memory tier off: every request of b is a Redis-tier lookup.
    const b = await start({
      render: countingRender().render,
      cache: { memoryBytes: 0, ttlSeconds: 60, maxEntryBytes: 10_000_000 },
    });
    const commands: string[] = [];
    const client = b.redis!.client;
    const sendCommand = client.sendCommand.bind(client);
    client.sendCommand = ((command: { name: string }) => {
      commands.push(command.name);
      return sendCommand(command as never);
    }) as typeof client.sendCommand;
    const lookupCommands = async () => {
      commands.length = 0;
      const { res } = await fetchBytes(`${b.url}${path}`);
      return [res.headers.get("x-cache"), commands.map((c) => (c.startsWith("eval") ? "script" : c))];
    };
    expect(await lookupCommands()).toEqual(["HIT", ["script"]]);
    expect(await lookupCommands()).toEqual(["HIT", ["get"]]);
    expect(await lookupCommands()).toEqual(["HIT", ["get"]]);

    await a.purger.purge([id]);
    while (b.purger.localGeneration(id) === "0.0") await new Promise((r) => setTimeout(r, 5));
    // A late writer puts a result back under the old generation: b must not find it any more.
    await redis.set(`${prefix}r:0:${path}`, stale!, "EX", 60);
    const [xCache, after] = await lookupCommands();
    expect(xCache).toBe("MISS");
    expect((after as string[])[0]).toBe("script");
    expect(await redis.exists(`${prefix}r:1:${path}`)).toBe(1);
    expect(await lookupCommands()).toEqual(["HIT", ["get"]]);
    client.sendCommand = sendCommand;
  });

  it("a result another replica stored is served only when this replica's own URL policy accepts the URL", async () => {
    const id = await store.putFixture("astronaut.png");
    const plain = `/thumbnail:size=158/${id}.png`;
    const versioned = `${plain}?v=2`;
    const writer = await start({ render: countingRender().render });
    for (const target of [plain, versioned]) {
      expect((await fetchBytes(`${writer.url}${target}`)).res.headers.get("x-cache")).toBe("MISS");
      expect(await redis.exists(`${prefix}r:0:${target}`)).toBe(1);
    }
    const problem = async (res: Response) => [res.status, ((await res.json()) as { type: string }).type];
    // MEDIA_ALLOW_QUERY=false: the cache buster is refused, the plain URL served from Redis.
    const noQuery = await start({ render: countingRender().render, allowQuery: false });
    expect(await problem(await fetch(`${noQuery.url}${versioned}`))).toEqual([
      400,
      "https://media-platform.dev/problems/query-not-allowed",
    ]);
    expect((await fetch(`${noQuery.url}${plain}`)).headers.get("x-cache")).toBe("HIT");
    // MEDIA_PRESETS_ONLY: a non-preset URL is refused although Redis has it.
    const presetsOnly = await start({ render: countingRender().render, presetsOnly: true });
    expect(await problem(await fetch(`${presetsOnly.url}${plain}`))).toEqual([
      403,
      "https://media-platform.dev/problems/presets-only",
    ]);
    // Signing on: an unsigned URL is refused although Redis has it.
    const signing = await start({ render: countingRender().render, signingKey: "redis-hot-path-key-0123456789" });
    expect(await problem(await fetch(`${signing.url}${plain}`))).toEqual([
      403,
      "https://media-platform.dev/problems/invalid-signature",
    ]);
    for (const media of [noQuery, presetsOnly, signing]) {
      expect(await metricValue(media, "media_cache_lookups_total", { tier: "redis", result: "hit" })).toBe(
        media === noQuery ? 1 : 0,
      );
      expect(media.memory.size).toBe(media === noQuery ? 1 : 0);
    }
  });

  it("two instances sharing Redis, concurrent requests: one transformation and one MISS in total", async () => {
    const id = await store.putFixture("rocket.jpg");
    const path = `/thumbnail:size=120/${id}.jpg`;
    const gated = gatedRender();
    const a = await start({ render: gated.render });
    const b = await start({ render: gated.render });
    const requests = [...Array(10).fill(a.url), ...Array(10).fill(b.url)].map((base: string) =>
      fetchBytes(`${base}${path}`),
    );
    // Both instances have a flight for the URL and one of them is transforming.
    await gated.started(1);
    while (a.service.inFlight < 1 || b.service.inFlight < 1) await new Promise((r) => setImmediate(r));
    gated.release();
    const all = await Promise.all(requests);
    expect(all.map((r) => r.res.status)).toEqual(Array(20).fill(200));
    expect(all.filter((r) => r.res.headers.get("x-cache") === "MISS")).toHaveLength(1);
    expect(gated.calls).toHaveLength(1);
    expect(a.counters.get("transformations") + b.counters.get("transformations")).toBe(1);
    // The other instance got the result from Redis (while waiting on the lock, or just after). A
    // request that reaches it only after the result is in Redis (a loaded machine) reads Redis
    // too, before it could join the flight, so that instance counts at least one.
    const fromRedis = async (m: TestMedia) => m.counters.get("hits_peer") + (await redisHits(m));
    const other = a.counters.get("transformations") === 1 ? b : a;
    expect(await fromRedis(other)).toBeGreaterThanOrEqual(1);
    for (const r of all) expect(r.body.equals(all[0]!.body)).toBe(true);
    // The lock is released.
    expect(await redis.exists(`${prefix}lock:0:${path}`)).toBe(0);
  });

  it("a replica that finds the lock taken computes itself once the holder gives up", async () => {
    const id = await store.putFixture("chelsea.png");
    const path = `/thumbnail:size=80/${id}.png`;
    // Another replica holds the lock and dies without a result: the lock disappears.
    await redis.set(`${prefix}lock:0:${path}`, "someone-else", "PX", 60_000);
    const counting = countingRender();
    const media = await start({ render: counting.render });
    const pending = fetchBytes(`${media.url}${path}`);
    // It waits on the other replica's lock instead of computing.
    while (media.counters.get("lock_waits") < 1) await new Promise((r) => setImmediate(r));
    expect(counting.calls).toHaveLength(0);
    await redis.del(`${prefix}lock:0:${path}`);
    const { res } = await pending;
    expect(res.status).toBe(200);
    expect(res.headers.get("x-cache")).toBe("MISS");
    expect(counting.calls).toHaveLength(1);
  });

  it("serves results above CACHE_MAX_ENTRY_BYTES and stores nothing in Redis", async () => {
    const id = await store.putFixture("astronaut.png");
    const path = `/thumbnail:size=300/${id}.png`;
    const media = await start({ cache: { memoryBytes: 0, ttlSeconds: 60, maxEntryBytes: 1000 } });
    const res = await fetch(`${media.url}${path}`);
    expect(res.status).toBe(200);
    expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(1000);
    expect(await redis.exists(`${prefix}r:0:${path}`)).toBe(0);
  });

  it("keeps answering when Redis dies mid-test (computed, MISS), counts and logs the fault once", async () => {
    const proxy = await startRedisProxy();
    const { logger, lines } = capturingLogger();
    const counting = countingRender();
    const media = await start({
      render: counting.render,
      logger,
      redis: { url: proxy.url, keyPrefix: prefix, timeoutMs: TIMEOUT_MS },
    });
    const id = await store.putFixture("coffee.png");
    while (!media.redis!.ready) await new Promise((r) => setTimeout(r, 10));
    const before = await fetchBytes(`${media.url}/thumbnail:size=60/${id}.png`);
    expect(before.res.headers.get("x-cache")).toBe("MISS");
    expect(await redis.exists(`${prefix}r:0:/thumbnail:size=60/${id}.png`)).toBe(1);
    expect(await redisErrors(media)).toBe(0);

    await proxy.close();
    for (const size of [61, 62, 63]) {
      const { res, body } = await fetchBytes(`${media.url}/thumbnail:size=${size}/${id}.png`);
      expect(res.status).toBe(200);
      expect(res.headers.get("x-cache")).toBe("MISS");
      expect(body.length).toBe(Number(res.headers.get("content-length")));
    }
    // Even a URL Redis had: the in-process copy is gone, Redis is gone, so it is computed again.
    media.memory.clear();
    const after = await fetchBytes(`${media.url}/thumbnail:size=60/${id}.png`);
    expect(after.res.status).toBe(200);
    expect(after.res.headers.get("x-cache")).toBe("MISS");
    expect(after.body.equals(before.body)).toBe(true);

    expect(counting.calls).toHaveLength(5);
    expect(await redisErrors(media)).toBeGreaterThan(1);
    const warnings = lines.filter((l) => l.msg.startsWith("redis unavailable"));
    expect(warnings).toHaveLength(1);
  });

  it("works with REDIS_URL pointing where nothing listens", async () => {
    const url = await closedPortUrl();
    const { logger, lines } = capturingLogger();
    const counting = countingRender();
    const media = await start({
      render: counting.render,
      logger,
      redis: { url, keyPrefix: prefix, timeoutMs: TIMEOUT_MS },
    });
    const id = await store.putFixture("camera.png");
    const first = await fetch(`${media.url}/thumbnail:size=64/${id}.png`);
    expect(first.status).toBe(200);
    expect(first.headers.get("x-cache")).toBe("MISS");
    const second = await fetch(`${media.url}/thumbnail:size=64/${id}.png`);
    expect(second.headers.get("x-cache")).toBe("HIT");
    expect(counting.calls).toHaveLength(1);
    expect(await redisErrors(media)).toBeGreaterThan(0);
    expect(lines.filter((l) => l.msg.startsWith("redis unavailable"))).toHaveLength(1);
  });
});

describe("Redis unreachable needs no Redis at all", () => {
  it("serves every request (MISS) with REDIS_URL at a closed port", async () => {
    const media = await startTestMedia({
      redis: { url: await closedPortUrl(), keyPrefix: "x:", timeoutMs: TIMEOUT_MS },
    });
    try {
      const id = await media.store.putFixture("astronaut.png");
      const statuses: string[] = [];
      for (const size of [50, 51]) {
        const res = await fetch(`${media.url}/thumbnail:size=${size}/${id}.png`);
        statuses.push(`${res.status} ${res.headers.get("x-cache")}`);
      }
      expect(statuses).toEqual(["200 MISS", "200 MISS"]);
      expect(await redisErrors(media)).toBeGreaterThan(0);
    } finally {
      await media.close();
    }
  });
});
