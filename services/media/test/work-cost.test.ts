import sharp from "sharp";
import request from "supertest";
import {
  defaultMediaLimits,
  parseMediaPath,
  transformationSpecs,
  type RasterFormat,
  type TransformationName,
} from "@media-platform/contracts";
import { originalKey } from "@media-platform/storage";
import { loadMediaConfig, MediaConfigError } from "../src/config";
import { WorkGate } from "../src/delivery/limiter";
import {
  AVIF_NS_PER_PIXEL,
  encoderNsPerPixel,
  SSIMULACRA2_NS_PER_PIXEL,
  STEP_NS_PER_PIXEL,
} from "../src/render/pipeline/cost";
import { TransformationInputError } from "../src/render/errors";
import { planRender } from "../src/render/pipeline/plan";
import { transformations } from "../src/render/transformations";
import { MemoryBlobStore } from "./support/memory-store";
import { startTestMedia, type TestMedia } from "./support/media-server";

const ID = "0f8fad5b-d9cb-469f-a165-70867728950e";
const stepsOf = (url: string) => parseMediaPath(`/${url}/${ID}.jpg`, defaultMediaLimits).steps;

/** The crafted URLs: an 8x8 original padded to 49 MP, noised, encoded as AVIF. */
const CRAFTED = [1, 2, 3].map((n) => `fit:width=8192:height=6000/add-noise:amount=9${n}/format:type=avif`);

/** Every spec transformation at full size of a 12 MP photo, at the expensive end of its parameters. */
const FULL_SIZE_12MP: Record<Exclude<TransformationName, "format">, string> = {
  crop: "crop:width=4000:height=3000",
  "color-balance": "color-balance:cyan=50:magenta=-50:yellow=50",
  clahe: "clahe",
  grayscale: "grayscale",
  fit: "fit:width=4000:height=3000",
  saturation: "saturation:value=10",
  "add-noise": "add-noise:amount=100",
  brightness: "brightness:value=2.0",
  wave: "wave:amplitude=100:wavelength=50",
  channelManipulation: "channelManipulation:red=1.5:green=.5:blue=1.0",
  sharpen: "sharpen:value=20",
  avatar: "avatar:size=3000:border=100",
  thumbnail: "thumbnail:size=4000",
  exposure: "exposure:value=2.0",
  solarize: "solarize",
  threshold: "threshold:value=128",
  resize: "resize:width=4000:height=3000",
  frame: "frame:index=0",
  page: "page:index=1",
  "max-bytes": "max-bytes:value=500000",
  overlay: `overlay:asset=${ID}:scale=1.0`,
  text: "text:text=A%20caption:size=256:background=000000",
  redact: "redact:faces=true:region=0,0,1,1",
};

describe("cost table (pipeline/cost.ts, calibrated by bench/calibrate-cost.ts)", () => {
  it("prices every transformation of the contracts' table and every encoder effort, all positive", () => {
    expect(Object.keys(STEP_NS_PER_PIXEL).sort()).toEqual(Object.keys(transformationSpecs).sort());
    expect(Object.keys(STEP_NS_PER_PIXEL).sort()).toEqual(Object.keys(transformations).sort());
    for (const ns of Object.values(STEP_NS_PER_PIXEL)) expect(ns).toBeGreaterThan(0);
    expect(AVIF_NS_PER_PIXEL).toHaveLength(10);
    for (const format of ["jpeg", "png", "webp", "gif", "tiff", "avif"] as RasterFormat[]) {
      expect(encoderNsPerPixel(format)).toBeGreaterThan(0);
    }
  });

  it("AVIF at sharp's default effort (4) costs more per pixel than JPEG", () => {
    expect(encoderNsPerPixel("avif")).toBe(AVIF_NS_PER_PIXEL[4]);
    expect(encoderNsPerPixel("avif")).toBeGreaterThan(encoderNsPerPixel("jpeg"));
    expect(encoderNsPerPixel("avif", 9)).toBeGreaterThan(encoderNsPerPixel("avif", 0));
  });
});

describe("planRender: the work cost from the header, before decoding", () => {
  it("sums each step's pixels times its cost plus the encoder's output pixels times its cost", () => {
    const plan = planRender(
      stepsOf("grayscale/crop:width=100:height=50"),
      { width: 400, height: 300 },
      defaultMediaLimits,
      {
        format: "png",
      },
    );
    const expected =
      (120_000 * STEP_NS_PER_PIXEL.grayscale + 120_000 * STEP_NS_PER_PIXEL.crop + 5000 * encoderNsPerPixel("png")) /
      1e6;
    expect(plan.workCost).toBeCloseTo(expected, 9);
  });

  it("counts padding as the output pixels it makes (fit of an 8x8 original to 8192x6000)", () => {
    const plan = planRender(stepsOf("fit:width=8192:height=6000"), { width: 8, height: 8 }, defaultMediaLimits);
    expect(plan.workCost).toBeCloseTo((8192 * 6000 * STEP_NS_PER_PIXEL.fit) / 1e6, 6);
  });

  it("prices the encoder of a format step (AVIF at the given effort) over the original's format", () => {
    const size = { width: 1000, height: 1000 };
    const avif = planRender(stepsOf("format:type=avif"), size, defaultMediaLimits, { format: "jpeg", avifEffort: 7 });
    expect(avif.workCost).toBeCloseTo((1e6 * STEP_NS_PER_PIXEL.format + 1e6 * AVIF_NS_PER_PIXEL[7]!) / 1e6, 6);
  });

  it("prices quality=auto as 4 encodes and 4 SSIMULACRA2 scores, and max-bytes as its 6 extra encodes", () => {
    const size = { width: 1000, height: 1000 };
    const fixed = planRender(stepsOf("format:type=webp:quality=75"), size, defaultMediaLimits, { format: "jpeg" });
    const auto = planRender(stepsOf("format:type=webp:quality=auto"), size, defaultMediaLimits, { format: "jpeg" });
    const thumb = planRender(stepsOf("thumbnail:size=1000:quality=auto"), size, defaultMediaLimits, { format: "jpeg" });
    const budget = planRender(stepsOf("format:type=webp/max-bytes:value=20000"), size, defaultMediaLimits, {
      format: "jpeg",
    });
    const webp = encoderNsPerPixel("webp");
    expect(fixed.workCost).toBeCloseTo((1e6 * STEP_NS_PER_PIXEL.format + 1e6 * webp) / 1e6, 6);
    expect(auto.workCost).toBeCloseTo(
      (1e6 * STEP_NS_PER_PIXEL.format + 1e6 * (4 * webp + 4 * SSIMULACRA2_NS_PER_PIXEL)) / 1e6,
      6,
    );
    expect(thumb.workCost).toBeCloseTo(
      (1e6 * STEP_NS_PER_PIXEL.thumbnail + 1e6 * (4 * encoderNsPerPixel("jpeg") + 4 * SSIMULACRA2_NS_PER_PIXEL)) / 1e6,
      6,
    );
    expect(budget.workCost).toBeCloseTo(
      (1e6 * STEP_NS_PER_PIXEL.format + 1e6 * STEP_NS_PER_PIXEL["max-bytes"] + 1e6 * 7 * webp) / 1e6,
      6,
    );
  });

  it("multiplies by the frames of an animated original", () => {
    const size = { width: 500, height: 400 };
    const one = planRender(stepsOf("grayscale"), size, defaultMediaLimits, { format: "gif" });
    const ten = planRender(stepsOf("grayscale"), size, defaultMediaLimits, { format: "gif", frames: 10 });
    expect(ten.workCost).toBeCloseTo(one.workCost * 10, 6);
  });

  it.each(CRAFTED)(
    "refuses the crafted URL %s on an 8x8 JPEG with a 400 naming MEDIA_MAX_WORK_COST and the dearest step",
    (url) => {
      let error: unknown;
      try {
        planRender(stepsOf(url), { width: 8, height: 8 }, defaultMediaLimits, { format: "jpeg" });
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(TransformationInputError);
      const e = error as TransformationInputError;
      expect(e.message).toContain("MEDIA_MAX_WORK_COST");
      expect(e.message).toMatch(/the most expensive step is (add-noise|encoding avif at effort 4|fit) \(49\.2 MP\)/);
      // The problem names the step that costs most, found from the same table.
      const costs: Record<string, number> = {
        fit: STEP_NS_PER_PIXEL.fit,
        "add-noise": STEP_NS_PER_PIXEL["add-noise"],
        "format.type": encoderNsPerPixel("avif") + 0,
      };
      const dearest = Object.entries(costs).sort((a, b) => b[1] - a[1])[0]![0];
      expect(e.path).toBe(dearest);
    },
  );

  it.each(["jpeg", "png", "webp"] as RasterFormat[])(
    "admits every spec transformation at full size of a 12 MP photo by default, with 2x margin (output %s)",
    (format) => {
      for (const [name, url] of Object.entries(FULL_SIZE_12MP)) {
        const plan = planRender(stepsOf(url), { width: 4000, height: 3000 }, defaultMediaLimits, { format });
        expect({ name, margin: plan.workCost * 2 <= defaultMediaLimits.maxWorkCost }).toEqual({ name, margin: true });
      }
    },
  );
});

describe("MEDIA_MAX_WORK_COST", () => {
  it("sets limits.maxWorkCost; default from the contracts; junk refused naming the variable", () => {
    expect(loadMediaConfig({ MEDIA_MAX_WORK_COST: "1234" }).limits.maxWorkCost).toBe(1234);
    expect(loadMediaConfig({}).limits.maxWorkCost).toBe(defaultMediaLimits.maxWorkCost);
    expect(() => loadMediaConfig({ MEDIA_MAX_WORK_COST: "0" })).toThrow(MediaConfigError);
    expect(() => loadMediaConfig({ MEDIA_MAX_WORK_COST: "1.5" })).toThrow(/MEDIA_MAX_WORK_COST/);
  });
});

describe("the service refuses the crafted URLs before decoding", () => {
  let media: TestMedia | undefined;
  afterAll(async () => {
    await media?.close();
  });

  it("answers 400 problem+json naming MEDIA_MAX_WORK_COST for each crafted URL on an 8x8 JPEG, and still serves small crops", async () => {
    const store = new MemoryBlobStore();
    media = await startTestMedia({ store });
    const tiny = await sharp({ create: { width: 8, height: 8, channels: 3, background: "#808080" } })
      .jpeg()
      .toBuffer();
    await store.put(originalKey(ID), tiny, "image/jpeg");
    for (const url of CRAFTED) {
      const res = await request(media.server).get(`/${url}/${ID}.jpg`);
      expect(res.status).toBe(400);
      expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
      expect(JSON.stringify(res.body)).toContain("MEDIA_MAX_WORK_COST");
    }
    const ok = await request(media.server).get(`/crop:width=4:height=4/${ID}.jpg`);
    expect(ok.status).toBe(200);
    const meta = await sharp(ok.body as Buffer).metadata();
    expect([meta.width, meta.height]).toEqual([4, 4]);
  });
});

describe("WorkGate lanes: a small request is never queued behind a large one", () => {
  it("admits a light request at once while heavy ones hold and queue for the heavy lane", async () => {
    const gate = new WorkGate(6400); // light: at most 100 pixels each, 800 in all; heavy lane 5600
    const heavy = await gate.acquire(5000);
    const queuedHeavy = gate.acquire(2000);
    let heavyStarted = false;
    void queuedHeavy.then(() => (heavyStarted = true));
    const light = await gate.acquire(100);
    const light2 = await gate.acquire(100);
    expect(gate.inFlight).toBe(5200);
    expect(heavyStarted).toBe(false);
    light();
    light2();
    heavy();
    const release = await queuedHeavy;
    expect(gate.inFlight).toBe(2000);
    release();
    expect(gate.inFlight).toBe(0);
  });

  it("queues light requests in their own lane, FIFO, when it is full and the heavy lane has no room to lend", async () => {
    const gate = new WorkGate(6400);
    const heavy = await gate.acquire(5600);
    const held = await Promise.all(Array.from({ length: 8 }, () => gate.acquire(100)));
    const order: string[] = [];
    const ninth = gate.acquire(100).then((r) => (order.push("ninth"), r));
    const tenth = gate.acquire(50).then((r) => (order.push("tenth"), r));
    await Promise.resolve();
    expect(order).toEqual([]);
    held[0]!();
    (await ninth)();
    held[1]!();
    (await tenth)();
    expect(order).toEqual(["ninth", "tenth"]);
    for (const r of held) r();
    heavy();
    expect(gate.inFlight).toBe(0);
  });

  it("lends the heavy lane's idle room to light requests while no heavy request waits (work-conserving)", async () => {
    const gate = new WorkGate(6400);
    // Thirty light requests of 100: 800 reserved for them, the rest lent by the idle heavy lane.
    const light = await Promise.all(Array.from({ length: 30 }, () => gate.acquire(100)));
    // Light by cost but holding 3000 (a crop of a large photo): larger than the reserve, it borrows too.
    const large = await gate.acquire(3000, undefined, 10);
    expect(gate.inFlight).toBe(6000);
    // A heavy request that finds its lane lent out waits, and from then on nothing more is lent.
    let heavyAdmitted = false;
    const heavy = gate.acquire(5000).then((r) => ((heavyAdmitted = true), r));
    let lightAdmitted = false;
    const more = gate.acquire(100).then((r) => ((lightAdmitted = true), r));
    await Promise.resolve();
    expect([heavyAdmitted, lightAdmitted]).toEqual([false, false]);
    for (const r of [...light, large]) r();
    const heavyRelease = await heavy;
    const moreRelease = await more;
    expect(gate.inFlight).toBe(5100);
    heavyRelease();
    moreRelease();
    expect(gate.inFlight).toBe(0);
  });
});
