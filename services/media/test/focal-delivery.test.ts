// The focal point as delivery sees it: the blob attributes/<id> beside the original (the media
// service never reads Postgres), read only for steps that use it, and made current by a purge
// (the rendition cache key stays the URL).
import { randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import type { Readable } from "node:stream";
import sharp from "sharp";
import request from "supertest";
import { PURGE_PATH } from "@media-platform/contracts";
import { createLogger } from "@media-platform/observability";
import { attributesKey, originalKey, StorageUnavailableError, type BlobObject } from "@media-platform/storage";
import { metricValue, startTestMedia, type TestMedia } from "./support/media-server";
import { MemoryBlobStore } from "./support/memory-store";

const SECRET = "focal-purge-secret-for-tests-0123456789";

/** A memory store that records every key read and can fail the attributes reads. */
class RecordingStore extends MemoryBlobStore {
  readonly reads: string[] = [];
  failAttributes = false;
  /** Bodies handed out for originals, to check none is left open. */
  readonly originalBodies: Readable[] = [];

  override async get(key: string): Promise<BlobObject | null> {
    this.reads.push(key);
    if (this.failAttributes && key.startsWith("attributes/")) {
      throw new StorageUnavailableError("attributes unavailable for the test");
    }
    const blob = await super.get(key);
    if (blob && key.startsWith("originals/")) this.originalBodies.push(blob.body);
    return blob;
  }
}

/** 400 x 200 PNG: left half red, right half blue. */
const halves = () =>
  sharp({ create: { width: 400, height: 200, channels: 3, background: "#ff0000" } })
    .composite([
      { input: { create: { width: 200, height: 200, channels: 3, background: "#0000ff" } }, left: 200, top: 0 },
    ])
    .png()
    .toBuffer();

const colourAt = async (png: Buffer, x: number, y: number) =>
  [...(await sharp(png).extract({ left: x, top: y, width: 1, height: 1 }).raw().toBuffer())].slice(0, 3);

interface LogLine {
  level: string;
  msg: string;
  key?: string;
}

let media: TestMedia;
let store: RecordingStore;
const lines: LogLine[] = [];

beforeAll(async () => {
  store = new RecordingStore();
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split("\n").filter(Boolean)) lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  media = await startTestMedia({
    store,
    purgeSecret: SECRET,
    logger: createLogger({ service: "media", level: "warn", destination }),
  });
});
afterAll(() => media.close());

/** Stores the halves image as a new asset, with an attributes blob when a focal point is given. */
async function newAsset(focalPoint?: unknown): Promise<string> {
  const id = randomUUID();
  await store.put(originalKey(id), await halves(), "image/png");
  if (focalPoint !== undefined) await setAttributes(id, JSON.stringify({ focalPoint }));
  return id;
}
const setAttributes = (id: string, content: string) =>
  store.put(attributesKey(id), Buffer.from(content), "application/json");
const purge = (ids: string[]) =>
  request(media.server).post(PURGE_PATH).set("Authorization", `Bearer ${SECRET}`).send({ assetIds: ids }).expect(204);
const get = (path: string) =>
  request(media.server)
    .get(path)
    .buffer(true)
    .parse((res, done) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => done(null, Buffer.concat(chunks)));
    });

describe("thumbnail on the stored focal point", () => {
  it("centres on it; after the blob changes the cached result stays until POST /internal/purge, then the new point applies", async () => {
    const id = await newAsset({ x: 0.9, y: 0.5 });
    const url = `/thumbnail:size=100/${id}.png`;
    const first = await get(url);
    expect(first.status).toBe(200);
    expect(first.headers["content-type"]).toBe("image/png");
    expect(first.headers["x-cache"]).toBe("MISS");
    expect(await sharp(first.body as Buffer).metadata()).toMatchObject({ width: 100, height: 100 });
    for (const [x, y] of [
      [4, 0],
      [50, 50],
      [99, 99],
    ] as const) {
      expect(await colourAt(first.body as Buffer, x, y)).toEqual([0, 0, 255]);
    }

    await setAttributes(id, JSON.stringify({ focalPoint: { x: 0.05, y: 0.5 } }));
    const cached = await get(url);
    expect(cached.headers["x-cache"]).toBe("HIT");
    expect((cached.body as Buffer).equals(first.body as Buffer)).toBe(true);

    await purge([id]);
    const after = await get(url);
    expect(after.status).toBe(200);
    expect(after.headers["x-cache"]).toBe("MISS");
    for (const [x, y] of [
      [0, 0],
      [50, 50],
      [95, 99],
    ] as const) {
      expect(await colourAt(after.body as Buffer, x, y)).toEqual([255, 0, 0]);
    }
    expect((await get(url)).headers["x-cache"]).toBe("HIT");
  });

  it("without an attributes blob renders the centre square, as before", async () => {
    const id = await newAsset();
    const res = await get(`/thumbnail:size=100/${id}.png`);
    expect(res.status).toBe(200);
    expect(await colourAt(res.body as Buffer, 10, 50)).toEqual([255, 0, 0]);
    expect(await colourAt(res.body as Buffer, 90, 50)).toEqual([0, 0, 255]);
  });

  it.each([
    ["not JSON", "{focal"],
    ["out of range", JSON.stringify({ focalPoint: { x: 2, y: 0.5 } })],
    ["the wrong shape", JSON.stringify({ focalPoint: [0.9, 0.5] })],
  ])("an attributes blob that is %s renders without a focal point and logs a warning", async (_what, content) => {
    const id = await newAsset();
    await setAttributes(id, content);
    const res = await get(`/thumbnail:size=100/${id}.png`);
    expect(res.status).toBe(200);
    expect(await colourAt(res.body as Buffer, 10, 50)).toEqual([255, 0, 0]);
    expect(await colourAt(res.body as Buffer, 90, 50)).toEqual([0, 0, 255]);
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          level: "warn",
          key: attributesKey(id),
          msg: expect.stringMatching(/rendering without a focal point/),
        }),
      ]),
    );
  });

  it("attributes the store cannot read are a 503 (not cached, original stream closed); the next request renders", async () => {
    const id = await newAsset({ x: 0.9, y: 0.5 });
    const url = `/thumbnail:size=100/${id}.png`;
    store.failAttributes = true;
    const opened = store.originalBodies.length;
    const storageErrors = await metricValue(media, "dependency_errors_total", { dependency: "storage" });
    try {
      const res = await request(media.server).get(url);
      expect(res.status).toBe(503);
      expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
      expect(res.headers["cache-control"]).toBe("no-store");
      expect(res.headers["x-cache"]).toBeUndefined();
    } finally {
      store.failAttributes = false;
    }
    expect(await metricValue(media, "dependency_errors_total", { dependency: "storage" })).toBe(storageErrors + 1);
    const bodies = store.originalBodies.slice(opened);
    expect(bodies).toHaveLength(1);
    expect(bodies[0]!.destroyed).toBe(true);
    const ok = await get(url);
    expect([ok.status, ok.headers["x-cache"]]).toEqual([200, "MISS"]);
    expect(await colourAt(ok.body as Buffer, 50, 50)).toEqual([0, 0, 255]);
  });

  it("a missing original is a 404 even when its attributes exist (trashed asset)", async () => {
    const id = await newAsset({ x: 0.9, y: 0.5 });
    await store.delete(originalKey(id));
    const res = await request(media.server).get(`/thumbnail:size=100/${id}.png`);
    expect(res.status).toBe(404);
    expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
  });
});

describe("which requests read the attributes blob", () => {
  it.each([
    ["thumbnail", "thumbnail:size=64", true],
    ["avatar", "avatar:size=64", true],
    ["crop gravity=focal", "crop:width=50:height=50:gravity=focal", true],
    ["crop gravity=focal with x only", "crop:width=50:height=50:x=3:gravity=focal", true],
    ["a chain ending in a thumbnail", "grayscale/thumbnail:size=64", true],
    ["crop gravity=focal with x and y", "crop:width=50:height=50:x=3:y=4:gravity=focal", false],
    ["crop gravity=center", "crop:width=50:height=50", false],
    ["crop gravity=attention", "crop:width=50:height=50:gravity=attention", false],
    ["crop gravity=entropy", "crop:width=50:height=50:gravity=entropy", false],
    ["grayscale", "grayscale", false],
    ["resize", "resize:width=100", false],
    ["fit", "fit:width=100:height=100", false],
  ])("%s: %s -> attributes read: %s", async (_name, steps, reads) => {
    const id = await newAsset({ x: 0.9, y: 0.5 });
    const before = store.reads.length;
    const res = await request(media.server).get(`/${steps}/${id}.png`);
    expect(res.status).toBe(200);
    expect(res.headers["x-cache"]).toBe("MISS");
    const keys = store.reads.slice(before);
    expect(keys.sort()).toEqual(reads ? [attributesKey(id), originalKey(id)] : [originalKey(id)]);
    // A HIT reads nothing.
    const again = store.reads.length;
    expect((await request(media.server).get(`/${steps}/${id}.png`)).headers["x-cache"]).toBe("HIT");
    expect(store.reads.length).toBe(again);
  });
});

describe("crop gravity=focal and avatar over HTTP", () => {
  it("crop gravity=focal is the exact window around the point; without a blob, the centre", async () => {
    const id = await newAsset({ x: 0.875, y: 0.25 });
    const res = await get(`/crop:width=100:height=100:gravity=focal/${id}.png`);
    expect(res.status).toBe(200);
    expect(await sharp(res.body as Buffer).metadata()).toMatchObject({ width: 100, height: 100 });
    // centred on (350, 50): x 300-400 (blue), y 0-100
    expect(await colourAt(res.body as Buffer, 0, 0)).toEqual([0, 0, 255]);
    const plain = await newAsset();
    const centre = await get(`/crop:width=100:height=100:gravity=focal/${plain}.png`);
    expect(await colourAt(centre.body as Buffer, 49, 50)).toEqual([255, 0, 0]);
    expect(await colourAt(centre.body as Buffer, 50, 50)).toEqual([0, 0, 255]);
  });

  it("avatar centres on the point", async () => {
    const id = await newAsset({ x: 0.05, y: 0.5 });
    const res = await get(`/avatar:size=64/${id}.png`);
    expect(res.status).toBe(200);
    expect(await colourAt(res.body as Buffer, 5, 32)).toEqual([255, 0, 0]);
    expect(await colourAt(res.body as Buffer, 58, 32)).toEqual([255, 0, 0]);
  });
});

describe("GET /transformations", () => {
  it("lists crop's extension gravities apart from the spec's five; other parameters are as before", async () => {
    const res = await request(media.server).get("/transformations");
    expect(res.status).toBe(200);
    const body = res.body as {
      transformations: Array<{ name: string; description: string; params: Array<Record<string, unknown>> }>;
    };
    const crop = body.transformations.find((t) => t.name === "crop")!;
    expect(crop.params.find((p) => p.name === "gravity")).toMatchObject({
      type: "enum",
      values: ["center", "north", "south", "east", "west"],
      extensionValues: ["focal", "attention", "entropy"],
      default: "center",
      range: "one of center, north, south, east, west",
      description: expect.stringMatching(/focal centres it on the asset's focal point/),
    });
    const avatar = body.transformations.find((t) => t.name === "avatar")!;
    expect(avatar.params.find((p) => p.name === "shape")).toMatchObject({
      values: ["square", "circle"],
      extensionValues: [],
    });
    expect(avatar.params.find((p) => p.name === "size")).not.toHaveProperty("extensionValues");
    expect(avatar.description).toMatch(/focal point/);
    expect(body.transformations.find((t) => t.name === "thumbnail")!.description).toMatch(/centred on it/);
  });

  it("a bad gravity is a 400 naming both lists", async () => {
    const id = await newAsset();
    const res = await request(media.server).get(`/crop:width=10:height=10:gravity=smart/${id}.png`);
    expect(res.status).toBe(400);
    expect(JSON.parse(res.text)).toMatchObject({
      errors: [
        {
          path: "crop.gravity",
          message: expect.stringContaining(
            "allowed: one of center, north, south, east, west, or the extensions focal, attention, entropy",
          ),
        },
      ],
    });
  });
});
