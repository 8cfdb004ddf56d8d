import sharp from "sharp";
import request from "supertest";
import { defaultMediaLimits, MediaUrlError, parseMediaPath } from "@media-platform/contracts";
import { positiveXybOf, ssimulacra2, SSIMULACRA2_WEIGHT_COUNT } from "../src/perceptual/ssimulacra2";
import { AUTO_QUALITY_ENCODES, searchEncode } from "../src/render/pipeline/encode-search";
import { ByteBudgetError } from "../src/render/errors";
import { loadMediaConfig, MediaConfigError } from "../src/config";
import type { StepContext } from "../src/render/types";
import { closeHarness, decodePixels, fixturePath, renderFixture } from "./support/render-harness";
import { startTestMedia, type TestMedia } from "./support/media-server";
import type { RawImage } from "../src/render/types";

afterAll(closeHarness);

const ID = "0f8fad5b-d9cb-469f-a165-70867728950e";

/** A 128 px thumbnail of a fixture photo, unencoded (the reference quality=auto scores against). */
async function photo(file = "chelsea.png", size = 128): Promise<RawImage> {
  return decodePixels(sharp(fixturePath(file)).resize(size, size, { fit: "cover" }).removeAlpha());
}

const jpegOf = async (image: RawImage, quality: number): Promise<RawImage> =>
  decodePixels(
    await sharp(image.data, { raw: { width: image.width, height: image.height, channels: image.channels } })
      .jpeg({ quality })
      .toBuffer(),
  );

describe("SSIMULACRA2", () => {
  it("has the authors' 108 weights, scores an image against itself 100 and refuses two sizes", async () => {
    expect(SSIMULACRA2_WEIGHT_COUNT).toBe(108);
    const image = await photo();
    expect(ssimulacra2(image, image)).toBe(100);
    const small = await photo("chelsea.png", 64);
    expect(() => ssimulacra2(image, small)).toThrow(/one size/);
  });

  it("maps sRGB onto the authors' XYB ranges (X 0.204594..0.813402, Y 0.01..0.855308, B 0.272295..0.938012)", () => {
    const lo = [Infinity, Infinity, Infinity];
    const hi = [-Infinity, -Infinity, -Infinity];
    const levels = Array.from({ length: 18 }, (_, i) => i * 15);
    for (const r of levels)
      for (const g of levels)
        for (const b of levels) {
          const xyb = positiveXybOf(r, g, b);
          for (let c = 0; c < 3; c++) {
            lo[c] = Math.min(lo[c]!, xyb[c]!);
            hi[c] = Math.max(hi[c]!, xyb[c]!);
          }
        }
    const expected = [
      [0.204594, 0.813402],
      [0.01, 0.855308],
      [0.272295, 0.938012],
    ];
    for (let c = 0; c < 3; c++) {
      expect(lo[c]!).toBeCloseTo(expected[c]![0]!, 4);
      expect(hi[c]!).toBeCloseTo(expected[c]![1]!, 4);
    }
  });

  it("falls as JPEG quality falls, over the authors' scale (about 90 at q95, below 40 at q10)", async () => {
    const image = await photo("astronaut.png", 256);
    const scores: number[] = [];
    for (const q of [95, 75, 50, 25, 10]) scores.push(ssimulacra2(image, await jpegOf(image, q)));
    for (let i = 1; i < scores.length; i++) expect(scores[i]!).toBeLessThan(scores[i - 1]!);
    expect(scores[0]!).toBeGreaterThan(85);
    expect(scores[0]!).toBeLessThan(100);
    expect(scores[4]!).toBeLessThan(40);
  });

  it("sees blurring and a colour shift, and is not symmetric in them (reference vs distorted)", async () => {
    const image = await photo("coffee.png", 128);
    const raw = { raw: { width: image.width, height: image.height, channels: image.channels } };
    const blurred = await decodePixels(sharp(image.data, raw).blur(2));
    const shifted = await decodePixels(sharp(image.data, raw).linear(1, 12));
    expect(ssimulacra2(image, blurred)).toBeLessThan(70);
    expect(ssimulacra2(image, shifted)).toBeLessThan(95);
    expect(ssimulacra2(image, blurred)).not.toBeCloseTo(ssimulacra2(blurred, image), 3);
  });
});

describe("quality=auto", () => {
  it("is accepted on thumbnail and format quality, exactly as `auto`; other words name it in the 400", () => {
    const thumb = parseMediaPath(`/thumbnail:size=64:quality=auto/${ID}.jpg`, defaultMediaLimits);
    expect(thumb.steps[0]).toEqual({ name: "thumbnail", params: { size: 64, quality: "auto" } });
    const format = parseMediaPath(`/format:type=webp:quality=auto/${ID}.jpg`, defaultMediaLimits);
    expect(format.steps[0]).toEqual({ name: "format", params: { type: "webp", quality: "auto" } });
    for (const bad of ["Auto", "best", "auto1"]) {
      let error: unknown;
      try {
        parseMediaPath(`/thumbnail:size=64:quality=${bad}/${ID}.jpg`, defaultMediaLimits);
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(MediaUrlError);
      expect((error as MediaUrlError).issues[0]).toEqual({
        path: "thumbnail.quality",
        message: `${JSON.stringify(bad)} is not a number; allowed: an integer from 1 to 100, or the extension auto`,
      });
    }
  });

  it("finds, in at most 4 encodes, the lowest tried quality whose score reaches the target, one step from a miss", async () => {
    const pixels = await photo("astronaut.png", 160);
    const image = sharp(pixels.data, { raw: { width: 160, height: 160, channels: 3 } });
    const qualities: number[] = [];
    const encode = (img: sharp.Sharp, output: StepContext["output"]) => {
      qualities.push(output.quality as number);
      return img.jpeg({ quality: output.quality as number });
    };
    const result = await searchEncode(
      image,
      { format: "jpeg", quality: "auto" },
      {
        encode,
        autoQualityTarget: 80,
        bounded: (i) => i,
      },
    );
    expect(result.encodes).toBeLessThanOrEqual(AUTO_QUALITY_ENCODES);
    expect(qualities).toHaveLength(result.encodes);
    expect(new Set(qualities).size).toBe(qualities.length);
    // The search starts at JPEG's usual quality.
    expect(qualities[0]).toBe(75);
    const scoreOf = async (q: number) => ssimulacra2(pixels, await jpegOf(pixels, q));
    expect(await scoreOf(result.quality!)).toBeGreaterThanOrEqual(80);
    // Every lower quality tried missed the target, and the closest miss is at most 3 steps below.
    const misses = qualities.filter((q) => q < result.quality!);
    for (const q of misses) expect(await scoreOf(q)).toBeLessThan(80);
    if (misses.length) expect(result.quality! - Math.max(...misses)).toBeLessThanOrEqual(3);
    expect(
      result.data.equals(
        await sharp(pixels.data, { raw: { width: 160, height: 160, channels: 3 } })
          .jpeg({ quality: result.quality! })
          .toBuffer(),
      ),
    ).toBe(true);
  });

  it("a higher MEDIA_AUTO_QUALITY_TARGET gives larger files that score at least the target", async () => {
    const reference = await decodePixels(
      (await renderFixture("rocket.jpg", "thumbnail:size=200:quality=100/format:type=png")).data,
    );
    const sizes: number[] = [];
    for (const target of [60, 80]) {
      const out = await renderFixture("rocket.jpg", "thumbnail:size=200:quality=auto", {
        deps: { autoQualityTarget: target },
      });
      expect(out.contentType).toBe("image/jpeg");
      expect([out.width, out.height]).toEqual([200, 200]);
      expect(ssimulacra2(reference, await decodePixels(out.data))).toBeGreaterThanOrEqual(target - 0.5);
      sizes.push(out.data.length);
    }
    expect(sizes[0]!).toBeLessThan(sizes[1]!);
  });

  it("leaves lossless formats alone: format:type=png:quality=auto is the plain PNG", async () => {
    const auto = await renderFixture("coffee.png", "resize:width=96/format:type=png:quality=auto");
    const plain = await renderFixture("coffee.png", "resize:width=96/format:type=png");
    expect(auto.data.equals(plain.data)).toBe(true);
  });

  it("MEDIA_AUTO_QUALITY_TARGET: default 70, 1-100, junk refused naming the variable", () => {
    expect(loadMediaConfig({}).autoQualityTarget).toBe(70);
    expect(loadMediaConfig({ MEDIA_AUTO_QUALITY_TARGET: "90" }).autoQualityTarget).toBe(90);
    expect(() => loadMediaConfig({ MEDIA_AUTO_QUALITY_TARGET: "0" })).toThrow(MediaConfigError);
    expect(() => loadMediaConfig({ MEDIA_AUTO_QUALITY_TARGET: "high" })).toThrow(/MEDIA_AUTO_QUALITY_TARGET/);
  });
});

describe("max-bytes", () => {
  it("a result within the budget is the plain encode", async () => {
    const within = await renderFixture("rocket.jpg", "resize:width=200/max-bytes:value=1000000");
    const plain = await renderFixture("rocket.jpg", "resize:width=200");
    expect(within.data.equals(plain.data)).toBe(true);
  });

  it("a larger JPEG is encoded again at lower quality, same size, within the budget", async () => {
    const plain = await renderFixture("rocket.jpg", "resize:width=300");
    const budget = Math.round(plain.data.length * 0.6);
    const out = await renderFixture("rocket.jpg", `resize:width=300/max-bytes:value=${budget}`);
    expect(out.data.length).toBeLessThanOrEqual(budget);
    expect([out.width, out.height]).toEqual([plain.width, plain.height]);
    const meta = await sharp(out.data).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(["jpeg", plain.width, plain.height]);
  });

  it("then at a smaller size when even the lowest quality is too large", async () => {
    const plain = await renderFixture("rocket.jpg", "resize:width=400");
    const budget = 4000;
    const out = await renderFixture("rocket.jpg", `resize:width=400/max-bytes:value=${budget}`);
    expect(out.data.length).toBeLessThanOrEqual(budget);
    expect(out.width).toBeLessThan(plain.width);
    const meta = await sharp(out.data).metadata();
    expect([meta.width, meta.height]).toEqual([out.width, out.height]);
    // Aspect ratio kept to a pixel.
    expect(Math.abs(out.height - (plain.height * out.width) / plain.width)).toBeLessThanOrEqual(1);
  });

  it("a PNG first tries a palette encode (same size, still a PNG)", async () => {
    const plain = await renderFixture("coffee.png", "resize:width=200");
    const budget = Math.round(plain.data.length * 0.7);
    const out = await renderFixture("coffee.png", `resize:width=200/max-bytes:value=${budget}`);
    expect(out.data.length).toBeLessThanOrEqual(budget);
    const meta = await sharp(out.data).metadata();
    expect([meta.format, meta.width, meta.height, meta.isPalette]).toEqual(["png", plain.width, plain.height, true]);
  });

  it("refuses what cannot fit with ByteBudgetError", async () => {
    await expect(renderFixture("rocket.jpg", "resize:width=200/max-bytes:value=100")).rejects.toBeInstanceOf(
      ByteBudgetError,
    );
  });

  describe("over HTTP", () => {
    let media: TestMedia;
    let id: string;
    beforeAll(async () => {
      media = await startTestMedia();
      id = await media.store.putFixture("rocket.jpg");
    });
    afterAll(() => media.close());

    it("answers 422 problem+json naming max-bytes.value when nothing fits, never cached", async () => {
      const res = await request(media.server).get(`/resize:width=200/max-bytes:value=100/${id}.jpg`);
      expect(res.status).toBe(422);
      expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
      expect(res.headers["cache-control"]).toBe("no-store");
      expect(res.body.type).toMatch(/max-bytes-unreachable$/);
      expect(res.body.errors[0].path).toBe("max-bytes.value");
    });

    it("serves a fitting result with its dimensions, and 400 for a budget below 100", async () => {
      const res = await request(media.server).get(`/resize:width=300/max-bytes:value=6000/${id}.jpg`);
      expect(res.status).toBe(200);
      expect(res.body.length).toBeLessThanOrEqual(6000);
      const bad = await request(media.server).get(`/max-bytes:value=99/${id}.jpg`);
      expect(bad.status).toBe(400);
      expect(bad.body.errors[0].path).toBe("max-bytes.value");
    });
  });
});
