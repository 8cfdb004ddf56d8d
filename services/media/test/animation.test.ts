import { randomUUID } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import sharp from "sharp";
import request from "supertest";
import { defaultMediaLimits, originalHeaderOf, type MediaLimits } from "@media-platform/contracts";
import { originalKey } from "@media-platform/storage";
import { loadMediaConfig } from "../src/config";
import type { RenderFn } from "../src/render/pipeline/render";
import { render, type RenderDeps } from "../src/render/pipeline/render";
import { ImagePixelLimitError, TransformationInputError } from "../src/render/errors";
import { createPixelWorkers, type PixelWorkerPool } from "../src/render/pixels/pool";
import { transformations } from "../src/render/transformations";
import { startTestMedia, type TestMedia } from "./support/media-server";

// sharp's own test images (see the corpus README); a missing folder fails every test here.
const CORPUS = path.resolve(__dirname, "../../../../shared/fixtures/corpus/sharp");
if (!existsSync(CORPUS)) throw new Error(`the image corpus is missing: ${CORPUS}`);
const corpus = (file: string) => readFileSync(path.join(CORPUS, file));

/** The asset id of the original the current server holds (a fresh one per server: no cache carries over). */
let ID = "";

let pixels: PixelWorkerPool;
beforeAll(() => {
  pixels = createPixelWorkers({ size: 2 });
});
afterAll(() => pixels.close());

function depsWith(
  limits: MediaLimits = defaultMediaLimits,
  maxAnimationFrames?: number,
  limitInputPixels = 100_000_000,
): RenderDeps {
  return { limits, limitInputPixels, pixels, faces: { detect: async () => [] }, maxAnimationFrames };
}

let media: TestMedia | undefined;
afterEach(async () => {
  jest.restoreAllMocks();
  await media?.close();
  media = undefined;
});

/** A media server over the real pipeline with `file` stored as the asset ID. */
async function serve(file: string, contentType: string, limits = defaultMediaLimits, maxAnimationFrames?: number) {
  const deps = depsWith(limits, maxAnimationFrames);
  const renderFn: RenderFn = (input, options) => render(input, deps, options);
  media = await startTestMedia({ limits, render: renderFn });
  ID = randomUUID();
  await media.store.put(originalKey(ID), corpus(file), contentType);
  return media;
}

/** A GET whose body is the response's bytes (supertest buffers image/* bodies). */
async function get(url: string) {
  const res = await request(media!.server).get(url);
  if (res.status === 200) expect(Buffer.isBuffer(res.body)).toBe(true);
  return res as request.Response & { body: Buffer };
}

/** Frame `page` of an encoded image as RGB over grey (transparent pixels compare by their backdrop). */
async function frameRgb(image: Buffer | sharp.Sharp, page?: number) {
  const pipeline = Buffer.isBuffer(image) ? sharp(image, { page: page ?? 0 }) : image;
  return pipeline.flatten({ background: "#808080" }).removeAlpha().raw().toBuffer({ resolveWithObject: true });
}

function meanAbsDiff(a: Buffer, b: Buffer): number {
  expect(a.length).toBe(b.length);
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += Math.abs(a[i]! - b[i]!);
  return sum / a.length;
}

describe("animated GIF and WebP originals stay animated", () => {
  it.each([
    ["animated-loop-3.gif", "image/gif", 10, 3],
    ["animated-loop-3.webp", "image/webp", 10, 3],
    ["rotating-squares.gif", "image/gif", 30, 0],
    ["rotating-squares.webp", "image/webp", 9, 0],
  ])(
    "fit:width=100:height=100 of %s keeps its format, frames, delays and loop count",
    async (file, type, frames, loop) => {
      const source = await sharp(corpus(file)).metadata();
      expect(source.pages).toBe(frames);
      await serve(file, type);
      const res = await get(`/fit:width=100:height=100/${ID}.${type.slice(6)}`);
      expect(res.status).toBe(200);
      expect(res.headers["content-type"]).toBe(type);
      const out = await sharp(res.body, { pages: -1 }).metadata();
      expect(out.format).toBe(type.slice(6));
      expect(out.pages).toBe(frames);
      expect(out.width).toBe(100);
      expect(out.pageHeight).toBe(100);
      expect(out.height).toBe(100 * frames);
      expect(out.loop).toBe(loop);
      expect(out.delay).toEqual(source.delay);
    },
  );

  it("each frame of a geometry step equals the same step on that frame alone (GIF)", async () => {
    await serve("animated-loop-3.gif", "image/gif");
    const res = await get(`/fit:width=100:height=100/${ID}.gif`);
    expect(res.status).toBe(200);
    const original = corpus("animated-loop-3.gif");
    for (const page of [0, 4, 9]) {
      const got = await frameRgb(res.body, page);
      expect(got.info).toMatchObject({ width: 100, height: 100 });
      const resized = await sharp(original, { page })
        .resize(100, 100, { fit: "contain", background: "#ffffff" })
        .png()
        .toBuffer();
      const want = await frameRgb(resized);
      // Re-quantised to a palette: nearly equal, and closer to its own frame than to any other.
      const own = meanAbsDiff(got.data, want.data);
      expect(own).toBeLessThan(0.2);
      for (const other of [0, 3, 5, 9].filter((p) => p !== page)) {
        const resizedOther = await sharp(original, { page: other })
          .resize(100, 100, { fit: "contain", background: "#ffffff" })
          .png()
          .toBuffer();
        expect(meanAbsDiff(got.data, (await frameRgb(resizedOther)).data)).toBeGreaterThan(own + 0.3);
      }
    }
  });

  it("a colour step applies to every frame (grayscale of the WebP): frame N is the grey of frame N", async () => {
    await serve("rotating-squares.webp", "image/webp");
    const res = await get(`/grayscale/${ID}.webp`);
    expect(res.status).toBe(200);
    const out = await sharp(res.body, { pages: -1 }).metadata();
    expect(out).toMatchObject({ pages: 9, width: 80, pageHeight: 80, loop: 0 });
    expect(out.delay).toEqual([120, 120, 90, 120, 120, 90, 120, 90, 30]);
    for (const page of [0, 5]) {
      const got = await frameRgb(res.body, page);
      const want = await frameRgb(
        sharp(await sharp(corpus("rotating-squares.webp"), { page }).grayscale().png().toBuffer()),
      );
      expect(meanAbsDiff(got.data, want.data)).toBeLessThan(3);
      // Grey: the three channels agree.
      for (let i = 0; i < got.data.length; i += 3) {
        expect(Math.abs(got.data[i]! - got.data[i + 1]!)).toBeLessThanOrEqual(2);
      }
    }
  });

  it("a pixel kernel (wave) applies per frame, without bleeding across frame borders", async () => {
    await serve("rotating-squares.gif", "image/gif");
    const res = await get(`/wave:amplitude=5:wavelength=20/${ID}.gif`);
    expect(res.status).toBe(200);
    const out = await sharp(res.body, { pages: -1 }).metadata();
    // The wave grows each frame by 2 x amplitude, frame by frame.
    expect(out).toMatchObject({ pages: 30, width: 80, pageHeight: 90, height: 90 * 30 });
    for (const page of [0, 17]) {
      const still = await get(`/frame:index=${page}/wave:amplitude=5:wavelength=20/${ID}.gif`);
      expect(still.status).toBe(200);
      const stillMeta = await sharp(still.body).metadata();
      expect(stillMeta).toMatchObject({ width: 80, height: 90, pages: 1 });
      expect(meanAbsDiff((await frameRgb(res.body, page)).data, (await frameRgb(still.body)).data)).toBeLessThan(2);
    }
  });

  it("sharpen and crop keep every frame", async () => {
    await serve("animated-loop-3.webp", "image/webp");
    const res = await get(`/crop:width=200:height=100:gravity=north/sharpen:value=1/${ID}.webp`);
    expect(res.status).toBe(200);
    const out = await sharp(res.body, { pages: -1 }).metadata();
    expect(out).toMatchObject({ width: 200, pageHeight: 100, loop: 3 });
    // The top of this animation repeats between some frames, which the WebP encoder merges (their
    // delays added up): the same timing, in at most the original's frames.
    expect(out.pages).toBeGreaterThan(1);
    expect(out.pages).toBeLessThanOrEqual(10);
    expect(out.delay!.reduce((a, b) => a + b, 0)).toBe(9 * 3000 + 15000);
  });

  it("format:type=webp of a GIF stays animated; format:type=png takes the first frame (poster)", async () => {
    await serve("rotating-squares.gif", "image/gif");
    const webp = await get(`/format:type=webp/${ID}.gif`);
    expect(webp.status).toBe(200);
    expect(webp.headers["content-type"]).toBe("image/webp");
    // The WebP encoder merges identical consecutive frames (this GIF repeats each one 4 or 5 times),
    // adding up their delays: the same timing in fewer frames.
    const webpMeta = await sharp(webp.body, { pages: -1 }).metadata();
    expect(webpMeta).toMatchObject({ width: 80, pageHeight: 80, loop: 0 });
    expect(webpMeta.pages).toBeGreaterThan(1);
    expect(webpMeta.delay!.reduce((a, b) => a + b, 0)).toBe(30 * 30);

    const png = await get(`/format:type=png/${ID}.gif`);
    expect(png.status).toBe(200);
    expect(png.headers["content-type"]).toBe("image/png");
    const meta = await sharp(png.body).metadata();
    expect(meta).toMatchObject({ width: 80, height: 80 });
    expect(meta.pages ?? 1).toBe(1);
    const poster = await frameRgb(sharp(corpus("rotating-squares.gif"), { page: 0 }));
    expect(meanAbsDiff((await frameRgb(png.body)).data, poster.data)).toBeLessThan(1);
  });

  it.each([
    ["thumbnail:size=64", 64, 64],
    ["resize:width=50", 50, 39],
    ["crop:width=100:height=80:x=10:y=20", 100, 80],
    ["fit:width=64:height=64/brightness:value=1.2/saturation:value=0.5", 64, 64],
  ])("%s of rotating-squares.gif / animated-loop-3.gif keeps every frame", async (chain, width, height) => {
    const file = width === 50 || width === 100 ? "animated-loop-3.gif" : "rotating-squares.gif";
    const frames = file === "animated-loop-3.gif" ? 10 : 30;
    await serve(file, "image/gif");
    const res = await get(`/${chain}/${ID}.gif`);
    expect(res.status).toBe(200);
    expect(await sharp(res.body, { pages: -1 }).metadata()).toMatchObject({
      pages: frames,
      width,
      pageHeight: height,
      height: height * frames,
    });
  });

  it("crop with gravity=attention takes the first frame (its window is chosen from the pixels)", async () => {
    await serve("rotating-squares.webp", "image/webp");
    const res = await get(`/crop:width=40:height=40:gravity=attention/${ID}.webp`);
    expect(res.status).toBe(200);
    const meta = await sharp(res.body).metadata();
    expect(meta).toMatchObject({ width: 40, height: 40 });
    expect(meta.pages ?? 1).toBe(1);
    // crop:gravity=north applies to every frame.
    const north = await get(`/crop:width=40:height=40:gravity=north/${ID}.webp`);
    const northMeta = await sharp(north.body, { pages: -1 }).metadata();
    expect(northMeta).toMatchObject({ width: 40, pageHeight: 40 });
    // (WebP merges identical consecutive frames: some corners repeat.)
    expect(northMeta.pages).toBeGreaterThan(1);
  });

  it("kernels (clahe, color-balance, add-noise) keep every frame; frame N matches frame N alone", async () => {
    await serve("animated-loop-3.gif", "image/gif");
    const noisy = await get(`/add-noise:amount=5/${ID}.gif`);
    expect(await sharp(noisy.body, { pages: -1 }).metadata()).toMatchObject({ pages: 10, pageHeight: 285 });
    // add-noise is seeded by the URL, so the still of one frame (another URL) has other noise: not compared.
    const chain = "clahe/color-balance:cyan=30";
    const res = await get(`/${chain}/${ID}.gif`);
    expect(res.status).toBe(200);
    const out = await sharp(res.body, { pages: -1 }).metadata();
    expect(out).toMatchObject({ pages: 10, width: 370, pageHeight: 285, loop: 3 });
    expect(out.delay).toEqual([3000, 3000, 3000, 3000, 3000, 3000, 3000, 3000, 3000, 15000]);
    const still = await get(`/frame:index=7/${chain}/${ID}.gif`);
    expect(meanAbsDiff((await frameRgb(res.body, 7)).data, (await frameRgb(still.body)).data)).toBeLessThan(2);
  });

  it("avatar takes the first frame (poster), in the stored format", async () => {
    await serve("animated-loop-3.gif", "image/gif");
    const res = await get(`/avatar:size=64/${ID}.gif`);
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toBe("image/gif");
    expect(await sharp(res.body).metadata()).toMatchObject({ width: 64, height: 64, pages: 1 });
  });
});

describe("frame:index (poster of one frame)", () => {
  it("frame:index=N renders frame N as a still", async () => {
    await serve("animated-loop-3.gif", "image/gif");
    const original = corpus("animated-loop-3.gif");
    for (const page of [0, 9]) {
      const res = await get(`/frame:index=${page}/${ID}.gif`);
      expect(res.status).toBe(200);
      expect(await sharp(res.body).metadata()).toMatchObject({ width: 370, height: 285, pages: 1 });
      const want = await frameRgb(sharp(original, { page }));
      expect(meanAbsDiff((await frameRgb(res.body)).data, want.data)).toBeLessThan(2);
    }
    // The two posters differ: the index is honoured.
    const a = await frameRgb((await get(`/frame:index=0/${ID}.gif`)).body);
    const b = await frameRgb((await get(`/frame:index=9/${ID}.gif`)).body);
    expect(meanAbsDiff(a.data, b.data)).toBeGreaterThan(3);
  });

  it("frame after other steps selects the same frame; frame alone is frame 0", async () => {
    await serve("rotating-squares.webp", "image/webp");
    const before = await get(`/frame:index=4/fit:width=40:height=40/${ID}.webp`);
    const after = await get(`/fit:width=40:height=40/frame:index=4/${ID}.webp`);
    expect(before.status).toBe(200);
    expect(after.status).toBe(200);
    const meta = await sharp(after.body).metadata();
    expect(meta).toMatchObject({ width: 40, height: 40 });
    expect(meta.pages ?? 1).toBe(1);
    expect(meanAbsDiff((await frameRgb(before.body)).data, (await frameRgb(after.body)).data)).toBeLessThan(1);
    const bare = await get(`/frame/${ID}.webp`);
    const zero = await get(`/frame:index=0/${ID}.webp`);
    expect(bare.status).toBe(200);
    expect(bare.body.equals(zero.body)).toBe(true);
  });

  it("answers 400 naming frame.index for a frame past the last (and past 0 on a still)", async () => {
    await serve("animated-loop-3.gif", "image/gif");
    const res = await request(media!.server).get(`/frame:index=10/${ID}.gif`);
    expect(res.status).toBe(400);
    expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(res.text).errors).toEqual([
      { path: "frame.index", message: "frame 10 does not exist: the image has 10 frames (index 0 to 9)" },
    ]);
    await media!.close();
    await serve("Crash_test.gif", "image/gif");
    const still = await request(media!.server).get(`/frame:index=1/${ID}.gif`);
    expect(still.status).toBe(400);
    expect(JSON.parse(still.text).errors[0].path).toBe("frame.index");
    const ok = await get(`/frame:index=0/${ID}.gif`);
    expect(ok.status).toBe(200);
  });
});

describe("limits, checked before decoding", () => {
  it("MEDIA_MAX_ANIMATION_FRAMES: default 256, a whole number from 1", () => {
    expect(loadMediaConfig({}).maxAnimationFrames).toBe(256);
    expect(loadMediaConfig({ MEDIA_MAX_ANIMATION_FRAMES: "16" }).maxAnimationFrames).toBe(16);
    expect(() => loadMediaConfig({ MEDIA_MAX_ANIMATION_FRAMES: "0" })).toThrow(/MEDIA_MAX_ANIMATION_FRAMES/);
    expect(() => loadMediaConfig({ MEDIA_MAX_ANIMATION_FRAMES: "2.5" })).toThrow(/MEDIA_MAX_ANIMATION_FRAMES/);
  });

  it("answers 400 naming MEDIA_MAX_ANIMATION_FRAMES above the cap; no step runs, frame:index still renders", async () => {
    await serve("rotating-squares.gif", "image/gif", defaultMediaLimits, 16);
    const fit = jest.spyOn(transformations.fit, "apply");
    const res = await request(media!.server).get(`/fit:width=40:height=40/${ID}.gif`);
    expect(res.status).toBe(400);
    expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
    const body = JSON.parse(res.text);
    expect(body.errors[0].path).toBe("MEDIA_MAX_ANIMATION_FRAMES");
    expect(body.detail).toContain("30 frames, above the cap of 16 frames");
    expect(fit).not.toHaveBeenCalled();
    const poster = await get(`/frame:index=2/fit:width=40:height=40/${ID}.gif`);
    expect(poster.status).toBe(200);
  });

  it("refuses from the stored header facts without reading a byte of the original", async () => {
    const bytes = corpus("rotating-squares.gif");
    const header = originalHeaderOf(await sharp(bytes).metadata())!;
    expect(header.pages).toBe(30);
    let reads = 0;
    const original = {
      size: bytes.length,
      read: async () => {
        reads++;
        throw new Error("no read expected");
      },
    };
    const attempt = render(
      { original, header, contentType: "image/gif", steps: [{ name: "grayscale", params: {} }], cacheKey: "k" },
      depsWith(defaultMediaLimits, 29),
    );
    await expect(attempt).rejects.toThrow(TransformationInputError);
    await expect(attempt).rejects.toMatchObject({ path: "MEDIA_MAX_ANIMATION_FRAMES" });
    expect(reads).toBe(0);
  });

  it("holds LIMIT_INPUT_PIXELS to all the frames decoded (refused before decoding); one frame still renders", async () => {
    const bytes = corpus("rotating-squares.gif");
    const deps = depsWith(defaultMediaLimits, undefined, 80 * 80 * 29);
    const steps = [{ name: "grayscale" as const, params: {} }];
    await expect(render({ original: bytes, contentType: "image/gif", steps, cacheKey: "k" }, deps)).rejects.toThrow(
      ImagePixelLimitError,
    );
    const poster = await render(
      {
        original: bytes,
        contentType: "image/gif",
        steps: [{ name: "frame", params: { index: 3 } }, ...steps],
        cacheKey: "k",
      },
      deps,
    );
    expect(poster).toMatchObject({ width: 80, height: 80, contentType: "image/gif" });
  });

  it("counts frames x pixels in the work budget (MEDIA_MAX_WORK_PIXELS)", async () => {
    // 370 x 285 = 105450 pixels a frame: one frame fits 500000, ten do not.
    const limits = { ...defaultMediaLimits, maxWorkPixels: 500_000 };
    await serve("animated-loop-3.gif", "image/gif", limits);
    const res = await request(media!.server).get(`/fit:width=100:height=100/${ID}.gif`);
    expect(res.status).toBe(400);
    const body = JSON.parse(res.text);
    expect(body.detail).toContain("the steps would process 1054500 pixels");
    expect(body.detail).toContain("each for 10 frames");
    expect(body.detail).toContain("MEDIA_MAX_WORK_PIXELS");
    expect((await get(`/frame:index=3/fit:width=100:height=100/${ID}.gif`)).status).toBe(200);
  });
});

describe("still images keep the still path", () => {
  it("grayscale of a translucent image keeps its alpha through a following step", async () => {
    const png = await sharp({
      create: { width: 4, height: 2, channels: 4, background: { r: 255, g: 0, b: 0, alpha: 0.5 } },
    })
      .png()
      .toBuffer();
    const out = await render(
      {
        original: png,
        contentType: "image/png",
        steps: [
          { name: "grayscale", params: {} },
          { name: "brightness", params: { value: 1 } },
        ],
        cacheKey: "k",
      },
      depsWith(),
    );
    const { data, info } = await sharp(out.data).raw().toBuffer({ resolveWithObject: true });
    expect(info.channels).toBe(4);
    // Pure red's grey (luminance in linear light) with its alpha of 0.5.
    expect([...data.subarray(0, 4)]).toEqual([127, 127, 127, 128]);
  });

  it("a one-frame GIF renders one frame, the same bytes as the still pipeline in sharp", async () => {
    await serve("Crash_test.gif", "image/gif");
    const res = await get(`/fit:width=100:height=100/${ID}.gif`);
    expect(res.status).toBe(200);
    expect(await sharp(res.body).metadata()).toMatchObject({ width: 100, height: 100, pages: 1 });
    const direct = await sharp(corpus("Crash_test.gif"), { autoOrient: true, failOn: "error" })
      .resize(100, 100, { fit: "contain", position: "centre", background: { r: 255, g: 255, b: 255, alpha: 1 } })
      .gif()
      .toBuffer();
    expect(res.body.equals(direct)).toBe(true);
  });
});
