import { createHash, randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import path from "node:path";
import sharp from "sharp";
import request from "supertest";
import { originalKey } from "@media-platform/storage";
import { ROUTE_MEDIA } from "../src/app";
import { RENDERER_VERSION } from "../src/cache/entry";
import { countingRender, metricValue, pipelineRender, startTestMedia, type TestMedia } from "./support/media-server";
import { FIXTURES_DIR } from "./support/memory-store";

/** Unversioned URLs (README "Cache-Control"): MEDIA_CACHE_MAX_AGE + MEDIA_STALE_WHILE_REVALIDATE defaults. */
const REVALIDATE = "public, max-age=3600, stale-while-revalidate=60";

async function get(url: string, init?: RequestInit) {
  const res = await fetch(url, init);
  return { res, body: Buffer.from(await res.arrayBuffer()) };
}

function headersOf(res: Response, names = ["content-type", "content-length", "etag", "cache-control"]) {
  return Object.fromEntries(names.map((n) => [n, res.headers.get(n)]));
}

describe("media delivery over real HTTP", () => {
  let media: TestMedia;
  let counting: ReturnType<typeof countingRender>;
  let astronaut: string;
  let rocket: string;

  beforeAll(async () => {
    counting = countingRender();
    media = await startTestMedia({ render: counting.render });
    astronaut = await media.store.putFixture("astronaut.png");
    rocket = await media.store.putFixture("rocket.jpg");
  });
  afterAll(() => media.close());

  it("answers MISS then HIT (hot path) with identical bytes and headers", async () => {
    const url = `${media.url}/thumbnail:size=128/${astronaut}.png`;
    const first = await get(url);
    expect(first.res.status).toBe(200);
    expect(first.res.headers.get("x-cache")).toBe("MISS");
    expect(first.res.headers.get("content-type")).toBe("image/png");
    expect(first.res.headers.get("cache-control")).toBe(REVALIDATE);
    expect(Number(first.res.headers.get("content-length"))).toBe(first.body.length);
    const meta = await sharp(first.body).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(["png", 128, 128]);
    // Strong ETag: quoted base64url sha256 of the sharp/libvips versions and the bytes.
    expect(first.res.headers.get("etag")).toBe(
      `"${createHash("sha256").update(RENDERER_VERSION).update("\0").update(first.body).digest("base64url")}"`,
    );

    const memoryHits = () => metricValue(media, "media_cache_lookups_total", { tier: "memory", result: "hit" });
    const hitsBefore = await memoryHits();
    const second = await get(url);
    expect(second.res.status).toBe(200);
    expect(second.res.headers.get("x-cache")).toBe("HIT");
    expect(second.body.equals(first.body)).toBe(true);
    expect(headersOf(second.res)).toEqual(headersOf(first.res));
    expect(await memoryHits()).toBe(hitsBefore + 1);
    expect(counting.calls.filter((k) => k === `/thumbnail:size=128/${astronaut}.png`)).toHaveLength(1);
  });

  it("treats a different URL string as a different cache entry (MISS)", async () => {
    const a = await get(`${media.url}/thumbnail:size=100/${astronaut}.png`);
    const b = await get(`${media.url}/thumbnail:size=100/${astronaut}.png?v=2`);
    const c = await get(`${media.url}/thumbnail:size=100:quality=75/${astronaut}.png`);
    expect([a.res.headers.get("x-cache"), b.res.headers.get("x-cache"), c.res.headers.get("x-cache")]).toEqual([
      "MISS",
      "MISS",
      "MISS",
    ]);
    expect(b.body.equals(a.body)).toBe(true);
  });

  it("keeps the stored format whatever the extension: a PNG asked as .jpg is image/png", async () => {
    const { res, body } = await get(`${media.url}/thumbnail:size=64/${astronaut}.jpg`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/png");
    expect((await sharp(body).metadata()).format).toBe("png");

    const jpeg = await get(`${media.url}/crop:width=100:height=50:x=10:y=20/${rocket}.png`);
    expect(jpeg.res.headers.get("content-type")).toBe("image/jpeg");
    const meta = await sharp(jpeg.body).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(["jpeg", 100, 50]);
  });

  it("answers 304 to a matching If-None-Match on the hot path and on the Express path", async () => {
    const url = `${media.url}/fit:width=90:height=60/${rocket}.jpg`;
    const first = await get(url);
    const etag = first.res.headers.get("etag")!;
    // Hot path (cached in memory now).
    const hot = await get(url, { headers: { "If-None-Match": etag } });
    expect(hot.res.status).toBe(304);
    expect(hot.body.length).toBe(0);
    expect(hot.res.headers.get("etag")).toBe(etag);
    expect(hot.res.headers.get("x-cache")).toBe("HIT");
    // Weak comparison and lists, as RFC 9110 asks.
    expect((await get(url, { headers: { "If-None-Match": `"nope", W/${etag}` } })).res.status).toBe(304);
    expect((await get(url, { headers: { "If-None-Match": `"nope"` } })).res.status).toBe(200);

    // Express path: the LRU no longer has it, the result is recomputed (deterministic bytes).
    media.memory.clear();
    const cold = await get(url, { headers: { "If-None-Match": etag } });
    expect(cold.res.status).toBe(304);
    expect(cold.res.headers.get("x-cache")).toBe("MISS");
    expect(cold.res.headers.get("etag")).toBe(etag);
  });

  it("answers HEAD with the headers of GET and no body, on a MISS and on a HIT", async () => {
    const url = `${media.url}/thumbnail:size=70/${rocket}.jpg`;
    const miss = await get(url, { method: "HEAD" });
    expect(miss.res.status).toBe(200);
    expect(miss.res.headers.get("x-cache")).toBe("MISS");
    expect(miss.body.length).toBe(0);
    const full = await get(url);
    expect(full.res.headers.get("x-cache")).toBe("HIT");
    const hit = await get(url, { method: "HEAD" });
    expect(hit.res.status).toBe(200);
    expect(hit.res.headers.get("x-cache")).toBe("HIT");
    expect(hit.body.length).toBe(0);
    expect(Number(hit.res.headers.get("content-length"))).toBe(full.body.length);
    expect(headersOf(hit.res)).toEqual(headersOf(full.res));
  });

  it("takes valid media URLs past the Express app, with the same request context; everything else goes through it", async () => {
    // Express's app function hands every request to app.handle (not in its published types).
    const express = jest.spyOn(media.app as unknown as { handle: (...args: unknown[]) => void }, "handle");
    try {
      const miss = await fetch(`${media.url}/thumbnail:size=77/${astronaut}.png`, {
        headers: { "X-Request-Id": "direct-entry-1" },
      });
      expect([miss.status, miss.headers.get("x-cache")]).toEqual([200, "MISS"]);
      expect(miss.headers.get("x-request-id")).toBe("direct-entry-1");
      expect(miss.headers.get("x-content-type-options")).toBe("nosniff");
      await miss.arrayBuffer();
      // A failure on the direct entry is the same problem the app would answer.
      const unknown = await fetch(`${media.url}/thumbnail:size=77/${randomUUID()}.png`);
      expect([unknown.status, unknown.headers.get("content-type")]).toEqual([404, "application/problem+json"]);
      expect(unknown.headers.get("cache-control")).toBe("no-store");
      expect(unknown.headers.get("x-content-type-options")).toBe("nosniff");
      expect(unknown.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
      expect(((await unknown.json()) as { type: string }).type).toMatch(/asset-not-found$/);
      // Recorded under the media route label, as the app records it.
      const { values } = await media.metrics.registry.getSingleMetric("http_request_duration_seconds")!.get();
      const counted = (values as Array<(typeof values)[number] & { metricName?: string }>).find(
        (v) =>
          v.metricName === "http_request_duration_seconds_count" &&
          v.labels.route === ROUTE_MEDIA &&
          String(v.labels.status_code) === "404",
      );
      expect(counted?.value).toBe(1);
      expect(express).not.toHaveBeenCalled();

      // An invalid media URL, the originals route and other methods are the app's.
      const invalid = await fetch(`${media.url}/thumbnail:size=0/${astronaut}.png`);
      expect(invalid.status).toBe(400);
      const original = await fetch(`${media.url}/original/${astronaut}.png`);
      expect(original.status).toBe(200);
      await original.arrayBuffer();
      const post = await fetch(`${media.url}/thumbnail:size=77/${astronaut}.png`, { method: "POST" });
      expect(post.status).toBe(405);
      expect(express).toHaveBeenCalledTimes(3);
    } finally {
      express.mockRestore();
    }
  });

  it("answers /healthz, /readyz and /metrics before the Express app, with the same headers, labels and bodies", async () => {
    const express = jest.spyOn(media.app as unknown as { handle: (...args: unknown[]) => void }, "handle");
    try {
      const health = await fetch(`${media.url}/healthz?probe=1`, { headers: { "X-Request-Id": "probe-1" } });
      expect(health.status).toBe(200);
      expect(health.headers.get("content-type")).toBe("application/json; charset=utf-8");
      expect(health.headers.get("cache-control")).toBe("no-store");
      expect(health.headers.get("x-content-type-options")).toBe("nosniff");
      expect(health.headers.get("x-request-id")).toBe("probe-1");
      const body = (await health.json()) as { status: string; uptimeSeconds: number };
      expect(body.status).toBe("ok");
      expect(Number.isInteger(body.uptimeSeconds)).toBe(true);
      const ready = await fetch(`${media.url}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({ status: "ok", failing: [], checks: { storage: { status: "ok" } } });
      const head = await fetch(`${media.url}/healthz`, { method: "HEAD" });
      expect([head.status, (await head.arrayBuffer()).byteLength]).toEqual([200, 0]);
      const scrape = await fetch(`${media.url}/metrics`);
      expect(scrape.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
      const text = await scrape.text();
      // The probes, each under its path as the route label (as Express labelled them).
      const count = (route: string, method: string) =>
        new RegExp(
          `http_request_duration_seconds_count\\{route="${route}",method="${method}",status_code="200"[^}]*\\} (\\d+)`,
        ).exec(text)?.[1];
      expect([count("/healthz", "GET"), count("/healthz", "HEAD"), count("/readyz", "GET")]).toEqual(["1", "1", "1"]);
      expect(express).not.toHaveBeenCalled();
      // Other methods are the app's, as before.
      const post = await fetch(`${media.url}/healthz`, { method: "POST" });
      expect([post.status, post.headers.get("content-type")]).toEqual([404, "application/problem+json"]);
      expect(express).toHaveBeenCalledTimes(1);
    } finally {
      express.mockRestore();
    }
  });

  it("answers GET /healthz and GET /transformations", async () => {
    const health = await request(media.server).get("/healthz");
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ status: "ok" });
    expect(health.headers["cache-control"]).toBe("no-store");
    const catalog = await request(media.server).get("/transformations");
    expect(catalog.status).toBe(200);
    expect(catalog.body.count).toBe(24);
  });
});

describe("media errors are problem+json, never cached", () => {
  let media: TestMedia;
  let counting: ReturnType<typeof countingRender>;
  let asset: string;

  beforeAll(async () => {
    counting = countingRender();
    media = await startTestMedia({ render: counting.render });
    asset = await media.store.putFixture("astronaut.png");
  });
  afterAll(() => media.close());

  async function expectProblem(path: string, status: number, method: "get" | "head" = "get") {
    const res = await request(media.server)[method](path);
    expect(res.status).toBe(status);
    expect(res.headers["cache-control"]).toBe("no-store");
    expect(res.headers["x-cache"]).toBeUndefined();
    if (method === "get") {
      expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
      const body = JSON.parse(res.text) as {
        status: number;
        type: string;
        title: string;
        detail: string;
        errors?: Array<{ path: string; message: string }>;
      };
      expect(body.status).toBe(status);
      expect(body.type).toMatch(/^https:\/\/media-platform\.dev\/problems\//);
      return body;
    }
    return undefined;
  }

  const cases: Array<[string, (id: string) => string, string, RegExp]> = [
    ["unknown transformation", (id) => `/blur:radius=3/${id}.png`, "blur", /unknown transformation/],
    [
      "unknown parameter",
      (id) => `/thumbnail:size=100:width=3/${id}.png`,
      "thumbnail.width",
      /unknown parameter; thumbnail accepts size, quality/,
    ],
    ["repeated parameter", (id) => `/thumbnail:size=100:size=200/${id}.png`, "thumbnail.size", /repeated/],
    ["missing required parameter", (id) => `/crop:width=10/${id}.png`, "crop.height", /required/],
    [
      "wrong type",
      (id) => `/thumbnail:size=big/${id}.png`,
      "thumbnail.size",
      /not a number; allowed: an integer from 50 to 8192/,
    ],
    [
      "decimal where the spec says integer",
      (id) => `/solarize:threshold=12.5/${id}.png`,
      "solarize.threshold",
      /whole number; allowed: an integer from 0 to 255/,
    ],
    [
      "out of range (below)",
      (id) => `/thumbnail:size=49/${id}.png`,
      "thumbnail.size",
      /below the allowed range; allowed: an integer from 50 to 8192/,
    ],
    [
      "out of range (above)",
      (id) => `/clahe:clipLimit=40.5/${id}.png`,
      "clahe.clipLimit",
      /above the allowed range; allowed: a number from 1 to 40/,
    ],
    [
      "bad enum value",
      (id) => `/crop:width=10:height=10:gravity=up/${id}.png`,
      "crop.gravity",
      /one of center, north, south, east, west/,
    ],
    ["bad asset id with a bad parameter", () => `/thumbnail:size=1/not-a-uuid.png`, "assetId", /UUID/],
    ["bad extension", (id) => `/thumbnail:size=100/${id}.bmp`, "extension", /extension must be one of/],
    ["9 steps", (id) => `${"/grayscale".repeat(9)}/${id}.png`, "path", /at most 8/],
  ];

  it.each(cases)("400 for %s, naming the parameter and its range", async (_name, build, param, message) => {
    const body = await expectProblem(build(asset), 400);
    expect(body!.errors).toEqual(
      expect.arrayContaining([expect.objectContaining({ path: param, message: expect.stringMatching(message) })]),
    );
    expect(body!.detail).toContain(param);
  });

  it("400 without a body for HEAD", async () => {
    await expectProblem(`/thumbnail:size=1/${asset}.png`, 400, "head");
  });

  it("400 when a valid transformation cannot apply to this image (crop outside it)", async () => {
    const body = await expectProblem(`/crop:width=10:height=10:x=5000:y=5000/${asset}.png`, 400);
    expect(body!.errors?.[0]?.path).toMatch(/^crop/);
  });

  it("404 for an asset id that is not a UUID when the rest of the URL is valid", async () => {
    const body = await expectProblem(`/thumbnail:size=100/not-a-uuid.png`, 404);
    expect(body!.type).toMatch(/asset-not-found$/);
    expect(body!.errors).toEqual([
      expect.objectContaining({ path: "assetId", message: expect.stringMatching(/UUID/) }),
    ]);
  });

  it("404 for an unknown asset, not cached: the same URL works once the asset exists", async () => {
    const id = randomUUID();
    const path = `/thumbnail:size=100/${id}.png`;
    const body = await expectProblem(path, 404);
    expect(body!.detail).toContain(id);
    await expectProblem(path, 404);
    await media.store.put(originalKey(id), await readFile(`${FIXTURES_DIR}/chelsea.png`), "image/png");
    const res = await request(media.server).get(path);
    expect(res.status).toBe(200);
    expect(res.headers["x-cache"]).toBe("MISS");
  });

  it("404 problem for unknown routes, 405 for other methods on media URLs", async () => {
    await expectProblem("/", 404);
    await expectProblem("/favicon.ico", 404);
    const post = await request(media.server).post(`/thumbnail:size=100/${asset}.png`);
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe("GET, HEAD");
    expect(post.headers["cache-control"]).toBe("no-store");
  });

  it("422 for a stored original that cannot be decoded", async () => {
    const id = randomUUID();
    await media.store.put(originalKey(id), await readFile(path.join(FIXTURES_DIR, "truncated.jpg")), "image/jpeg");
    const body = await expectProblem(`/thumbnail:size=100/${id}.jpg`, 422);
    expect(body!.detail).toMatch(/cannot be decoded/);
    expect([body!.type, body!.title]).toEqual([
      "https://media-platform.dev/problems/undecodable-image",
      "Image cannot be decoded",
    ]);
    // A JPEG cut mid-stream: the header decodes, the pixels do not.
    const half = randomUUID();
    const rocket = await readFile(path.join(FIXTURES_DIR, "rocket.jpg"));
    await media.store.put(originalKey(half), rocket.subarray(0, 50_000), "image/jpeg");
    expect((await expectProblem(`/thumbnail:size=100/${half}.jpg`, 422))!.detail).toMatch(/premature end/);
    const text = await readFile(path.join(FIXTURES_DIR, "README.md"));
    const other = randomUUID();
    await media.store.put(originalKey(other), text, "text/markdown");
    await expectProblem(`/thumbnail:size=100/${other}.jpg`, 422);
  });

  it("503 with Retry-After when the blob store is down, and recovers when it is back", async () => {
    const path = `/thumbnail:size=90/${asset}.png`;
    media.store.unavailable = true;
    try {
      const res = await request(media.server).get(path);
      expect(res.status).toBe(503);
      expect(res.headers["retry-after"]).toBe("5");
      expect(res.headers["cache-control"]).toBe("no-store");
      expect(JSON.parse(res.text).type).toBe("https://media-platform.dev/problems/storage-unavailable");
    } finally {
      media.store.unavailable = false;
    }
    const ok = await request(media.server).get(path);
    expect(ok.status).toBe(200);
    expect(ok.headers["x-cache"]).toBe("MISS");
  });

  it("never renders for an invalid URL", () => {
    expect(counting.calls.every((k) => !k.includes("size=49") && !k.includes("not-a-uuid"))).toBe(true);
  });
});

describe("input pixel limit", () => {
  it("answers 422 image-too-large naming LIMIT_INPUT_PIXELS for an original above it", async () => {
    const media = await startTestMedia({ render: pipelineRender(undefined, 1000), limitInputPixels: 1000 });
    try {
      const id = await media.store.putFixture("astronaut.png");
      const res = await request(media.server).get(`/thumbnail:size=100/${id}.png`);
      expect(res.status).toBe(422);
      expect(res.headers["cache-control"]).toBe("no-store");
      const body = JSON.parse(res.text);
      expect(body.type).toBe("https://media-platform.dev/problems/image-too-large");
      expect(body.title).toBe("Image too large to process");
      expect(body.detail).toBe("The image exceeds the decoder limit of 1000 pixels (LIMIT_INPUT_PIXELS)");
      expect(body.errors).toEqual([
        { path: "LIMIT_INPUT_PIXELS", message: "must have at most 1000 pixels (LIMIT_INPUT_PIXELS)" },
      ]);
    } finally {
      await media.close();
    }
  });
});
