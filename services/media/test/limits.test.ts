import request from "supertest";
import type { RenderFn } from "../src/render/pipeline/render";
import { Limiter, QueueFullError } from "../src/delivery/limiter";
import { FaceDetectionError } from "../src/faces";
import {
  countingRender,
  gatedRender,
  metricValue,
  singleFlightJoins,
  startTestMedia,
  type TestMedia,
} from "./support/media-server";

describe("transformation concurrency limit", () => {
  let media: TestMedia;
  afterEach(() => media?.close());

  it("answers 503 + Retry-After when the slot and the queue are full (concurrency 1, queue 0)", async () => {
    const gated = gatedRender();
    media = await startTestMedia({ render: gated.render, concurrency: 1, queueLimit: 0 });
    const id = await media.store.putFixture("astronaut.png");
    const slow = fetch(`${media.url}/thumbnail:size=100/${id}.png`);
    await gated.started(1);

    const refused = await request(media.server).get(`/thumbnail:size=101/${id}.png`);
    expect(refused.status).toBe(503);
    expect(refused.headers["retry-after"]).toBe("1");
    expect(refused.headers["cache-control"]).toBe("no-store");
    expect(JSON.parse(refused.text).type).toBe("https://media-platform.dev/problems/overloaded");
    // HEAD is refused the same way, without a body.
    const head = await request(media.server).head(`/thumbnail:size=102/${id}.png`);
    expect(head.status).toBe(503);
    expect(head.headers["retry-after"]).toBe("1");
    // A request for the URL already in flight joins it instead of needing a slot.
    const joined = fetch(`${media.url}/thumbnail:size=100/${id}.png`);
    while ((await singleFlightJoins(media)) < 1) await new Promise((r) => setImmediate(r));

    gated.release();
    const [first, second] = await Promise.all([slow, joined]);
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(await metricValue(media, "media_transform_queue_rejections_total")).toBe(2);
    // Once the slot is free, the refused URL works.
    const later = await request(media.server).get(`/thumbnail:size=101/${id}.png`);
    expect(later.status).toBe(200);
    expect(later.headers["x-cache"]).toBe("MISS");
  });

  it("answers 503 + Retry-After when the request budget runs out, and caches nothing", async () => {
    let calls = 0;
    const never: RenderFn = (_input, { signal }) => {
      calls++;
      // A render that only ends when aborted (as render.ts does at its next step boundary).
      return new Promise((_resolve, reject) =>
        signal.addEventListener("abort", () => reject(signal.reason), { once: true }),
      );
    };
    media = await startTestMedia({ render: never, requestTimeoutMs: 200 });
    const id = await media.store.putFixture("astronaut.png");
    const res = await request(media.server).get(`/thumbnail:size=100/${id}.png`);
    expect(res.status).toBe(503);
    expect(res.headers["retry-after"]).toBe("2");
    expect(res.headers["cache-control"]).toBe("no-store");
    expect(JSON.parse(res.text).detail).toContain("MEDIA_REQUEST_TIMEOUT_MS");
    expect(media.counters.get("timeouts")).toBe(1);
    expect(media.memory.size).toBe(0);
    expect(media.limiter.active).toBe(0);
    expect(calls).toBe(1);
  });

  it("answers 503 + Retry-After when the face detector fails, and caches nothing", async () => {
    const broken: RenderFn = () => Promise.reject(new FaceDetectionError("face detector worker exited"));
    media = await startTestMedia({ render: broken });
    const id = await media.store.putFixture("astronaut.png");
    const res = await request(media.server).get(`/avatar/${id}.png`);
    expect(res.status).toBe(503);
    expect(res.headers["retry-after"]).toBe("2");
    expect(res.headers["cache-control"]).toBe("no-store");
    expect(JSON.parse(res.text).type).toMatch(/face-detection-unavailable$/);
    expect(media.memory.size).toBe(0);
  });

  it("refuses results above MEDIA_MAX_RESULT_BYTES with 413, and renders a refused URL only once", async () => {
    const counting = countingRender();
    media = await startTestMedia({
      render: counting.render,
      cache: { memoryBytes: 64 * 1024 * 1024, ttlSeconds: 60, maxEntryBytes: 500 },
      maxResultBytes: 1000,
    });
    const id = await media.store.putFixture("astronaut.png");
    const a = await request(media.server).get(`/thumbnail:size=100/${id}.png`);
    const b = await request(media.server).get(`/thumbnail:size=100/${id}.png`);
    for (const res of [a, b]) {
      expect(res.status).toBe(413);
      expect(res.headers["content-type"]).toContain("application/problem+json");
      expect(res.headers["cache-control"]).toBe("no-store");
      expect(res.body).toMatchObject({
        type: "https://media-platform.dev/problems/result-too-large",
        errors: [{ path: "MEDIA_MAX_RESULT_BYTES", message: "at most 1000 bytes" }],
      });
      expect(res.body.detail).toMatch(/^the result would be \d+ bytes, above the 1000 bytes/);
    }
    expect(counting.calls).toHaveLength(1);
    expect(media.memory.size).toBe(0);
    // Between CACHE_MAX_ENTRY_BYTES and MEDIA_MAX_RESULT_BYTES: served, not cached (rendered again).
    const mid = `/crop:width=16:height=16/${id}.png`;
    const first = await request(media.server).get(mid);
    const again = await request(media.server).get(mid);
    for (const res of [first, again]) {
      expect([res.status, res.headers["x-cache"]]).toEqual([200, "MISS"]);
      expect(res.body.length).toBeGreaterThan(500);
      expect(res.body.length).toBeLessThanOrEqual(1000);
    }
    expect(counting.calls).toHaveLength(3);
    // Within the entry limit: served and cached as before.
    const small = `/crop:width=4:height=4/${id}.png`;
    expect((await request(media.server).get(small)).headers["x-cache"]).toBe("MISS");
    const hit = await request(media.server).get(small);
    expect([hit.status, hit.headers["x-cache"]]).toEqual([200, "HIT"]);
    expect(hit.body.length).toBeLessThanOrEqual(500);
  });
});

describe("Limiter", () => {
  it("runs at most `concurrency` tasks, queues up to the limit in FIFO order, then refuses", async () => {
    const limiter = new Limiter(2, 1);
    const releases: Array<() => void> = [];
    const order: string[] = [];
    const task = (name: string) => () =>
      new Promise<string>((resolve) => {
        order.push(name);
        releases.push(() => resolve(name));
      });
    const a = limiter.run(task("a"));
    const b = limiter.run(task("b"));
    const c = limiter.run(task("c"));
    await expect(limiter.run(task("d"))).rejects.toBeInstanceOf(QueueFullError);
    expect([limiter.active, limiter.waiting]).toEqual([2, 1]);
    expect(order).toEqual(["a", "b"]);
    releases[0]!();
    await a;
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual(["a", "b", "c"]);
    releases[1]!();
    releases[2]!();
    expect(await Promise.all([b, c])).toEqual(["b", "c"]);
    expect([limiter.active, limiter.waiting]).toEqual([0, 0]);
  });

  it("drops a queued task whose signal aborts", async () => {
    const limiter = new Limiter(1, 5);
    let release!: () => void;
    const running = limiter.run(() => new Promise<void>((r) => (release = r)));
    const controller = new AbortController();
    const queued = limiter.run(async () => "never", controller.signal);
    expect(limiter.waiting).toBe(1);
    controller.abort(new Error("gone"));
    await expect(queued).rejects.toThrow("gone");
    expect(limiter.waiting).toBe(0);
    release();
    await running;
  });
});
