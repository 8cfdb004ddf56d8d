import { readFileSync } from "node:fs";
import path from "node:path";
import sharp from "sharp";
import { defaultMediaLimits, MediaUrlError, parseMediaPath } from "@media-platform/contracts";
import { toRaw } from "../src/render/raw";
import type { RawImage } from "../src/render/types";
import { render } from "../src/render/pipeline/render";
import type { FaceBox } from "../src/render/types";

const FIXTURES = path.join(__dirname, "..", "..", "..", "fixtures", "images");
const BASE_ID = "00000000-0000-4000-8000-000000000000";
const MARK = "6f1c2d3e-4a5b-4c6d-8e7f-0a1b2c3d4e5f";

const png = (width: number, height: number, background: string) =>
  sharp({ create: { width, height, channels: 3, background } })
    .png()
    .toBuffer();

/** Renders `/<steps>/<base>.png` through the URL grammar and the render pipeline. */
async function renderUrl(
  original: Buffer,
  steps: string,
  options: { overlays?: Map<string, Buffer>; faces?: FaceBox[] } = {},
): Promise<RawImage> {
  const request = parseMediaPath(`/${steps}/${BASE_ID}.png`);
  const rendition = await render(
    { original, contentType: "image/png", steps: request.steps, cacheKey: steps, overlays: options.overlays },
    {
      pixels: {} as never,
      faces: { detect: async () => options.faces ?? [] },
      limits: defaultMediaLimits,
      limitInputPixels: 100_000_000,
    },
  );
  return toRaw(sharp(rendition.data));
}

const pixel = (image: RawImage, x: number, y: number) => {
  const o = (y * image.width + x) * image.channels;
  return [...image.data.subarray(o, o + 3)];
};

/** The bounding box of pixels whose red channel differs from `background` by more than 64. */
function inkBox(image: RawImage, background: number) {
  let left = Infinity;
  let top = Infinity;
  let right = -1;
  let bottom = -1;
  let count = 0;
  for (let y = 0; y < image.height; y++) {
    for (let x = 0; x < image.width; x++) {
      if (Math.abs(image.data[(y * image.width + x) * image.channels]! - background) <= 64) continue;
      count++;
      left = Math.min(left, x);
      top = Math.min(top, y);
      right = Math.max(right, x);
      bottom = Math.max(bottom, y);
    }
  }
  return { left, top, right, bottom, count };
}

describe("overlay: position and opacity", () => {
  let base: Buffer;
  let overlays: Map<string, Buffer>;
  beforeAll(async () => {
    base = await png(200, 100, "#808080");
    overlays = new Map([[MARK, await png(20, 10, "#ff0000")]]);
  });

  it("places the overlay by gravity and offsets, exactly", async () => {
    const out = await renderUrl(base, `overlay:asset=${MARK.toUpperCase()}:gravity=northwest:x=10:y=5`, { overlays });
    expect(pixel(out, 10, 5)).toEqual([255, 0, 0]);
    expect(pixel(out, 29, 14)).toEqual([255, 0, 0]);
    expect(pixel(out, 9, 5)).toEqual([128, 128, 128]);
    expect(pixel(out, 30, 5)).toEqual([128, 128, 128]);
    expect(pixel(out, 10, 15)).toEqual([128, 128, 128]);
    expect(out.channels).toBe(3);
  });

  it("defaults to the south-east corner; negative offsets move it left and up", async () => {
    const corner = await renderUrl(base, `overlay:asset=${MARK}`, { overlays });
    expect(pixel(corner, 199, 99)).toEqual([255, 0, 0]);
    expect(pixel(corner, 180, 90)).toEqual([255, 0, 0]);
    expect(pixel(corner, 179, 90)).toEqual([128, 128, 128]);
    const moved = await renderUrl(base, `overlay:asset=${MARK}:x=-5:y=-3`, { overlays });
    expect(pixel(moved, 194, 96)).toEqual([255, 0, 0]);
    expect(pixel(moved, 196, 98)).toEqual([128, 128, 128]);
  });

  it("fades by opacity: 0.5 is the average of overlay and image", async () => {
    const out = await renderUrl(base, `overlay:asset=${MARK}:gravity=center:opacity=.5`, { overlays });
    const [r, g, b] = pixel(out, 100, 50);
    expect(Math.abs(r! - (255 + 128) / 2)).toBeLessThanOrEqual(1);
    expect(Math.abs(g! - 128 / 2)).toBeLessThanOrEqual(1);
    expect(Math.abs(b! - 128 / 2)).toBeLessThanOrEqual(1);
    expect(pixel(out, 80, 50)).toEqual([128, 128, 128]);
  });

  it("scales to a share of the image width and tiles over the whole image", async () => {
    const scaled = await renderUrl(base, `overlay:asset=${MARK}:gravity=center:scale=.5`, { overlays });
    // 100 x 50, centred: x 50..149, y 25..74.
    expect(pixel(scaled, 50, 25)).toEqual([255, 0, 0]);
    expect(pixel(scaled, 149, 74)).toEqual([255, 0, 0]);
    expect(pixel(scaled, 49, 25)).toEqual([128, 128, 128]);
    expect(pixel(scaled, 150, 75)).toEqual([128, 128, 128]);
    const tiled = await renderUrl(base, `overlay:asset=${MARK}:tile=true`, { overlays });
    for (const [x, y] of [
      [0, 0],
      [199, 99],
      [100, 50],
      [37, 81],
    ] as const)
      expect(pixel(tiled, x, y)).toEqual([255, 0, 0]);
  });

  it("clips an overlay pushed partly outside, and leaves the image alone when it is wholly outside", async () => {
    const partly = await renderUrl(base, `overlay:asset=${MARK}:gravity=northwest:x=-10:y=-5`, { overlays });
    expect(pixel(partly, 0, 0)).toEqual([255, 0, 0]);
    expect(pixel(partly, 9, 4)).toEqual([255, 0, 0]);
    expect(pixel(partly, 10, 0)).toEqual([128, 128, 128]);
    const outside = await renderUrl(base, `overlay:asset=${MARK}:gravity=northwest:x=500`, { overlays });
    expect(inkBox(outside, 128).count).toBe(0);
  });

  it("an animation stays animated, with the overlay on every frame", async () => {
    const gif = readFileSync(path.join(FIXTURES, "no_time_for_that_tiny.gif"));
    const request = parseMediaPath(`/overlay:asset=${MARK}:gravity=northwest/${BASE_ID}.gif`);
    const rendition = await render(
      { original: gif, contentType: "image/gif", steps: request.steps, cacheKey: "gif", overlays },
      { pixels: {} as never, faces: { detect: async () => [] }, limits: defaultMediaLimits, limitInputPixels: 1e8 },
    );
    const meta = await sharp(rendition.data).metadata();
    const pages = (await sharp(gif).metadata()).pages!;
    expect(meta.pages).toBe(pages);
    expect(pages).toBeGreaterThan(1);
    const strip = await toRaw(sharp(rendition.data, { pages: -1 }));
    const frameHeight = strip.height / pages;
    for (let frame = 0; frame < pages; frame++) {
      const [r, g, b] = pixel(strip, 2, frame * frameHeight + 2);
      // GIF palettes quantise: red within a few levels.
      expect(r).toBeGreaterThan(240);
      expect(g! + b!).toBeLessThan(30);
    }
  });

  it("refuses an asset parameter that is not a UUID (400 naming overlay.asset)", () => {
    expect(() => parseMediaPath(`/overlay:asset=logo/${BASE_ID}.png`)).toThrow(MediaUrlError);
    expect(() => parseMediaPath(`/overlay/${BASE_ID}.png`)).toThrow(/overlay\.asset: required/);
  });
});

describe("text: presence and bounds", () => {
  let black: Buffer;
  beforeAll(async () => {
    black = await png(400, 120, "#000000");
  });

  it("draws white text centred, all of its ink inside the image", async () => {
    const out = await renderUrl(black, "text:text=Hello%20World:size=40");
    const ink = inkBox(out, 0);
    expect(ink.count).toBeGreaterThan(500);
    // Centred: the ink box's middle within a few pixels of the image's.
    expect(Math.abs((ink.left + ink.right) / 2 - 200)).toBeLessThanOrEqual(4);
    expect(Math.abs((ink.top + ink.bottom) / 2 - 60)).toBeLessThanOrEqual(8);
    expect(ink.bottom - ink.top).toBeLessThanOrEqual(40);
  });

  it("places by gravity and offset; size scales the ink", async () => {
    const corner = inkBox(await renderUrl(black, "text:text=Hi:size=20:gravity=northwest:x=10:y=10"), 0);
    expect(corner.left).toBeGreaterThanOrEqual(10);
    expect(corner.left).toBeLessThan(16);
    expect(corner.top).toBeGreaterThanOrEqual(10);
    expect(corner.top).toBeLessThan(20);
    const southeast = inkBox(await renderUrl(black, "text:text=Hi:size=20:gravity=southeast"), 0);
    expect(southeast.right).toBeGreaterThan(390);
    expect(southeast.bottom).toBeGreaterThan(100);
    const big = inkBox(await renderUrl(black, "text:text=Hi:size=60:gravity=northwest"), 0);
    expect(big.bottom - big.top).toBeGreaterThan(2.5 * (corner.bottom - corner.top));
  });

  it("draws the background box with padding, in the given colour and opacity", async () => {
    const out = await renderUrl(
      black,
      "text:text=Box:size=20:gravity=northwest:background=ff0000:padding=6:color=blue",
    );
    expect(pixel(out, 0, 0)).toEqual([255, 0, 0]);
    expect(pixel(out, 3, 3)).toEqual([255, 0, 0]);
    const faded = await renderUrl(black, "text:text=Box:size=20:gravity=northwest:background=ff0000:opacity=.5");
    expect(Math.abs(pixel(faded, 0, 0)[0]! - 128)).toBeLessThanOrEqual(1);
  });

  it("renders Hebrew and Arabic (right to left) with the bundled font, and wraps long text inside the image", async () => {
    for (const word of ["%D7%A9%D7%9C%D7%95%D7%9D", "%D9%85%D8%B1%D8%AD%D8%A8%D8%A7"]) {
      const ink = inkBox(await renderUrl(black, `text:text=${word}:size=40`), 0);
      expect(ink.count).toBeGreaterThan(200);
      expect(ink.left).toBeGreaterThan(0);
      expect(ink.right).toBeLessThan(399);
    }
    const long = inkBox(await renderUrl(black, `text:text=${"word%20".repeat(30)}end:size=20:gravity=north`), 0);
    expect(long.left).toBeGreaterThanOrEqual(0);
    expect(long.right).toBeLessThanOrEqual(399);
    expect(long.bottom - long.top).toBeGreaterThan(40);
  });

  it("draws markup characters as text: <b> is never a tag", async () => {
    const tag = inkBox(await renderUrl(black, "text:text=%3Cb%3Ex%3C%2Fb%3E:size=30:gravity=northwest"), 0);
    const x = inkBox(await renderUrl(black, "text:text=x:size=30:gravity=northwest"), 0);
    expect(tag.right - tag.left).toBeGreaterThan(4 * (x.right - x.left));
    await expect(renderUrl(black, "text:text=%26bogus%3B%20%26amp:size=30")).resolves.toBeDefined();
  });

  it("refuses text above the length and size limits with a 400 naming the parameter", () => {
    const long = "a".repeat(201);
    expect(() => parseMediaPath(`/text:text=${long}/${BASE_ID}.png`)).toThrow(
      /text\.text: .*longer than 200 characters/,
    );
    expect(() => parseMediaPath(`/text:text=Hi:size=300/${BASE_ID}.png`)).toThrow(/text\.size/);
    expect(() => parseMediaPath(`/text:text=a%00b/${BASE_ID}.png`)).toThrow(/control characters/);
    // 200 characters of a two-byte script are fine.
    expect(parseMediaPath(`/text:text=${"%D7%90".repeat(200)}/${BASE_ID}.png`).steps[0]!.params).toEqual({
      text: "א".repeat(200),
    });
  });
});

describe("redact: the region changes, the rest stays the same", () => {
  let photo: Buffer;
  let plain: RawImage;
  beforeAll(async () => {
    photo = readFileSync(path.join(FIXTURES, "coffee.png"));
    plain = await toRaw(sharp(photo));
  });

  /** Pixels inside and outside `box` that differ from the unredacted image. */
  function changed(out: RawImage, box: { left: number; top: number; right: number; bottom: number }) {
    let inside = 0;
    let outside = 0;
    for (let y = 0; y < out.height; y++) {
      for (let x = 0; x < out.width; x++) {
        const o = (y * out.width + x) * out.channels;
        const differs = [0, 1, 2].some(
          (c) => out.data[o + c] !== plain.data[(y * plain.width + x) * plain.channels + c],
        );
        if (!differs) continue;
        if (x >= box.left && x < box.right && y >= box.top && y < box.bottom) inside++;
        else outside++;
      }
    }
    return { inside, outside, area: (box.right - box.left) * (box.bottom - box.top) };
  }

  it.each(["blur", "pixelate"])("mode=%s redacts a region given in fractions of the displayed image", async (mode) => {
    const out = await renderUrl(photo, `redact:region=.25,.25,.5,.5:mode=${mode}`);
    const result = changed(out, { left: 150, top: 100, right: 450, bottom: 300 });
    expect(result.outside).toBe(0);
    expect(result.inside / result.area).toBeGreaterThan(0.8);
  });

  it("strength makes pixelation coarser", async () => {
    const weak = await renderUrl(photo, "redact:region=0,0,1,1:mode=pixelate:strength=5");
    const strong = await renderUrl(photo, "redact:region=0,0,1,1:mode=pixelate:strength=100");
    // 100: blocks of half the shorter side (200 px), so the top-left block is one colour.
    expect(pixel(strong, 0, 0)).toEqual(pixel(strong, 199, 199));
    expect(pixel(weak, 0, 0)).not.toEqual(pixel(weak, 199, 199));
  });

  it("faces=true redacts what the detector finds (with a margin) and nothing else", async () => {
    // The detector sees a 416 x 277 copy: a face at (100, 100) 50 x 50 there is at about
    // (144, 144) 72 x 72 in the 600 x 400 image; the margin adds a quarter on each side.
    const out = await renderUrl(photo, "redact:faces=true", {
      faces: [{ x: 100, y: 100, width: 50, height: 50, score: 0.9 }],
    });
    const result = changed(out, { left: 126, top: 126, right: 235, bottom: 235 });
    expect(result.outside).toBe(0);
    expect(result.inside / result.area).toBeGreaterThan(0.8);
    const none = await renderUrl(photo, "redact:faces=true");
    expect(changed(none, { left: 0, top: 0, right: 0, bottom: 0 }).outside).toBe(0);
  });

  it("refuses a redact without faces or region, and regions outside the image (400)", () => {
    expect(() => parseMediaPath(`/redact/${BASE_ID}.png`)).toThrow(/redact needs faces=true, a region, or both/);
    expect(() => parseMediaPath(`/redact:region=.5,.5,.6,.1/${BASE_ID}.png`)).toThrow(/redact\.region/);
    expect(() => parseMediaPath(`/redact:region=0,0,0,1/${BASE_ID}.png`)).toThrow(/redact\.region/);
    expect(() => parseMediaPath(`/redact:region=0,0,1/${BASE_ID}.png`)).toThrow(/redact\.region/);
    expect(parseMediaPath(`/redact:region=0.0,.10,1.0,0.5/${BASE_ID}.png`).steps[0]!.params).toEqual({
      region: "0,0.1,1,0.5",
    });
  });
});
