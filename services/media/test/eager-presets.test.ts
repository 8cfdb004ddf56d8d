import sharp from "sharp";
import { originalKey } from "@media-platform/storage";
import { EAGER_PATH } from "@media-platform/contracts";
import { loadMediaConfig, MediaConfigError } from "../src/config";
import {
  countingRender,
  metricValue,
  startTestMedia,
  type CountingRender,
  type TestMedia,
} from "./support/media-server";
import { MemoryBlobStore } from "./support/memory-store";
import { deleteRedisPrefix, describeWithRedis, TEST_REDIS_URL, uniqueRedisPrefix } from "./support/redis";
import { presetsFolder } from "./support/presets-files";

const SECRET = "purge-secret-for-tests-0123456789";
const { write } = presetsFolder("eager-presets");

const PRESETS = `
card:
  steps: "resize:width=400:height=300:fit=cover"
  eager: true
hero:
  steps: ["resize:width=1600", "sharpen:value=0.5"]
  eager: true
  widths: [160, 240]
thumb: "resize:width=120"
lazy:
  steps: ["grayscale"]
  eager: false
`;

function configProblems(env: Record<string, string>): string[] {
  try {
    loadMediaConfig(env);
  } catch (err) {
    if (err instanceof MediaConfigError) return err.problems.map((p) => `${p.variable}: ${p.message}`);
    throw err;
  }
  return [];
}

const eager = (media: { url: string }, body: unknown, secret = SECRET) =>
  fetch(`${media.url}${EAGER_PATH}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${secret}`, "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });

const solid = (color: string) =>
  sharp({ create: { width: 300, height: 200, channels: 3, background: color } })
    .png()
    .toBuffer();

const pixel = async (image: Buffer) => {
  const { data } = await sharp(image)
    .extract({ left: 5, top: 5, width: 1, height: 1 })
    .raw()
    .toBuffer({ resolveWithObject: true });
  return [...data.subarray(0, 3)];
};

describe("eager presets in MEDIA_PRESETS_FILE", () => {
  it("reads the object form next to the plain forms, and expands widths into srcset URLs", () => {
    const config = loadMediaConfig({ MEDIA_PRESETS_FILE: write("p.yaml", PRESETS) });
    expect(config.presets).toEqual({
      card: [{ name: "resize", params: { width: 400, height: 300, fit: "cover" } }],
      hero: [
        { name: "resize", params: { width: 1600 } },
        { name: "sharpen", params: { value: 0.5 } },
      ],
      thumb: [{ name: "resize", params: { width: 120 } }],
      lazy: [{ name: "grayscale", params: {} }],
    });
    expect(config.eagerPresets).toEqual([
      { name: "card", paths: ["preset:name=card"] },
      { name: "hero", paths: ["resize:width=160/sharpen:value=0.5", "resize:width=240/sharpen:value=0.5"] },
    ]);
  });

  it.each([
    [
      "widths without a first resize width",
      "a:\n  steps: grayscale\n  eager: true\n  widths: [100]\n",
      /preset "a": widths needs a first step resize with a width/,
    ],
    [
      "widths that are not whole numbers",
      "a:\n  steps: resize:width=10\n  eager: true\n  widths: [1.5]\n",
      /preset "a": widths must be a non-empty list/,
    ],
    [
      "a width above MEDIA_MAX_DIMENSION",
      "a:\n  steps: resize:width=10\n  eager: true\n  widths: [99999]\n",
      /widths 99999 exceed MEDIA_MAX_DIMENSION/,
    ],
    [
      "eager that is not a boolean",
      "a:\n  steps: resize:width=10\n  eager: yes please\n",
      /preset "a": eager must be true or false/,
    ],
    ["an unknown field", "a:\n  steps: resize:width=10\n  eagerly: true\n", /preset "a": unknown field\(s\) eagerly/],
    ["an object without steps", "a:\n  eager: true\n", /preset "a": steps must be a non-empty/],
  ])("refuses %s, naming the preset", (_label, text, message) => {
    const problems = configProblems({ MEDIA_PRESETS_FILE: write(`bad-${Math.random()}.yaml`, text) });
    expect(problems.length).toBeGreaterThan(0);
    expect(problems.join("\n")).toMatch(message);
  });
});

describe("POST /internal/eager (without Redis)", () => {
  let media: TestMedia;
  let counting: CountingRender;
  beforeAll(async () => {
    counting = countingRender();
    const { presets, eagerPresets } = loadMediaConfig({ MEDIA_PRESETS_FILE: write("server.yaml", PRESETS) });
    media = await startTestMedia({ purgeSecret: SECRET, presets, eagerPresets, render: counting.render });
  });
  afterAll(() => media.close());

  it("renders every eager preset, so each first public request is a HIT with the rendition's pixels", async () => {
    const id = await media.store.putFixture("rocket.jpg");
    const before = counting.calls.length;
    const res = await eager(media, { assetId: id, extension: "jpg" });
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(await res.json()).toEqual({
      renders: [
        { path: `/preset:name=card/${id}.jpg`, outcome: "done" },
        { path: `/resize:width=160/sharpen:value=0.5/${id}.jpg`, outcome: "done" },
        { path: `/resize:width=240/sharpen:value=0.5/${id}.jpg`, outcome: "done" },
      ],
    });
    expect(counting.calls.length - before).toBe(3);
    for (const [url, width, height] of [
      [`/preset:name=card/${id}.jpg`, 400, 300],
      [`/resize:width=160/sharpen:value=0.5/${id}.jpg`, 160, undefined],
      // Another spelling of the same rendition (the spec's 0.50) is served from the same entry.
      [`/resize:width=240/sharpen:value=0.50/${id}.jpg`, 240, undefined],
    ] as const) {
      const got = await fetch(`${media.url}${url}`);
      expect(got.status).toBe(200);
      expect(got.headers.get("x-cache")).toBe("HIT");
      const meta = await sharp(Buffer.from(await got.arrayBuffer())).metadata();
      expect(meta.format).toBe("jpeg");
      expect(meta.width).toBe(width);
      if (height) expect(meta.height).toBe(height);
    }
    // A preset that is not eager is rendered by its first request, as before.
    const lazy = await fetch(`${media.url}/preset:name=lazy/${id}.jpg`);
    expect(lazy.headers.get("x-cache")).toBe("MISS");
    expect(counting.calls.length - before).toBe(4);
    expect(await metricValue(media, "media_eager_renders_total", { outcome: "queued" })).toBeGreaterThanOrEqual(3);
    expect(await metricValue(media, "media_eager_renders_total", { outcome: "done" })).toBeGreaterThanOrEqual(3);
  });

  it("a replace re-renders the new original's presets and never serves the old ones", async () => {
    const id = await media.store.putFixture("rocket.jpg");
    await media.store.put(originalKey(id), await solid("#0000ff"), "image/png");
    expect((await eager(media, { assetId: id, extension: "png" })).status).toBe(200);
    const blue = await fetch(`${media.url}/preset:name=card/${id}.png`);
    expect(blue.headers.get("x-cache")).toBe("HIT");
    expect(await pixel(Buffer.from(await blue.arrayBuffer()))).toEqual([0, 0, 255]);
    // The replace: new bytes, then the eager call management's outbox sends with replaced: true.
    await media.store.put(originalKey(id), await solid("#ff0000"), "image/png");
    expect((await eager(media, { assetId: id, extension: "png", replaced: true })).status).toBe(200);
    for (const url of [`/preset:name=card/${id}.png`, `/resize:width=160/sharpen:value=0.5/${id}.png`]) {
      const red = await fetch(`${media.url}${url}`);
      expect(red.headers.get("x-cache")).toBe("HIT");
      expect(await pixel(Buffer.from(await red.arrayBuffer()))).toEqual([255, 0, 0]);
    }
  });

  it("a repeated delivery (at least once) renders nothing again", async () => {
    const id = await media.store.putFixture("rocket.jpg");
    await eager(media, { assetId: id, extension: "jpg" });
    const before = counting.calls.length;
    expect((await eager(media, { assetId: id, extension: "jpg" })).status).toBe(200);
    expect(counting.calls.length).toBe(before);
  });

  it("reports a render that cannot succeed as failed (200: a retry would not help), and counts it", async () => {
    const missing = "0b7a2cb8-6f4e-4b8e-9d7a-3c1f0e2d4a5b";
    const res = await eager(media, { assetId: missing, extension: "jpg" });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { renders: Array<{ outcome: string }> };
    expect(body.renders.map((r) => r.outcome)).toEqual(["failed", "failed", "failed"]);
    expect(await metricValue(media, "media_eager_renders_total", { outcome: "failed" })).toBeGreaterThanOrEqual(3);
  });

  it("refuses calls without the secret (401) and malformed bodies (400)", async () => {
    expect((await eager(media, { assetId: "x", extension: "jpg" }, "wrong-secret-wrong-secret-wrong")).status).toBe(
      401,
    );
    const bad = await eager(media, { assetId: "not-a-uuid", extension: "jpg" });
    expect(bad.status).toBe(400);
    expect(bad.headers.get("content-type")).toMatch(/^application\/problem\+json/);
  });
});

describeWithRedis("eager presets with Redis", () => {
  const prefix = uniqueRedisPrefix();
  let a: TestMedia;
  let b: TestMedia;
  let countingB: CountingRender;
  beforeAll(async () => {
    const store = new MemoryBlobStore();
    const { presets, eagerPresets } = loadMediaConfig({ MEDIA_PRESETS_FILE: write("redis.yaml", PRESETS) });
    const redis = { url: TEST_REDIS_URL, keyPrefix: prefix, timeoutMs: 500 };
    a = await startTestMedia({ store, purgeSecret: SECRET, presets, eagerPresets, redis });
    countingB = countingRender();
    b = await startTestMedia({ store, purgeSecret: SECRET, presets, eagerPresets, redis, render: countingB.render });
  });
  afterAll(async () => {
    await Promise.all([a.close(), b.close()]);
    await deleteRedisPrefix(prefix);
  });

  it("the renders land in Redis: another replica's first request is a HIT without rendering", async () => {
    const id = await a.store.putFixture("rocket.jpg");
    expect((await eager(a, { assetId: id, extension: "jpg" })).status).toBe(200);
    const got = await fetch(`${b.url}/preset:name=card/${id}.jpg`);
    expect(got.status).toBe(200);
    expect(got.headers.get("x-cache")).toBe("HIT");
    expect(countingB.calls.length).toBe(0);
  });
});
