import { randomUUID } from "node:crypto";
import sharp from "sharp";
import { compilePresets, ORIGINAL_WORKSPACE_METADATA, PURGE_PATH, defaultMediaLimits } from "@media-platform/contracts";
import { originalKey } from "@media-platform/storage";
import { loadMediaConfig } from "../src/config";
import { render } from "../src/render/pipeline/render";
import type { RenderFn } from "../src/render/pipeline/render";
import { countingRender, startTestMedia, type TestMedia } from "./support/media-server";
import { MemoryBlobStore } from "./support/memory-store";
import { deleteRedisPrefix, describeWithRedis, TEST_REDIS_URL, uniqueRedisPrefix } from "./support/redis";

const SECRET = "purge-secret-for-layer-tests-0123456789";
const NO_MEMORY = { memoryBytes: 0, ttlSeconds: 60, maxEntryBytes: 10_000_000 };

async function get(url: string) {
  const res = await fetch(url);
  return { res, body: Buffer.from(await res.arrayBuffer()) };
}

const purge = (media: { url: string }, assetIds: string[]) =>
  fetch(`${media.url}${PURGE_PATH}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${SECRET}`, "Content-Type": "application/json" },
    body: JSON.stringify({ assetIds }),
  });

/** A solid PNG stored as an original of `workspace` (as management stores it); returns its id. */
/** Stores (or replaces) a single-colour PNG original of `workspace` under `id`. */
async function paintOriginal(
  store: MemoryBlobStore,
  id: string,
  colour: string,
  workspace: string | undefined,
  size = [120, 80],
) {
  const bytes = await sharp({ create: { width: size[0]!, height: size[1]!, channels: 3, background: colour } })
    .png()
    .toBuffer();
  await store.put(
    originalKey(id),
    bytes,
    "image/png",
    workspace === undefined ? undefined : { [ORIGINAL_WORKSPACE_METADATA]: workspace },
  );
}

async function putOriginal(store: MemoryBlobStore, colour: string, workspace: string | undefined, size = [120, 80]) {
  const id = randomUUID();
  await paintOriginal(store, id, colour, workspace, size);
  return id;
}

const topLeft = async (png: Buffer) => [...(await sharp(png).raw().toBuffer()).subarray(0, 3)];

/** The pipeline with a face detector that finds one face in the middle of every image. */
function renderWithAFace(): RenderFn {
  const deps = {
    limits: defaultMediaLimits,
    limitInputPixels: 100_000_000,
    pixels: {} as never,
    faces: {
      detect: async (image: { width: number; height: number }) => [
        { x: image.width / 4, y: image.height / 4, width: image.width / 2, height: image.height / 2, score: 0.9 },
      ],
    },
  };
  return (input, options) => render(input, deps, options);
}

describe("overlay delivery (memory tier)", () => {
  let media: TestMedia;
  let calls: string[];
  beforeAll(async () => {
    const counting = countingRender();
    calls = counting.calls;
    media = await startTestMedia({ purgeSecret: SECRET, render: counting.render });
  });
  afterAll(() => media.close());

  it("draws an asset of the same workspace; another workspace's asset answers 404 exactly like an unknown id", async () => {
    const base = await putOriginal(media.store, "#000000", "acme");
    const mark = await putOriginal(media.store, "#ff0000", "acme", [10, 10]);
    const foreign = await putOriginal(media.store, "#00ff00", "other", [10, 10]);
    const ok = await get(`${media.url}/overlay:asset=${mark}:gravity=northwest/${base}.png`);
    expect(ok.res.status).toBe(200);
    expect(await topLeft(ok.body)).toEqual([255, 0, 0]);
    expect(ok.res.headers.get("surrogate-key")).toBe(`${base} ${mark}`);
    expect(ok.res.headers.get("cache-tag")).toBe(`${base},${mark}`);

    const unknownId = randomUUID();
    const unknown = await get(`${media.url}/overlay:asset=${unknownId}/${base}.png`);
    const other = await get(`${media.url}/overlay:asset=${foreign}/${base}.png`);
    expect(unknown.res.status).toBe(404);
    expect(other.res.status).toBe(404);
    const problem = (r: { body: Buffer }, id: string) => JSON.parse(r.body.toString().replaceAll(id, "<id>"));
    const unknownProblem = problem(unknown, unknownId);
    expect(problem(other, foreign)).toEqual({ ...unknownProblem, instance: unknownProblem.instance });
    expect(other.res.headers.get("cache-control")).toBe(unknown.res.headers.get("cache-control"));
    // An original stored without a workspace matches none.
    const legacy = await putOriginal(media.store, "#0000ff", undefined, [10, 10]);
    expect((await get(`${media.url}/overlay:asset=${legacy}/${base}.png`)).res.status).toBe(404);
  });

  it("a purge of the overlay asset purges the renditions that show it", async () => {
    const base = await putOriginal(media.store, "#000000", "acme");
    const mark = await putOriginal(media.store, "#ff0000", "acme", [10, 10]);
    const url = `${media.url}/overlay:asset=${mark}:gravity=northwest/${base}.png`;
    expect((await get(url)).res.headers.get("x-cache")).toBe("MISS");
    expect((await get(url)).res.headers.get("x-cache")).toBe("HIT");
    // The overlay is replaced, then purged: the rendition shows the new one.
    await media.store.put(
      originalKey(mark),
      await sharp({ create: { width: 10, height: 10, channels: 3, background: "#0000ff" } })
        .png()
        .toBuffer(),
      "image/png",
      { [ORIGINAL_WORKSPACE_METADATA]: "acme" },
    );
    const before = calls.length;
    expect((await purge(media, [mark])).status).toBe(204);
    const after = await get(url);
    expect(after.res.headers.get("x-cache")).toBe("MISS");
    expect(calls.length).toBe(before + 1);
    expect(await topLeft(after.body)).toEqual([0, 0, 255]);
  });
});

describe("redaction and the memory tier", () => {
  let media: TestMedia;
  beforeAll(async () => {
    media = await startTestMedia({ render: renderWithAFace() });
  });
  afterAll(() => media.close());

  it("a redacted rendition is never the unredacted one's entry, in any spelling", async () => {
    const id = await media.store.putFixture("coffee.png");
    const plain = await get(`${media.url}/thumbnail:size=64/${id}.png`);
    expect(plain.res.headers.get("x-cache")).toBe("MISS");
    const redacted = await get(`${media.url}/thumbnail:size=64/redact:region=0,0,1,1/${id}.png`);
    expect(redacted.res.headers.get("x-cache")).toBe("MISS");
    expect(redacted.body.equals(plain.body)).toBe(false);
    // Another spelling of the redacted URL is served from the redacted entry (the canonical key).
    const spelled = await get(`${media.url}/thumbnail:size=64/redact:region=0.0,.0,1.0,1/${id}.png`);
    expect(spelled.res.headers.get("x-cache")).toBe("HIT");
    expect(spelled.res.headers.get("link")).toBe(
      `</thumbnail:size=64/redact:region=0,0,1,1/${id}.png>; rel="canonical"`,
    );
    expect(spelled.body.equals(redacted.body)).toBe(true);
    const faces = await get(`${media.url}/thumbnail:size=64/redact:faces=true/${id}.png`);
    expect(faces.res.headers.get("x-cache")).toBe("MISS");
    expect(faces.body.equals(plain.body)).toBe(false);
  });
});

describe("MEDIA_REDACT_FACES_ALWAYS", () => {
  it("is read from the environment (default off; junk refused naming it)", () => {
    expect(loadMediaConfig({}).redactFacesAlways).toBe(false);
    expect(loadMediaConfig({ MEDIA_REDACT_FACES_ALWAYS: "true" }).redactFacesAlways).toBe(true);
    expect(() => loadMediaConfig({ MEDIA_REDACT_FACES_ALWAYS: "maybe" })).toThrow(/MEDIA_REDACT_FACES_ALWAYS/);
  });

  it("redacts faces in every rendition, of a URL that does not ask for it", async () => {
    const store = new MemoryBlobStore();
    const plain = await startTestMedia({ store, render: renderWithAFace() });
    const forced = await startTestMedia({ store, render: renderWithAFace(), redactFacesAlways: true });
    try {
      const id = await store.putFixture("coffee.png");
      const a = await get(`${plain.url}/thumbnail:size=64/${id}.png`);
      const b = await get(`${forced.url}/thumbnail:size=64/${id}.png`);
      const asked = await get(`${plain.url}/thumbnail:size=64/redact:faces=true/${id}.png`);
      expect(b.body.equals(a.body)).toBe(false);
      expect(b.body.equals(asked.body)).toBe(true);
    } finally {
      await Promise.all([plain.close(), forced.close()]);
    }
  });
});

describe("face redaction per preset", () => {
  it("a preset that ends with redact:faces=true redacts every rendition made through it", async () => {
    const presets = compilePresets({ private: "thumbnail:size=64/redact:faces=true:mode=pixelate" });
    const media = await startTestMedia({ render: renderWithAFace(), presets, presetsOnly: true });
    try {
      const id = await media.store.putFixture("coffee.png");
      const viaPreset = await get(`${media.url}/preset:name=private/${id}.png`);
      expect(viaPreset.res.status).toBe(200);
      // Every other URL is refused: the preset is the only way to the asset.
      expect((await get(`${media.url}/thumbnail:size=64/${id}.png`)).res.status).toBe(403);
      const plain = await startTestMedia({ store: media.store, render: renderWithAFace() });
      try {
        const unredacted = await get(`${plain.url}/thumbnail:size=64/${id}.png`);
        const redacted = await get(`${plain.url}/thumbnail:size=64/redact:faces=true:mode=pixelate/${id}.png`);
        expect(viaPreset.body.equals(unredacted.body)).toBe(false);
        expect(viaPreset.body.equals(redacted.body)).toBe(true);
      } finally {
        await plain.close();
      }
    } finally {
      await media.close();
    }
  });
});

describeWithRedis("overlays and redaction on the Redis tier", () => {
  const prefix = uniqueRedisPrefix();
  const store = new MemoryBlobStore();
  const redis = { url: TEST_REDIS_URL, keyPrefix: prefix, timeoutMs: 500 };
  let plain: TestMedia;
  let peer: TestMedia;
  let forced: TestMedia;
  let peerCalls: string[];
  beforeAll(async () => {
    const counting = countingRender(renderWithAFace());
    peerCalls = counting.calls;
    plain = await startTestMedia({ store, redis, purgeSecret: SECRET, cache: NO_MEMORY, render: renderWithAFace() });
    peer = await startTestMedia({ store, redis, purgeSecret: SECRET, cache: NO_MEMORY, render: counting.render });
    forced = await startTestMedia({
      store,
      redis,
      cache: NO_MEMORY,
      render: renderWithAFace(),
      redactFacesAlways: true,
    });
  });
  afterAll(async () => {
    await Promise.all([plain.close(), peer.close(), forced.close()]);
    await deleteRedisPrefix(prefix);
  });

  it("a redacted URL is not the unredacted one's Redis entry; forced redaction never reads unredacted entries", async () => {
    const id = await store.putFixture("coffee.png");
    const url = `/thumbnail:size=64/${id}.png`;
    const a = await get(`${plain.url}${url}`);
    expect(a.res.headers.get("x-cache")).toBe("MISS");
    // Another replica finds it in Redis (the tier is really shared).
    expect((await get(`${peer.url}${url}`)).res.headers.get("x-cache")).toBe("HIT");
    const redacted = await get(`${peer.url}/thumbnail:size=64/redact:region=0,0,1,1/${id}.png`);
    expect(redacted.res.headers.get("x-cache")).toBe("MISS");
    expect(redacted.body.equals(a.body)).toBe(false);
    const f = await get(`${forced.url}${url}`);
    expect(f.res.headers.get("x-cache")).toBe("MISS");
    expect(f.body.equals(a.body)).toBe(false);
  });

  it("a purge of the overlay asset deletes the Redis entries that show it, for every replica", async () => {
    const base = await putOriginal(store, "#000000", "acme");
    const mark = await putOriginal(store, "#ff0000", "acme", [10, 10]);
    const url = `/overlay:asset=${mark}:gravity=northwest/${base}.png`;
    expect((await get(`${plain.url}${url}`)).res.headers.get("x-cache")).toBe("MISS");
    expect((await get(`${peer.url}${url}`)).res.headers.get("x-cache")).toBe("HIT");
    await paintOriginal(store, mark, "#0000ff", "acme", [10, 10]);
    expect((await purge(plain, [mark])).status).toBe(204);
    const before = peerCalls.length;
    const after = await get(`${peer.url}${url}`);
    expect(after.res.headers.get("x-cache")).toBe("MISS");
    expect(peerCalls.length).toBe(before + 1);
    expect(await topLeft(after.body)).toEqual([0, 0, 255]);
  });

  it("a rendition made through a preset with an overlay, kept in another replica's memory from Redis, is purged with the overlay", async () => {
    const base = await putOriginal(store, "#000000", "acme");
    const mark = await putOriginal(store, "#ff0000", "acme", [10, 10]);
    const presets = compilePresets({ wm: `overlay:asset=${mark}:gravity=northwest` });
    const options = { store, redis, purgeSecret: SECRET, presets, render: renderWithAFace() };
    const a = await startTestMedia(options);
    const b = await startTestMedia(options);
    try {
      const url = `/preset:name=wm/${base}.png`;
      expect((await get(`${a.url}${url}`)).res.headers.get("x-cache")).toBe("MISS");
      // B's hot path finds it in Redis and keeps it in its memory tier.
      expect((await get(`${b.url}${url}`)).res.headers.get("x-cache")).toBe("HIT");
      const kept = await get(`${b.url}${url}`);
      expect(await topLeft(kept.body)).toEqual([255, 0, 0]);
      await paintOriginal(store, mark, "#0000ff", "acme", [10, 10]);
      expect((await purge(a, [mark])).status).toBe(204);
      // B hears of the purge over pub/sub: within 2 s its memory entry is gone.
      const start = performance.now();
      for (;;) {
        const now = await get(`${b.url}${url}`);
        if ((await topLeft(now.body))[2] === 255) break;
        if (performance.now() - start > 2000) throw new Error("B still serves the purged overlay");
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
