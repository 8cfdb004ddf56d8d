import { readFile } from "node:fs/promises";
import sharp from "sharp";
import { defaultMediaLimits } from "@media-platform/contracts";
import type { RawImage } from "../src/render/types";
import { render } from "../src/render/pipeline/render";
import { cropRegion } from "../src/render/transformations/crop";
import { sharpenOptions } from "../src/render/transformations/sharpen";
import { threshold } from "../src/render/transformations/threshold";
import { channelManipulation } from "../src/render/transformations/channel-manipulation";
import { TransformationInputError } from "../src/render/errors";
import type { StepContext } from "../src/render/types";
import {
  closeHarness,
  decodePixels,
  fixturePath,
  harnessDeps,
  HARNESS_ASSET_ID,
  renderFixture,
  renderImage,
} from "./support/render-harness";

afterAll(closeHarness);

const ROCKET = { file: "rocket.jpg", width: 640, height: 427, contentType: "image/jpeg", format: "jpeg" } as const;
const COFFEE = { file: "coffee.png", width: 600, height: 400, contentType: "image/png", format: "png" } as const;

// --- pixel measures --------------------------------------------------------------------

const px = (img: RawImage, x: number, y: number): number[] =>
  Array.from(img.data.subarray((y * img.width + x) * img.channels, (y * img.width + x + 1) * img.channels));

function channelMax(img: RawImage, channel: number): number {
  let max = 0;
  for (let i = channel; i < img.data.length; i += img.channels) max = Math.max(max, img.data[i]!);
  return max;
}

function channelMean(img: RawImage, channel: number): number {
  let sum = 0;
  for (let i = channel; i < img.data.length; i += img.channels) sum += img.data[i]!;
  return sum / (img.width * img.height);
}

/** Mean over pixels of |R-G| + |G-B|: zero for grey, larger for more saturated images. */
function meanChroma(img: RawImage): number {
  let sum = 0;
  for (let i = 0; i < img.data.length; i += img.channels) {
    sum += Math.abs(img.data[i]! - img.data[i + 1]!) + Math.abs(img.data[i + 1]! - img.data[i + 2]!);
  }
  return sum / (img.width * img.height);
}

/** Largest |R-G| or |G-B| over all pixels. */
function maxChannelSpread(img: RawImage): number {
  let max = 0;
  for (let i = 0; i < img.data.length; i += img.channels) {
    max = Math.max(max, Math.abs(img.data[i]! - img.data[i + 1]!), Math.abs(img.data[i + 1]! - img.data[i + 2]!));
  }
  return max;
}

/** Mean absolute difference over the given channels (default: colour channels). */
function meanAbsDiff(a: RawImage, b: RawImage, channels = [0, 1, 2]): number {
  expect([a.width, a.height, a.channels]).toEqual([b.width, b.height, b.channels]);
  let sum = 0;
  for (let i = 0; i < a.data.length; i += a.channels)
    for (const c of channels) sum += Math.abs(a.data[i + c]! - b.data[i + c]!);
  return sum / (a.width * a.height * channels.length);
}

/** Mean absolute horizontal + vertical gradient of the green channel: edge energy. */
function edgeEnergy(img: RawImage): number {
  let sum = 0;
  const at = (x: number, y: number) => img.data[(y * img.width + x) * img.channels + 1]!;
  for (let y = 0; y < img.height - 1; y++) {
    for (let x = 0; x < img.width - 1; x++)
      sum += Math.abs(at(x + 1, y) - at(x, y)) + Math.abs(at(x, y + 1) - at(x, y));
  }
  return sum / ((img.width - 1) * (img.height - 1));
}

const toLinear = (v: number) => {
  const c = v / 255;
  return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
};
const toSrgb = (y: number) => 255 * (y <= 0.0031308 ? 12.92 * y : 1.055 * y ** (1 / 2.4) - 0.055);
/** Luminance grey of an sRGB pixel: Rec. 709 weights on linear light, sRGB-encoded. */
const luminanceGrey = (r: number, g: number, b: number) =>
  toSrgb(0.2126 * toLinear(r) + 0.7152 * toLinear(g) + 0.0722 * toLinear(b));
/** CIE L* of an sRGB grey level. */
const lightnessOf = (grey: number) => {
  const y = toLinear(grey);
  return y > 216 / 24389 ? 116 * Math.cbrt(y) - 16 : (24389 / 27) * y;
};

const source = (file: string) => decodePixels(sharp(fixturePath(file)));

/**
 * What the pipeline makes of a fixture when nothing changes it (a full-size crop): the
 * reference for "unchanged" on JPEG, where re-encoding alone moves pixels by about 3.5.
 */
const identity = async (fixture: { file: string; width: number; height: number }) =>
  decodePixels((await renderFixture(fixture.file, `crop:width=${fixture.width}:height=${fixture.height}`)).data);

/** Mean difference to the region at (left, top), and the smallest one to any 1-px shift of it. */
async function regionDistances(got: RawImage, original: sharp.Sharp, left: number, top: number) {
  const at = async (dx: number, dy: number) =>
    meanAbsDiff(
      got,
      await decodePixels(
        original.clone().extract({ left: left + dx, top: top + dy, width: got.width, height: got.height }),
      ),
    );
  const shifts: number[] = [];
  for (const [dx, dy] of [
    [-1, -1],
    [0, -1],
    [1, -1],
    [-1, 0],
    [1, 0],
    [-1, 1],
    [0, 1],
    [1, 1],
  ] as const)
    shifts.push(await at(dx, dy));
  return { exact: await at(0, 0), nearestShift: Math.min(...shifts) };
}

async function expectFormat(
  out: { data: Buffer; contentType: string; width: number; height: number },
  fixture: { contentType: string; format: string },
  width: number,
  height: number,
) {
  expect(out.contentType).toBe(fixture.contentType);
  const meta = await sharp(out.data).metadata();
  expect(meta.format).toBe(fixture.format);
  expect([meta.width, meta.height, out.width, out.height]).toEqual([width, height, width, height]);
}

/** logo.png is RGBA but fully opaque; this copy has a real alpha ramp (0 at the left to 255). */
async function logoWithAlphaRamp(): Promise<Buffer> {
  const ramp = Buffer.alloc(500 * 500);
  for (let y = 0; y < 500; y++) for (let x = 0; x < 500; x++) ramp[y * 500 + x] = Math.round((x * 255) / 499);
  // Two passes: within one sharp pipeline removeAlpha runs after joinChannel.
  const rgb = await sharp(fixturePath("logo.png")).removeAlpha().raw().toBuffer();
  return sharp(rgb, { raw: { width: 500, height: 500, channels: 3 } })
    .joinChannel(ramp, { raw: { width: 500, height: 500, channels: 1 } })
    .png()
    .toBuffer();
}

/** Context for calling a step's apply() directly (to see its pixels before JPEG encoding). */
const stepContext = (width: number, height: number): StepContext => ({
  cacheKey: "/test",
  stepIndex: 0,
  width,
  height,
  hasAlpha: false,
  output: { format: "jpeg" },
  limits: defaultMediaLimits,
  pixels: harnessDeps().pixels,
  faces: harnessDeps().faces,
});

// --- crop ------------------------------------------------------------------------------

describe("crop", () => {
  it("with x/y on a PNG returns exactly that region of the source", async () => {
    const out = await renderFixture(COFFEE.file, "crop:width=120:height=80:x=30:y=45");
    await expectFormat(out, COFFEE, 120, 80);
    const expected = await decodePixels(
      sharp(fixturePath(COFFEE.file)).extract({ left: 30, top: 45, width: 120, height: 80 }),
    );
    expect((await decodePixels(out.data)).data.equals(expected.data)).toBe(true);
  });

  it("with x/y on a JPEG matches the source region within JPEG re-encoding error", async () => {
    const out = await renderFixture(ROCKET.file, "crop:width=200:height=150:x=101:y=251");
    await expectFormat(out, ROCKET, 200, 150);
    const { exact, nearestShift } = await regionDistances(
      await decodePixels(out.data),
      sharp(fixturePath(ROCKET.file)),
      101,
      251,
    );
    expect(exact).toBeLessThan(4.5);
    // Every region one pixel off is clearly further away (measured: 3.4 vs 5.0), so the
    // comparison tells regions apart despite the re-encoding.
    expect(nearestShift).toBeGreaterThan(exact * 1.3);
  });

  it.each([
    ["center", 200, 150],
    ["north", 200, 0],
    ["south", 200, 300],
    ["east", 400, 150],
    ["west", 0, 150],
  ])("gravity %s places a 200x100 region at (%i, %i)", async (gravity, left, top) => {
    const out = await renderFixture(COFFEE.file, `crop:width=200:height=100:gravity=${gravity}`);
    await expectFormat(out, COFFEE, 200, 100);
    const expected = await decodePixels(
      sharp(fixturePath(COFFEE.file)).extract({ left, top, width: 200, height: 100 }),
    );
    expect((await decodePixels(out.data)).data.equals(expected.data)).toBe(true);
  });

  it("uses gravity on the axis whose offset is not given", async () => {
    expect(cropRegion({ width: 100, height: 100, x: 10, y: undefined, gravity: "south" }, 600, 400)).toEqual({
      left: 10,
      top: 300,
      width: 100,
      height: 100,
    });
    expect(cropRegion({ width: 100, height: 100, x: undefined, y: 7, gravity: "east" }, 600, 400)).toEqual({
      left: 500,
      top: 7,
      width: 100,
      height: 100,
    });
  });

  it("clips a region that runs past the edges", async () => {
    const out = await renderFixture(COFFEE.file, "crop:width=200:height=200:x=550:y=350");
    await expectFormat(out, COFFEE, 50, 50);
    const expected = await decodePixels(
      sharp(fixturePath(COFFEE.file)).extract({ left: 550, top: 350, width: 50, height: 50 }),
    );
    expect((await decodePixels(out.data)).data.equals(expected.data)).toBe(true);
    const wide = await renderFixture(ROCKET.file, "crop:width=1000:height=100:gravity=north");
    await expectFormat(wide, ROCKET, 640, 100);
  });

  it.each([
    ["crop:width=10:height=10:x=600:y=0", "crop.x"],
    ["crop:width=10:height=10:x=0:y=400", "crop.y"],
  ])("%s (outside the image) is a TransformationInputError on %s", async (steps, path) => {
    const failure = renderFixture(COFFEE.file, steps);
    await expect(failure).rejects.toBeInstanceOf(TransformationInputError);
    await expect(failure).rejects.toMatchObject({ path });
  });

  it("works in EXIF-oriented coordinates", async () => {
    // Stored 640x427 with orientation 6 (rotate 90° clockwise to display): shown as 427x640.
    const original = await sharp(fixturePath(ROCKET.file))
      .withMetadata({ orientation: 6 })
      .jpeg({ quality: 95 })
      .toBuffer();
    const out = await renderImage(original, "crop:width=100:height=300:x=20:y=300");
    expect([out.width, out.height]).toEqual([100, 300]);
    const { exact, nearestShift } = await regionDistances(
      await decodePixels(out.data),
      sharp(original).rotate(),
      20,
      300,
    );
    expect(exact).toBeLessThan(4.5);
    expect(nearestShift).toBeGreaterThan(exact + 1);
  });
});

// --- fit -------------------------------------------------------------------------------

describe("fit", () => {
  it("contains a JPEG in the canvas, centred, padded with a hex colour", async () => {
    const out = await renderFixture(ROCKET.file, "fit:width=300:height=300:background=ff0000");
    await expectFormat(out, ROCKET, 300, 300);
    const img = await decodePixels(out.data);
    // 640x427 scales to 300x200: 50 rows of padding above and below.
    for (const [x, y] of [
      [0, 0],
      [299, 0],
      [0, 299],
      [299, 299],
      [150, 20],
      [150, 280],
    ] as const) {
      const [r, g, b] = px(img, x, y);
      expect(r).toBeGreaterThan(235);
      expect(g).toBeLessThan(20);
      expect(b).toBeLessThan(20);
    }
    const scaled = await decodePixels(sharp(fixturePath(ROCKET.file)).resize(300, 200));
    const band = await decodePixels(sharp(out.data).extract({ left: 0, top: 50, width: 300, height: 200 }));
    expect(meanAbsDiff(band, scaled)).toBeLessThan(4);
  });

  it.each([
    ["rgb(0,128,255)", [0, 128, 255]],
    ["rebeccapurple", [102, 51, 153]],
    ["0f0", [0, 255, 0]],
  ])("pads a PNG with %s exactly", async (background, rgb) => {
    const out = await renderFixture(
      COFFEE.file,
      `fit:width=400:height=400:background=${encodeURIComponent(background)}`,
    );
    await expectFormat(out, COFFEE, 400, 400);
    const img = await decodePixels(out.data);
    // 600x400 scales to 400x267: 66 or 67 rows of padding at the top and bottom.
    for (const [x, y] of [
      [0, 0],
      [399, 0],
      [0, 399],
      [399, 399],
      [200, 60],
      [200, 340],
    ] as const) {
      expect(px(img, x, y).slice(0, 3)).toEqual(rgb);
    }
    expect(px(img, 200, 200).slice(0, 3)).not.toEqual(rgb);
  });

  it("defaults to white and returns the exact canvas for odd sizes", async () => {
    const out = await renderFixture(COFFEE.file, "fit:width=123:height=457");
    await expectFormat(out, COFFEE, 123, 457);
    const img = await decodePixels(out.data);
    expect(px(img, 0, 0).slice(0, 3)).toEqual([255, 255, 255]);
    expect(px(img, 61, 456).slice(0, 3)).toEqual([255, 255, 255]);
  });

  it("keeps alpha on a PNG and pads a grey original in colour", async () => {
    const out = await renderImage(await logoWithAlphaRamp(), "fit:width=600:height=500:background=ff0000");
    const img = await decodePixels(out.data);
    expect(img.channels).toBe(4);
    expect(px(img, 10, 250)).toEqual([255, 0, 0, 255]);
    expect(px(img, 50, 250)[3]).toBe(0); // the ramp's transparent left edge, 50 px in
    expect(px(img, 549, 250)[3]).toBe(255);

    const grey = await decodePixels(
      (await renderFixture("camera.png", "fit:width=600:height=512:background=ff0000")).data,
    );
    expect(px(grey, 5, 5).slice(0, 3)).toEqual([255, 0, 0]);
  });

  it("refuses an output above maxOutputPixels with a 400-class error", async () => {
    const limits = { ...defaultMediaLimits, maxOutputPixels: 10_000 };
    await expect(renderFixture(COFFEE.file, "fit:width=200:height=200", { limits })).rejects.toMatchObject({
      name: "TransformationInputError",
      path: "fit",
    });
  });
});

// --- thumbnail -------------------------------------------------------------------------

describe("thumbnail", () => {
  it("is an exact square cover crop of a JPEG", async () => {
    const out = await renderFixture(ROCKET.file, "thumbnail:size=100");
    await expectFormat(out, ROCKET, 100, 100);
    const got = await decodePixels(out.data);
    // Cover = the centred 427x427 square scaled down, not the letterboxed whole.
    const centre = await decodePixels(
      sharp(fixturePath(ROCKET.file)).extract({ left: 106, top: 0, width: 427, height: 427 }).resize(100, 100),
    );
    const squashed = await decodePixels(sharp(fixturePath(ROCKET.file)).resize(100, 100, { fit: "fill" }));
    expect(meanAbsDiff(got, centre)).toBeLessThan(4);
    expect(meanAbsDiff(got, squashed)).toBeGreaterThan(meanAbsDiff(got, centre) + 2);
  });

  it("quality 10 is smaller than quality 95", async () => {
    const low = await renderFixture(ROCKET.file, "thumbnail:size=200:quality=10");
    const high = await renderFixture(ROCKET.file, "thumbnail:size=200:quality=95");
    await expectFormat(low, ROCKET, 200, 200);
    expect(low.data.length * 2).toBeLessThan(high.data.length);
  });

  it("squares a PNG and enlarges a small original to the exact size", async () => {
    const out = await renderFixture(COFFEE.file, "thumbnail:size=64");
    await expectFormat(out, COFFEE, 64, 64);
    const small = await renderFixture("palette_color.png", "thumbnail:size=50");
    await expectFormat(small, COFFEE, 50, 50);
  });
});

// --- grayscale -------------------------------------------------------------------------

describe("grayscale", () => {
  it.each([ROCKET, COFFEE])("makes $file grey (R=G=B) with luminance-preserving shades", async (fixture) => {
    const out = await renderFixture(fixture.file, "grayscale");
    await expectFormat(out, fixture, fixture.width, fixture.height);
    const img = await decodePixels(out.data);
    expect(maxChannelSpread(img)).toBe(0);
    // Compare with Rec. 709 luminance computed here from the source pixels.
    const src = await source(fixture.file);
    let err = 0;
    for (let i = 0, j = 0; i < src.data.length; i += src.channels, j += img.channels) {
      err += Math.abs(img.data[j]! - luminanceGrey(src.data[i]!, src.data[i + 1]!, src.data[i + 2]!));
    }
    expect(err / (src.width * src.height)).toBeLessThan(fixture.format === "jpeg" ? 2 : 1);
  });

  it("shifts lightness in L* units, both ways", async () => {
    const base = await decodePixels((await renderFixture(COFFEE.file, "grayscale")).data);
    const lighter = await decodePixels((await renderFixture(COFFEE.file, "grayscale:lightness=20")).data);
    const darker = await decodePixels((await renderFixture(COFFEE.file, "grayscale:lightness=-20.5")).data);
    expect(maxChannelSpread(lighter)).toBe(0);
    expect(channelMean(lighter, 0)).toBeGreaterThan(channelMean(base, 0) + 20);
    expect(channelMean(darker, 0)).toBeLessThan(channelMean(base, 0) - 20);
    // Where neither end clips, L* moved by 20 (within 8-bit rounding).
    let n = 0;
    let shift = 0;
    for (let i = 0; i < base.data.length; i += base.channels) {
      const l0 = lightnessOf(base.data[i]!);
      if (l0 < 10 || l0 > 70) continue;
      shift += lightnessOf(lighter.data[i]!) - l0;
      n++;
    }
    expect(n).toBeGreaterThan(10_000);
    expect(shift / n).toBeCloseTo(20, 0);
  });

  it("keeps alpha", async () => {
    const out = await renderImage(await logoWithAlphaRamp(), "grayscale:lightness=10");
    const img = await decodePixels(out.data);
    expect(img.channels).toBe(4);
    expect(maxChannelSpread(img)).toBe(0);
    expect([px(img, 0, 100)[3], px(img, 499, 100)[3]]).toEqual([0, 255]);
  });
});

// --- saturation / brightness -----------------------------------------------------------

describe("saturation", () => {
  it.each([ROCKET, COFFEE])("0 turns $file grey", async (fixture) => {
    const out = await renderFixture(fixture.file, "saturation:value=0");
    await expectFormat(out, fixture, fixture.width, fixture.height);
    const img = await decodePixels(out.data);
    expect(meanChroma(img)).toBeLessThan(0.5);
    expect(maxChannelSpread(img)).toBeLessThanOrEqual(fixture.format === "jpeg" ? 6 : 2);
    expect(meanChroma(await source(fixture.file))).toBeGreaterThan(10);
  });

  it.each([ROCKET, COFFEE])("1 leaves $file unchanged and 2 saturates it", async (fixture) => {
    const src = await source(fixture.file);
    const same = await decodePixels((await renderFixture(fixture.file, "saturation:value=1.0")).data);
    expect(meanAbsDiff(same, await identity(fixture))).toBeLessThan(0.01);
    if (fixture.format === "png") expect(meanAbsDiff(same, src)).toBe(0);
    const more = await decodePixels((await renderFixture(fixture.file, "saturation:value=2")).data);
    expect(meanChroma(more)).toBeGreaterThan(meanChroma(src) * 1.5);
  });
});

describe("brightness", () => {
  it.each([ROCKET, COFFEE])("1 leaves $file unchanged", async (fixture) => {
    const out = await renderFixture(fixture.file, "brightness:value=1");
    await expectFormat(out, fixture, fixture.width, fixture.height);
    const img = await decodePixels(out.data);
    expect(meanAbsDiff(img, await identity(fixture))).toBeLessThan(0.01);
    if (fixture.format === "png") expect(meanAbsDiff(img, await source(fixture.file))).toBe(0);
  });

  it.each([ROCKET, COFFEE])("multiplies the brightness of $file", async (fixture) => {
    const src = await source(fixture.file);
    const brighter = await decodePixels((await renderFixture(fixture.file, "brightness:value=1.4")).data);
    const darker = await decodePixels((await renderFixture(fixture.file, "brightness:value=0.5")).data);
    expect(channelMean(brighter, 1)).toBeGreaterThan(channelMean(src, 1) + 10);
    expect(channelMean(darker, 1)).toBeLessThan(channelMean(src, 1) - 10);
  });
});

// --- sharpen ---------------------------------------------------------------------------

describe("sharpen", () => {
  it.each([ROCKET, COFFEE])("0 leaves $file unchanged", async (fixture) => {
    const out = await renderFixture(fixture.file, "sharpen:value=0");
    await expectFormat(out, fixture, fixture.width, fixture.height);
    const img = await decodePixels(out.data);
    expect(meanAbsDiff(img, await identity(fixture))).toBeLessThan(0.01);
    if (fixture.format === "png") expect(meanAbsDiff(img, await source(fixture.file))).toBe(0);
  });

  it.each([ROCKET, COFFEE])("raises the edge energy of $file, more for larger values", async (fixture) => {
    const before = edgeEnergy(await source(fixture.file));
    const energies = [];
    for (const value of [1, 3, 5]) {
      const out = await renderFixture(fixture.file, `sharpen:value=${value}`);
      await expectFormat(out, fixture, fixture.width, fixture.height);
      energies.push(edgeEnergy(await decodePixels(out.data)));
    }
    expect(energies[1]).toBeGreaterThan(before * 1.2);
    expect(energies[0]).toBeLessThan(energies[1]!);
    expect(energies[1]).toBeLessThan(energies[2]!);
  });

  it("maps intensity monotonically onto sharp's sharpen options", () => {
    const keys = ["sigma", "m1", "m2", "y2", "y3"] as const;
    for (let v = 0.5; v < 20; v += 0.5) {
      const a = sharpenOptions(v);
      const b = sharpenOptions(v + 0.5);
      for (const k of keys) expect(b[k]!).toBeGreaterThanOrEqual(a[k]!);
    }
  });
});

// --- channelManipulation ---------------------------------------------------------------

describe("channelManipulation", () => {
  it("red=0 empties red and leaves green and blue of a PNG exactly as they were", async () => {
    const out = await renderFixture(COFFEE.file, "channelManipulation:red=0");
    await expectFormat(out, COFFEE, COFFEE.width, COFFEE.height);
    const img = await decodePixels(out.data);
    const src = await source(COFFEE.file);
    expect(channelMean(src, 0)).toBeGreaterThan(50);
    expect(channelMax(img, 0)).toBe(0);
    expect(meanAbsDiff(img, src, [1, 2])).toBe(0);
  });

  it("red=0 on a JPEG: the step's pixels have no red; the encoded file nearly none", async () => {
    const out = await renderFixture(ROCKET.file, "channelManipulation:red=0");
    await expectFormat(out, ROCKET, ROCKET.width, ROCKET.height);
    const encoded = await decodePixels(out.data);
    expect(channelMean(encoded, 0)).toBeLessThan(2);
    // Green and blue as an unchanged rendition has them, up to what red's loss does to the
    // JPEG's subsampled chroma.
    expect(meanAbsDiff(encoded, await identity(ROCKET), [1, 2])).toBeLessThan(4);
    const src = await source(ROCKET.file);

    const step = await channelManipulation.apply(
      sharp(fixturePath(ROCKET.file)),
      { red: 0, green: 1, blue: 1 },
      stepContext(640, 427),
    );
    const raw = await decodePixels(step);
    expect(channelMean(raw, 0)).toBe(0);
    expect(meanAbsDiff(raw, src, [1, 2])).toBe(0);
  });

  it("treats a grey original as R=G=B", async () => {
    const out = await renderFixture("camera.png", "channelManipulation:red=0:blue=0.5");
    const img = await decodePixels(out.data);
    const src = await source("camera.png");
    expect(channelMax(img, 0)).toBe(0);
    expect(meanAbsDiff(img, src, [1])).toBe(0);
    expect(Math.abs(channelMean(img, 2) - channelMean(src, 2) / 2)).toBeLessThan(0.5);
  });

  it("scales and clips, and leaves alpha untouched", async () => {
    const original = await logoWithAlphaRamp();
    const src = await decodePixels(sharp(original));
    const img = await decodePixels((await renderImage(original, "channelManipulation:green=0.5:blue=3")).data);
    expect(img.channels).toBe(4);
    expect(meanAbsDiff(img, src, [3])).toBe(0);
    expect(meanAbsDiff(img, src, [0])).toBe(0);
    let wrong = 0;
    let clipped = 0;
    for (let i = 0; i < src.data.length; i += 4) {
      if (Math.abs(img.data[i + 1]! - src.data[i + 1]! * 0.5) > 0.5) wrong++;
      if (img.data[i + 2] !== Math.min(255, src.data[i + 2]! * 3)) wrong++;
      if (src.data[i + 2]! * 3 > 255) clipped++;
    }
    expect(wrong).toBe(0);
    expect(clipped).toBeGreaterThan(1000);
  });
});

// --- threshold -------------------------------------------------------------------------

describe("threshold", () => {
  async function expectBinaryAgainstSource(img: RawImage, src: RawImage, value: number) {
    let below = 0;
    let above = 0;
    let notBinary = 0;
    let wrongSide = 0;
    for (let i = 0, j = 0; i < src.data.length; i += src.channels, j += img.channels) {
      const out = img.data[j]!;
      if (out !== 0 && out !== 255) notBinary++;
      const grey = luminanceGrey(src.data[i]!, src.data[i + 1]!, src.data[i + 2]!);
      // Away from the boundary (8-bit rounding of the grey), the side is certain.
      if (grey <= value - 1.5) {
        below++;
        if (out !== 0) wrongSide++;
      } else if (grey >= value + 1.5) {
        above++;
        if (out !== 255) wrongSide++;
      }
    }
    expect({ notBinary, wrongSide }).toEqual({ notBinary: 0, wrongSide: 0 });
    expect(below).toBeGreaterThan(1000);
    expect(above).toBeGreaterThan(1000);
  }

  it("turns a PNG into only black and white, split at the source grey", async () => {
    const out = await renderFixture(COFFEE.file, "threshold:value=128");
    await expectFormat(out, COFFEE, COFFEE.width, COFFEE.height);
    const img = await decodePixels(out.data);
    expect(maxChannelSpread(img)).toBe(0);
    await expectBinaryAgainstSource(img, await source(COFFEE.file), 128);
  });

  it("on a JPEG: the step's pixels are binary; the encoded file is black and white up to JPEG ringing", async () => {
    const out = await renderFixture(ROCKET.file, "threshold:value=100");
    await expectFormat(out, ROCKET, ROCKET.width, ROCKET.height);
    const encoded = await decodePixels(out.data);
    const near = encoded.data.filter((v) => v < 32 || v > 223).length;
    expect(near / encoded.data.length).toBeGreaterThan(0.97);

    const pixels = await decodePixels(sharp(fixturePath(ROCKET.file)));
    const step = await threshold.apply(pixels, { value: 100 }, stepContext(640, 427));
    await expectBinaryAgainstSource(await decodePixels(step), await source(ROCKET.file), 100);
  });

  it("grey equal to the value is white, one below is black, value 0 is all white", async () => {
    const greys = Buffer.from([99, 99, 99, 100, 100, 100, 101, 101, 101, 0, 0, 0]);
    const original = await sharp(greys, { raw: { width: 4, height: 1, channels: 3 } })
      .png()
      .toBuffer();
    const at100 = await decodePixels((await renderImage(original, "threshold:value=100")).data);
    expect([0, 1, 2, 3].map((x) => px(at100, x, 0)[0])).toEqual([0, 255, 255, 0]);
    const at0 = await decodePixels((await renderImage(original, "threshold:value=0")).data);
    expect([0, 1, 2, 3].map((x) => px(at0, x, 0)[0])).toEqual([255, 255, 255, 255]);
  });

  it("leaves alpha untouched", async () => {
    const original = await logoWithAlphaRamp();
    const img = await decodePixels((await renderImage(original, "threshold:value=128")).data);
    expect(img.channels).toBe(4);
    expect(meanAbsDiff(img, await decodePixels(sharp(original)), [3])).toBe(0);
    expect(img.data.filter((v, i) => i % 4 !== 3 && v !== 0 && v !== 255).length).toBe(0);
  });
});

describe("unusual originals", () => {
  // Grey, 16-bit grey TIFF, indexed PNG and GIF: every step keeps the stored format and gives
  // the exact size (the fixtures above cover the pixels; this covers the input layouts).
  const steps: [string, (w: number, h: number) => [number, number]][] = [
    ["crop:width=20:height=10", (w) => [Math.min(20, w), 10]],
    ["fit:width=40:height=30:background=red", () => [40, 30]],
    ["thumbnail:size=50", () => [50, 50]],
    ["avatar:size=32:shape=circle:border=2", () => [32, 32]],
    ["grayscale:lightness=5", (w, h) => [w, h]],
    ["saturation:value=0.5", (w, h) => [w, h]],
    ["brightness:value=1.2", (w, h) => [w, h]],
    ["sharpen:value=2", (w, h) => [w, h]],
    ["channelManipulation:red=0.5", (w, h) => [w, h]],
    ["threshold:value=100", (w, h) => [w, h]],
  ];
  it.each([
    ["camera.png", "png", 512, 512],
    ["chessboard_GRAY_U16.tif", "tiff", 200, 200],
    ["palette_color.png", "png", 10, 10],
    ["no_time_for_that_tiny.gif", "gif", 14, 25],
  ])("%s", async (file, format, width, height) => {
    for (const [step, size] of steps) {
      const out = await renderFixture(file, step);
      const meta = await sharp(out.data).metadata();
      expect([step, meta.format, meta.width, meta.height]).toEqual([step, format, ...size(width, height)]);
    }
  });
});

describe("harness", () => {
  it("renders a full media path and keeps the stored format whatever the extension", async () => {
    const original = await readFile(fixturePath(COFFEE.file));
    const out = await render(
      {
        original,
        contentType: "image/png",
        steps: [{ name: "crop", params: { width: 10, height: 10 } }],
        cacheKey: `/crop:width=10:height=10/${HARNESS_ASSET_ID}.jpg`,
      },
      harnessDeps(),
    );
    expect(out.contentType).toBe("image/png");
    const viaPath = await renderFixture(COFFEE.file, `/crop:width=10:height=10/${HARNESS_ASSET_ID}.jpg`);
    expect(viaPath.data.equals(out.data)).toBe(true);
  });
});
