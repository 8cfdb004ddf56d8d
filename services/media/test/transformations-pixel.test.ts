import { readFileSync } from "node:fs";
import path from "node:path";
import sharp from "sharp";
import { defaultMediaLimits, parseMediaPath, type MediaLimits } from "@media-platform/contracts";
import { toRaw } from "../src/render/raw";
import type { RawImage } from "../src/render/types";
import { render, type Rendition } from "../src/render/pipeline/render";
import { createPixelWorkers, type PixelWorkerPool } from "../src/render/pixels/pool";
import { claheChannel, claheGrid } from "../src/render/pixels/kernels/clahe";
import { xoshiro128ss } from "../src/render/pixels/kernels/add-noise";
import { tonalWeight } from "../src/render/pixels/kernels/color-balance";
import { exposureTable } from "../src/render/pixels/kernels/exposure";
import { noiseSeed } from "../src/render/transformations/add-noise";
import { TransformationInputError } from "../src/render/errors";

const FIXTURES = path.join(__dirname, "..", "..", "..", "fixtures", "images");
const REFERENCE = path.join(__dirname, "reference");
const ASSET = "00000000-0000-4000-8000-000000000000";

const ROCKET = { file: "rocket.jpg", type: "image/jpeg", width: 640, height: 427 } as const;
const COFFEE = { file: "coffee.png", type: "image/png", width: 600, height: 400 } as const;
const LOGO = { file: "logo.png", type: "image/png", width: 500, height: 500 } as const;
const CAMERA = { file: "camera.png", type: "image/png", width: 512, height: 512 } as const;
type Fixture = { file: string; type: string; width: number; height: number };

let pixels: PixelWorkerPool;
beforeAll(() => {
  pixels = createPixelWorkers({ size: 2 });
});
afterAll(() => pixels.close());

const originals = new Map<string, Buffer>();
const original = (file: string): Buffer => {
  if (!originals.has(file)) originals.set(file, readFileSync(path.join(FIXTURES, file)));
  return originals.get(file)!;
};

/** Renders `/<steps>/<asset>.<ext>` exactly as the service does: URL grammar, render pipeline, stored format. */
async function renderUrl(
  fixture: Fixture | { data: Buffer; type: string },
  steps: string,
  options: { cacheKey?: string; limits?: MediaLimits } = {},
): Promise<Rendition & { pixels: RawImage }> {
  const urlPath = `/${steps}/${ASSET}.png`;
  const request = parseMediaPath(urlPath, options.limits ?? defaultMediaLimits);
  const rendition = await render(
    {
      original: "file" in fixture ? original(fixture.file) : fixture.data,
      contentType: fixture.type,
      steps: request.steps,
      cacheKey: options.cacheKey ?? urlPath,
    },
    {
      pixels,
      faces: { detect: async () => [] },
      limits: options.limits ?? defaultMediaLimits,
      limitInputPixels: 100_000_000,
    },
  );
  return { ...rendition, pixels: await toRaw(sharp(rendition.data)) };
}

const decode = async (file: string, dir = FIXTURES): Promise<RawImage> =>
  toRaw(sharp(path.join(dir, file), { autoOrient: true }));

/** A flat PNG original of one grey level. */
const flatPng = async (width: number, height: number, grey: number): Promise<{ data: Buffer; type: string }> => ({
  data: await sharp({ create: { width, height, channels: 3, background: { r: grey, g: grey, b: grey } } })
    .png()
    .toBuffer(),
  type: "image/png",
});

interface DiffSummary {
  mean: number;
  /** Percentile of the absolute differences, p in 0..1 (1 = the largest). */
  percentile(p: number): number;
}

/** Absolute per-byte differences over the first `channels` channels, as a 256-bin histogram. */
function diffs(a: RawImage, b: RawImage, channels = a.channels): DiffSummary {
  expect([a.width, a.height, a.channels]).toEqual([b.width, b.height, b.channels]);
  const histogram = new Float64Array(256);
  let sum = 0;
  for (let i = 0; i < a.data.length; i += a.channels) {
    for (let c = 0; c < channels; c++) {
      const d = Math.abs(a.data[i + c]! - b.data[i + c]!);
      histogram[d]!++;
      sum += d;
    }
  }
  const n = a.width * a.height * channels;
  return {
    mean: sum / n,
    percentile(p) {
      const rank = Math.min(n - 1, Math.floor(n * p));
      let seen = 0;
      for (let d = 0; d < 256; d++) if ((seen += histogram[d]!) > rank) return d;
      return 255;
    },
  };
}
const mean = (values: ArrayLike<number>): number => {
  let sum = 0;
  for (let i = 0; i < values.length; i++) sum += values[i]!;
  return sum / values.length;
};

/** One channel's bytes, in pixel order. */
function channelValues(img: RawImage, channel: number): Buffer {
  const out = Buffer.alloc(img.width * img.height);
  for (let p = 0, i = channel; p < out.length; p++, i += img.channels) out[p] = img.data[i]!;
  return out;
}
const stdDev = (values: ArrayLike<number>): number => {
  const m = mean(values);
  let sum = 0;
  for (let i = 0; i < values.length; i++) sum += (values[i]! - m) ** 2;
  return Math.sqrt(sum / values.length);
};
const sameAlpha = (a: RawImage, b: RawImage): boolean => channelValues(a, 3).equals(channelValues(b, 3));

function expectShape(
  r: Rendition & { pixels: RawImage },
  fixture: Fixture,
  width = fixture.width,
  height = fixture.height,
): void {
  expect(r.contentType).toBe(fixture.type);
  expect([r.width, r.height]).toEqual([width, height]);
  expect([r.pixels.width, r.pixels.height]).toEqual([width, height]);
}

describe("solarize", () => {
  it.each([128, 64])(
    "matches ImageMagick -solarize exactly on coffee.png (threshold %i) and inverts only values above it",
    async (t) => {
      const r = await renderUrl(COFFEE, t === 128 ? "solarize" : `solarize:threshold=${t}`);
      expectShape(r, COFFEE);
      const source = await decode(COFFEE.file);
      for (let i = 0; i < source.data.length; i++) {
        const v = source.data[i]!;
        if (r.pixels.data[i] !== (v > t ? 255 - v : v)) throw new Error(`byte ${i}: ${v} -> ${r.pixels.data[i]}`);
      }
      expect(diffs(r.pixels, await decode(`solarize-coffee-${t}.png`, REFERENCE)).percentile(1)).toBe(0);
    },
  );

  it("leaves alpha untouched on logo.png and matches ImageMagick", async () => {
    const r = await renderUrl(LOGO, "solarize:threshold=128");
    expectShape(r, LOGO);
    expect(r.pixels.channels).toBe(4);
    const source = await decode(LOGO.file);
    expect(sameAlpha(r.pixels, source)).toBe(true);
    expect(diffs(r.pixels, await decode("solarize-logo-128.png", REFERENCE)).percentile(1)).toBe(0);
  });

  it("folds every value of rocket.jpg to 128 or below (JPEG output)", async () => {
    const r = await renderUrl(ROCKET, "solarize");
    expectShape(r, ROCKET);
    // Re-encoding as JPEG rings a little around edges; solarized content itself never exceeds 128.
    const above = r.pixels.data.reduce((n, v) => n + (v > 136 ? 1 : 0), 0);
    expect(above / r.pixels.data.length).toBeLessThan(0.001);
  });
});

describe("raw-pixel steps", () => {
  it("run in the pixel workers and hand their pixels over by transfer, not by structured clone", async () => {
    const before = pixels.stats();
    await renderUrl(COFFEE, "solarize/exposure:value=1/wave:amplitude=2:wavelength=50");
    const after = pixels.stats();
    expect(after.completed - before.completed).toBe(3);
    expect(after.cloned).toBe(before.cloned);
  });
});

describe("exposure", () => {
  it("0 EV leaves PNG pixels identical and JPEG pixels unchanged within re-encoding noise", async () => {
    const png = await renderUrl(COFFEE, "exposure:value=0");
    expectShape(png, COFFEE);
    expect(png.pixels.data.equals((await decode(COFFEE.file)).data)).toBe(true);
    const jpeg = await renderUrl(ROCKET, "exposure");
    expectShape(jpeg, ROCKET);
    // Only the encoder's own loss (render re-encodes at its JPEG quality) separates it from the source.
    expect(diffs(jpeg.pixels, await decode(ROCKET.file)).mean).toBeLessThan(4);
  });

  // decode(128) = 0.2159; x2 = 0.4317 -> encode 175.55 -> 176; /2 = 0.1079 -> 92.37 -> 92.
  it("works in linear light: mid-grey 128 -> 176 at +1 EV, -> 92 at -1 EV", async () => {
    const grey = await flatPng(32, 16, 128);
    const up = await renderUrl(grey, "exposure:value=1");
    const down = await renderUrl(grey, "exposure:value=-1");
    expect(new Set(up.pixels.data)).toEqual(new Set([176]));
    expect(new Set(down.pixels.data)).toEqual(new Set([92]));
    // Linear light doubles / halves (within the 8-bit step), where a gamma-space x2 would clip to 255.
    const linear = (v: number) => ((v / 255 + 0.055) / 1.055) ** 2.4;
    expect(linear(176) / linear(128)).toBeCloseTo(2, 1);
    expect(linear(92) / linear(128)).toBeCloseTo(0.5, 1);
    expect(exposureTable(0)).toEqual(Uint8Array.from({ length: 256 }, (_, i) => i));
  });

  it("brightens and darkens every pixel monotonically on coffee.png, clipping at 255, alpha untouched on logo.png", async () => {
    const source = await decode(COFFEE.file);
    const up = await renderUrl(COFFEE, "exposure:value=1.5");
    const down = await renderUrl(COFFEE, "exposure:value=-2");
    let upOk = true;
    let downOk = true;
    for (let i = 0; i < source.data.length; i++) {
      upOk &&= up.pixels.data[i]! >= source.data[i]!;
      downOk &&= down.pixels.data[i]! <= source.data[i]!;
    }
    expect([upOk, downOk]).toEqual([true, true]);
    expect(mean(up.pixels.data)).toBeGreaterThan(mean(source.data) + 30);
    expect(mean(down.pixels.data)).toBeLessThan(mean(source.data) - 30);
    const logo = await renderUrl(LOGO, "exposure:value=2");
    expect(sameAlpha(logo.pixels, await decode(LOGO.file))).toBe(true);
    const jpeg = await renderUrl(ROCKET, "exposure:value=1");
    expectShape(jpeg, ROCKET);
    expect(mean(jpeg.pixels.data)).toBeGreaterThan(mean((await decode(ROCKET.file)).data) + 20);
  });
});

describe("add-noise", () => {
  it("is deterministic per URL: same key -> identical bytes, another key -> other bytes (JPEG and PNG)", async () => {
    for (const fixture of [ROCKET, COFFEE]) {
      const a = await renderUrl(fixture, "add-noise:amount=5", { cacheKey: "/add-noise:amount=5/a.png" });
      const b = await renderUrl(fixture, "add-noise:amount=5", { cacheKey: "/add-noise:amount=5/a.png" });
      const c = await renderUrl(fixture, "add-noise:amount=5", { cacheKey: "/add-noise:amount=5/b.png" });
      expectShape(a, fixture);
      expect(a.data.equals(b.data)).toBe(true);
      expect(a.data.equals(c.data)).toBe(false);
    }
    expect(noiseSeed("/k", 0)).toEqual(noiseSeed("/k", 0));
    expect(noiseSeed("/k", 0)).not.toEqual(noiseSeed("/k", 1));
  });

  it("gaussian: sigma measured on a flat image is amount % of 255", async () => {
    const r = await renderUrl(await flatPng(256, 256, 128), "add-noise:type=gaussian:amount=5");
    for (let c = 0; c < 3; c++) {
      const values = channelValues(r.pixels, c);
      expect(mean(values)).toBeCloseTo(128, 0);
      expect(stdDev(values) / 12.75).toBeGreaterThan(0.97);
      expect(stdDev(values) / 12.75).toBeLessThan(1.03);
    }
  });

  it("uniform: values spread evenly over +-amount % of 255", async () => {
    const r = await renderUrl(await flatPng(256, 256, 128), "add-noise:type=uniform:amount=10");
    const values = channelValues(r.pixels, 1);
    const [lowest, highest] = [
      values.reduce((m, v) => Math.min(m, v), 255),
      values.reduce((m, v) => Math.max(m, v), 0),
    ];
    expect(lowest).toBeGreaterThanOrEqual(128 - 26);
    expect(highest).toBeLessThanOrEqual(128 + 26);
    expect(lowest).toBeLessThanOrEqual(128 - 24);
    expect(highest).toBeGreaterThanOrEqual(128 + 24);
    // A uniform distribution of half-width a has sigma a / sqrt(3).
    expect(stdDev(values) / (25.5 / Math.sqrt(3))).toBeCloseTo(1, 1);
  });

  it("salt-pepper: about amount % of pixels become black or white, the rest untouched", async () => {
    const r = await renderUrl(await flatPng(256, 256, 128), "add-noise:type=salt-pepper:amount=5");
    let salt = 0;
    let pepper = 0;
    let other = 0;
    for (let i = 0; i < r.pixels.data.length; i += 3) {
      const [red, green, blue] = [r.pixels.data[i]!, r.pixels.data[i + 1]!, r.pixels.data[i + 2]!];
      if (red === 255 && green === 255 && blue === 255) salt++;
      else if (red === 0 && green === 0 && blue === 0) pepper++;
      else if (red === 128 && green === 128 && blue === 128) continue;
      else other++;
    }
    const n = 256 * 256;
    expect(other).toBe(0);
    expect((salt + pepper) / n).toBeGreaterThan(0.045);
    expect((salt + pepper) / n).toBeLessThan(0.055);
    expect(Math.abs(salt - pepper) / (salt + pepper)).toBeLessThan(0.1);
  });

  it("leaves alpha untouched", async () => {
    const r = await renderUrl(LOGO, "add-noise:amount=8");
    expectShape(r, LOGO);
    expect(sameAlpha(r.pixels, await decode(LOGO.file))).toBe(true);
  });

  it("draws from xoshiro128** (reference vector of the published C code, seed 1,2,3,4)", () => {
    const next = xoshiro128ss([1, 2, 3, 4]);
    expect([next(), next(), next()]).toEqual([11520, 0, 5927040]);
  });
});

/** Per-pixel GIMP HSL lightness (max + min) / 2 in 0..255, and the red excess R - (G + B) / 2. */
function lightnessAndRedExcess(img: RawImage): { l: Float64Array; redExcess: Float64Array } {
  const n = img.width * img.height;
  const l = new Float64Array(n);
  const redExcess = new Float64Array(n);
  for (let p = 0; p < n; p++) {
    const i = p * img.channels;
    const [r, g, b] = [img.data[i]!, img.data[i + 1]!, img.data[i + 2]!];
    l[p] = (Math.max(r, g, b) + Math.min(r, g, b)) / 2;
    redExcess[p] = r - (g + b) / 2;
  }
  return { l, redExcess };
}

describe("color-balance", () => {
  it("with no shift (bare name or zeros) returns the pixels unchanged", async () => {
    const source = await decode(COFFEE.file);
    for (const steps of ["color-balance", "color-balance:cyan=0:magenta=0:yellow=0:target=shadows"]) {
      const r = await renderUrl(COFFEE, steps);
      expectShape(r, COFFEE);
      expect(r.pixels.data.equals(source.data)).toBe(true);
    }
  });

  it("cyan=+100 on midtones warms the midtones much more than the shadows and keeps luminosity", async () => {
    const source = await decode(COFFEE.file);
    const r = await renderUrl(COFFEE, "color-balance:cyan=100");
    const before = lightnessAndRedExcess(source);
    const after = lightnessAndRedExcess(r.pixels);
    const shift = (from: number, to: number): number => {
      let sum = 0;
      let count = 0;
      for (let p = 0; p < before.l.length; p++) {
        if (before.l[p]! >= from && before.l[p]! < to) {
          sum += after.redExcess[p]! - before.redExcess[p]!;
          count++;
        }
      }
      expect(count).toBeGreaterThan(1000);
      return sum / count;
    };
    const midtones = shift(0.42 * 255, 0.58 * 255);
    const shadows = shift(0, 0.2 * 255);
    expect(midtones).toBeGreaterThan(40);
    expect(Math.abs(shadows)).toBeLessThan(1);
    // Luminosity preserved: HSL lightness moves only by rounding.
    expect(mean(before.l.map((v, p) => Math.abs(v - after.l[p]!)))).toBeLessThan(0.5);
  });

  it("magenta and yellow move the green and blue channels the way the spec names them", async () => {
    const grey = await flatPng(8, 8, 128);
    const magenta = (await renderUrl(grey, "color-balance:magenta=60")).pixels.data;
    const green = (await renderUrl(grey, "color-balance:magenta=-60")).pixels.data;
    const yellow = (await renderUrl(grey, "color-balance:yellow=60")).pixels.data;
    const blue = (await renderUrl(grey, "color-balance:yellow=-60")).pixels.data;
    expect(magenta[1]!).toBeLessThan(Math.min(magenta[0]!, magenta[2]!)); // less green = magenta
    expect(green[1]!).toBeGreaterThan(Math.max(green[0]!, green[2]!));
    expect(yellow[2]!).toBeLessThan(Math.min(yellow[0]!, yellow[1]!)); // less blue = yellow
    expect(blue[2]!).toBeGreaterThan(Math.max(blue[0]!, blue[1]!));
  });

  it("targets only its tonal range: highlights leave dark pixels alone", async () => {
    const ramp = await sharp(Buffer.from(Array.from({ length: 256 }, (_, i) => [i, i, i]).flat()), {
      raw: { width: 256, height: 1, channels: 3 },
    })
      .png()
      .toBuffer();
    const r = await renderUrl({ data: ramp, type: "image/png" }, "color-balance:cyan=-100:target=highlights");
    const px = (x: number) => [r.pixels.data[x * 3]!, r.pixels.data[x * 3 + 1]!, r.pixels.data[x * 3 + 2]!];
    expect(px(40)).toEqual([40, 40, 40]);
    const [red, g, b] = px(220);
    expect(g - red).toBeGreaterThan(10); // cyan: red below green and blue
    expect(b - red).toBeGreaterThan(10);
    // The three masks sum to 1 everywhere (GIMP's design).
    for (const l of [0, 0.2, 0.333, 0.5, 0.7, 1]) {
      expect(tonalWeight("shadows", l) + tonalWeight("midtones", l) + tonalWeight("highlights", l)).toBeCloseTo(1, 9);
    }
  });

  it("keeps JPEG in, JPEG out and alpha untouched", async () => {
    const jpeg = await renderUrl(ROCKET, "color-balance:yellow=40:target=highlights");
    expectShape(jpeg, ROCKET);
    const logo = await renderUrl(LOGO, "color-balance:cyan=50");
    expect(sameAlpha(logo.pixels, await decode(LOGO.file))).toBe(true);
  });
});

describe("clahe", () => {
  it.each([
    ["clahe-camera-grey-c3-t16.png", 3, 16],
    ["clahe-camera-grey-c2-t24.png", 2, 24],
    ["clahe-camera-grey-c40-t2.png", 40, 2],
    ["clahe-camera-grey-c2-t3.png", 2, 3],
  ])("the tiled algorithm equals OpenCV createCLAHE bit for bit (%s)", async (file, clipLimit, tileSize) => {
    const { data, info } = await sharp(path.join(FIXTURES, "camera.png"))
      .extractChannel(0)
      .raw()
      .toBuffer({ resolveWithObject: true });
    const { tilesX, tilesY } = claheGrid(info.width, info.height, tileSize);
    const ours = claheChannel(data, info.width, info.height, { clipLimit, tilesX, tilesY });
    const opencv = await sharp(path.join(REFERENCE, file)).extractChannel(0).raw().toBuffer();
    expect(Buffer.from(ours).equals(opencv)).toBe(true);
  });

  const randomCases = ["37x23", "40x21", "33x30", "1x9"].flatMap((size) =>
    [
      [1.5, 2],
      [4, 3],
      [2, 5],
      [40, 8],
      [3, 64],
    ].map(([clipLimit, tileSize]) => [size, clipLimit!, tileSize!] as const),
  );
  it.each(randomCases)(
    "equals OpenCV on %s noise (clip %f, tile %i): padding, tiny tiles, tiles larger than the image",
    async (size, clipLimit, tileSize) => {
      const input = await sharp(path.join(REFERENCE, `clahe-random-${size}.png`))
        .extractChannel(0)
        .raw()
        .toBuffer({ resolveWithObject: true });
      const { width, height } = input.info;
      const { tilesX, tilesY } = claheGrid(width, height, tileSize);
      const ours = claheChannel(input.data, width, height, { clipLimit, tilesX, tilesY });
      const opencv = await sharp(path.join(REFERENCE, `clahe-random-${size}-c${clipLimit}-t${tileSize}.png`))
        .extractChannel(0)
        .raw()
        .toBuffer();
      expect(Buffer.from(ours).equals(opencv)).toBe(true);
    },
  );

  // Tolerance for the Lab path: L is OpenCV's bit-exact 8-bit lightness, but OpenCV rounds a
  // and b to 8 bits and converts back in fixed point, we keep them in float.
  it.each([
    ["clahe", COFFEE, "clahe-coffee-lab-c3-t16.png"],
    ["clahe:clipLimit=3:tileSize=20", COFFEE, "clahe-coffee-lab-c3-t20.png"],
    ["clahe:tileSize=16", CAMERA, "clahe-camera-lab-c3-t16.png"],
  ])(
    "on Lab lightness matches OpenCV within mean |diff| < 1 and p99 <= 2: %s on %p",
    async (steps, fixture, reference) => {
      const r = await renderUrl(fixture, steps);
      expectShape(r, fixture);
      const d = diffs(r.pixels, await decode(reference, REFERENCE), 3);
      expect(d.mean).toBeLessThan(1);
      expect(d.percentile(0.99)).toBeLessThanOrEqual(2);
      expect(d.percentile(1)).toBeLessThanOrEqual(6);
    },
  );

  it("raises local contrast on rocket.jpg, keeps grey pixels grey and alpha untouched", async () => {
    const r = await renderUrl(ROCKET, "clahe:clipLimit=4:tileSize=32");
    expectShape(r, ROCKET);
    const source = await decode(ROCKET.file);
    expect(stdDev(channelValues(r.pixels, 1))).toBeGreaterThan(stdDev(channelValues(source, 1)) * 1.05);
    const camera = await renderUrl(CAMERA, "clahe");
    let spread = 0;
    for (let i = 0; i < camera.pixels.data.length; i += 3) {
      spread = Math.max(
        spread,
        Math.abs(camera.pixels.data[i]! - camera.pixels.data[i + 1]!),
        Math.abs(camera.pixels.data[i + 1]! - camera.pixels.data[i + 2]!),
      );
    }
    expect(spread).toBe(0);
    const logo = await renderUrl(LOGO, "clahe");
    expect(sameAlpha(logo.pixels, await decode(LOGO.file))).toBe(true);
  });
});

describe("wave", () => {
  it.each([
    ["wave-coffee-10x60.png", COFFEE, 10, 60],
    ["wave-coffee-4.5x33.png", COFFEE, 4.5, 33],
    ["wave-logo-10x60.png", LOGO, 10, 60],
    ["wave-logo-4.5x33.png", LOGO, 4.5, 33],
  ])("matches ImageMagick -wave: %s", async (reference, fixture, amplitude, wavelength) => {
    const r = await renderUrl(fixture, `wave:amplitude=${amplitude}:wavelength=${wavelength}`);
    expectShape(r, fixture, fixture.width, fixture.height + Math.floor(2 * amplitude));
    const d = diffs(r.pixels, await decode(reference, REFERENCE));
    // Same sine map, bilinear blend and Q16 quantisation as ImageMagick: a handful of bytes
    // (under 1 in 10,000, float rounding at quantum boundaries) differ, by 1.
    expect(d.percentile(1)).toBeLessThanOrEqual(1);
    expect(d.percentile(0.9999)).toBe(0);
  });

  it("grows rocket.jpg by 2 x amplitude, stays JPEG, and its pixels match ImageMagick's", async () => {
    const r = await renderUrl(ROCKET, "wave:amplitude=10:wavelength=60");
    expectShape(r, ROCKET, 640, 447);
    // Column 0 is shifted by exactly the amplitude: the rows above it are ImageMagick's white background.
    for (let y = 0; y < 8; y++) expect(r.pixels.data[y * 640 * 3]).toBeGreaterThan(245);
    // Before JPEG encoding: only the two JPEG decoders (libvips vs ImageMagick's) differ.
    const waved = await pixels.run("wave", await decode(ROCKET.file), {
      amplitude: 10,
      wavelength: 60,
      background: [255, 255, 255, 255],
    });
    const d = diffs(waved, await decode("wave-rocket-10x60.png", REFERENCE));
    expect(d.mean).toBeLessThan(0.25);
    expect(d.percentile(0.99)).toBeLessThanOrEqual(2);
  });

  it("refuses outputs above maxDimension or maxOutputPixels with a 400-type error naming wave.amplitude", async () => {
    const tight: MediaLimits = { ...defaultMediaLimits, maxDimension: 500 };
    const tall = await renderUrl(ROCKET, "wave:amplitude=40:wavelength=60", { limits: tight }).catch((e: unknown) => e);
    expect(tall).toBeInstanceOf(TransformationInputError);
    expect(tall).toMatchObject({ path: "wave.amplitude", message: expect.stringContaining("507 px high") });
    const few: MediaLimits = { ...defaultMediaLimits, maxOutputPixels: 640 * 440 };
    const big = await renderUrl(ROCKET, "wave:amplitude=10:wavelength=60", { limits: few }).catch((e: unknown) => e);
    expect(big).toMatchObject({ path: "wave.amplitude", message: expect.stringContaining("maxOutputPixels") });
    const ok = await renderUrl(ROCKET, "wave:amplitude=36:wavelength=60", { limits: tight });
    expect([ok.width, ok.height]).toEqual([640, 499]);
  });
});
