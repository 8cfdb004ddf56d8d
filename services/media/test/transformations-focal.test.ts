// Focal points and smart gravity (issue 11 item 4), through the real render pipeline: thumbnail
// and avatar centre on the asset's focal point, crop gains gravity=focal|attention|entropy, and
// the point follows the image through the steps before the one that uses it.
import sharp from "sharp";
import { defaultMediaLimits, resolveParams, type FocalPoint } from "@media-platform/contracts";
import type { RawImage } from "../src/render/types";
import { crop, cropRegion } from "../src/render/transformations/crop";
import { fit } from "../src/render/transformations/fit";
import { resize } from "../src/render/transformations/resize";
import { thumbnail } from "../src/render/transformations/thumbnail";
import type { Transformation } from "../src/render/transformations/transformation";
import type { FaceDetector, Size } from "../src/render/types";
import { closeHarness, decodePixels, renderImage } from "./support/render-harness";

afterAll(closeHarness);

type Rgb = [number, number, number];
const RED: Rgb = [255, 0, 0];
const GREEN: Rgb = [0, 255, 0];
const BLUE: Rgb = [0, 0, 255];
const SEAM = 3;

/** Vertical stripes of equal width, left to right, as a PNG. */
function stripes(colours: Rgb[], stripeWidth: number, height: number): Promise<Buffer> {
  const width = colours.length * stripeWidth;
  const data = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) data.set(colours[Math.floor(x / stripeWidth)]!, (y * width + x) * 3);
  }
  return sharp(data, { raw: { width, height, channels: 3 } })
    .png()
    .toBuffer();
}

const px = (img: RawImage, x: number, y: number): number[] =>
  Array.from(img.data.subarray((y * img.width + x) * img.channels, (y * img.width + x) * img.channels + 3));

/**
 * Every pixel of `img` at least `margin` away from its left and right edges is `colour`. A large
 * reduction resizes the whole image before the window is cut (shrink-on-load), so the resampling
 * kernel (lanczos3) reaches up to 3 output pixels across the window's edge: SEAM.
 */
function expectSolid(img: RawImage, colour: Rgb, margin = 0) {
  for (let y = 0; y < img.height; y++) {
    for (let x = margin; x < img.width - margin; x++) {
      if (px(img, x, y).some((v, c) => v !== colour[c])) {
        throw new Error(`pixel (${x}, ${y}) is ${px(img, x, y).join(",")}, expected ${colour.join(",")}`);
      }
    }
  }
}

async function rendered(original: Buffer, steps: string, focalPoint?: FocalPoint, faces?: FaceDetector) {
  const out = await renderImage(original, steps, { focalPoint, deps: faces ? { faces } : undefined });
  return { out, pixels: await decodePixels(out.data) };
}

/** A detector that fails the test if called, and one that counts its calls. */
const forbiddenDetector: FaceDetector = {
  detect: async () => {
    throw new Error("the face detector must not run when the asset has a focal point");
  },
};
function countingDetector() {
  const counter = { calls: 0, detect: async () => (counter.calls++, []) };
  return counter;
}

describe("thumbnail on a focal point", () => {
  let halves: Buffer; // 400 x 200: left half red, right half blue
  beforeAll(async () => {
    halves = await stripes([RED, BLUE], 200, 200);
  });

  it.each([
    // size 50: the 200 px square is a 4x reduction (whole image resized, then the window cut)
    [50, { x: 0.9, y: 0.5 }, BLUE],
    [50, { x: 0.1, y: 0.5 }, RED],
    // size 150: a small reduction (window cut, then resized)
    [150, { x: 0.9, y: 0.5 }, BLUE],
    [150, { x: 0.1, y: 0.5 }, RED],
    // At the edges the window slides inside the image
    [100, { x: 1, y: 0 }, BLUE],
    [100, { x: 0, y: 1 }, RED],
  ])("size %i centred on %j is one colour, exact size", async (size, focalPoint, colour) => {
    const { out, pixels } = await rendered(halves, `thumbnail:size=${size}`, focalPoint);
    expect([out.width, out.height, out.contentType]).toEqual([size, size, "image/png"]);
    expect([pixels.width, pixels.height]).toEqual([size, size]);
    expectSolid(pixels, colour, SEAM);
  });

  it("without a focal point is exactly the centre cover crop, as before", async () => {
    const { out, pixels } = await rendered(halves, "thumbnail:size=100");
    expect([out.width, out.height]).toEqual([100, 100]);
    const reference = await decodePixels(await sharp(halves).resize(100, 100, { fit: "cover" }).png().toBuffer());
    expect(pixels.data.equals(reference.data)).toBe(true);
    expect(px(pixels, 10, 50)).toEqual(RED);
    expect(px(pixels, 90, 50)).toEqual(BLUE);
  });

  it("a centred focal point gives the centre square (the window, not the colours, moved)", async () => {
    const { pixels } = await rendered(halves, "thumbnail:size=100", { x: 0.5, y: 0.5 });
    expect(px(pixels, 10, 50)).toEqual(RED);
    expect(px(pixels, 90, 50)).toEqual(BLUE);
  });

  it("works on a tall image too (the window moves vertically)", async () => {
    const tall = await sharp(halves).rotate(90).png().toBuffer(); // 200 x 400: top red, bottom blue
    // Rotated back so the seam runs along the checked margin.
    const turned = async (focalPoint: FocalPoint) =>
      decodePixels(sharp((await rendered(tall, "thumbnail:size=64", focalPoint)).out.data).rotate(90));
    expectSolid(await turned({ x: 0.5, y: 0.95 }), BLUE, SEAM);
    expectSolid(await turned({ x: 0.5, y: 0.05 }), RED, SEAM);
  });

  it("reads the focal point in the coordinates of the image as displayed (after EXIF orientation)", async () => {
    // Displayed: 200 x 400, top red, bottom blue. Stored rotated a quarter turn back with
    // orientation 6 (display = stored turned 90° clockwise).
    const displayed = await sharp(halves).rotate(90).png().toBuffer();
    const stored = await sharp(displayed).rotate(270).jpeg({ quality: 95 }).withMetadata({ orientation: 6 }).toBuffer();
    expect(await sharp(stored).metadata()).toMatchObject({ width: 400, height: 200, orientation: 6 });
    for (const [focalPoint, dominant] of [
      [{ x: 0.5, y: 0.95 }, 2],
      [{ x: 0.5, y: 0.05 }, 0],
    ] as const) {
      const { out, pixels } = await rendered(stored, "thumbnail:size=64", focalPoint);
      expect([out.width, out.height, out.contentType]).toEqual([64, 64, "image/jpeg"]);
      for (const [x, y] of [
        [2, 2],
        [61, 61],
        [32, 32],
      ] as const) {
        const p = px(pixels, x, y);
        expect(p[dominant]).toBeGreaterThan(200);
        expect(p[2 - dominant]).toBeLessThan(60);
      }
    }
  });
});

describe("avatar on a focal point", () => {
  it("uses the largest square around it and never runs the face detector", async () => {
    const halves = await stripes([RED, BLUE], 200, 200);
    for (const [focalPoint, colour] of [
      [{ x: 0.9, y: 0.5 }, BLUE],
      [{ x: 0.1, y: 0.5 }, RED],
    ] as const) {
      const { out, pixels } = await rendered(halves, "avatar:size=64", focalPoint, forbiddenDetector);
      expect([out.width, out.height]).toEqual([64, 64]);
      expectSolid(pixels, colour, SEAM);
    }
  });

  it("keeps the shape and border logic (circle with a border, on a JPEG)", async () => {
    const halves = await sharp(await stripes([RED, BLUE], 200, 200))
      .jpeg({ quality: 95 })
      .toBuffer();
    const { out, pixels } = await rendered(
      halves,
      "avatar:size=100:shape=circle:border=4:border_color=00ff00",
      { x: 0.95, y: 0.5 },
      forbiddenDetector,
    );
    expect([out.width, out.height, out.contentType]).toEqual([100, 100, "image/jpeg"]);
    // Outside the circle: white (JPEG has no alpha); on the border: green; inside: blue.
    const [corner, border, inside] = [px(pixels, 1, 1), px(pixels, 50, 1), px(pixels, 50, 50)];
    expect(corner.every((v) => v > 240)).toBe(true);
    expect(border[1]).toBeGreaterThan(200);
    expect(border[0]).toBeLessThan(60);
    expect(inside[2]).toBeGreaterThan(200);
    expect(inside[0]).toBeLessThan(40);
  });

  it("without a focal point still asks the face detector (once)", async () => {
    const detector = countingDetector();
    const { out } = await rendered(await stripes([RED, BLUE], 200, 200), "avatar:size=64", undefined, detector);
    expect([out.width, out.height]).toEqual([64, 64]);
    expect(detector.calls).toBe(1);
  });
});

describe("crop gravity=focal", () => {
  let photo: Buffer;
  let source: RawImage;
  beforeAll(async () => {
    // A 400 x 200 gradient: every pixel differs from its neighbours, so a region is recognisable.
    const data = Buffer.alloc(400 * 200 * 3);
    for (let y = 0; y < 200; y++) {
      for (let x = 0; x < 400; x++) data.set([x % 256, y, (x * 7 + y * 3) % 256], (y * 400 + x) * 3);
    }
    photo = await sharp(data, { raw: { width: 400, height: 200, channels: 3 } })
      .png()
      .toBuffer();
    source = await decodePixels(photo);
  });
  const region = async (left: number, top: number, width: number, height: number) =>
    (await decodePixels(sharp(photo).extract({ left, top, width, height }))).data;

  it.each([
    // centred on (320, 60): left 270, top 10
    [{ x: 0.8, y: 0.3 }, "crop:width=100:height=100:gravity=focal", [270, 10, 100, 100]],
    // slid inside at the bottom-right corner
    [{ x: 0.99, y: 0.99 }, "crop:width=100:height=100:gravity=focal", [300, 100, 100, 100]],
    // slid inside at the top-left corner
    [{ x: 0, y: 0 }, "crop:width=120:height=80:gravity=focal", [0, 0, 120, 80]],
    // x overrides its axis; y comes from the focal point (centred on 100: top 50)
    [{ x: 0.9, y: 0.5 }, "crop:width=100:height=100:x=5:gravity=focal", [5, 50, 100, 100]],
    // a window larger than the image on one axis is clipped as for every gravity
    [{ x: 0.25, y: 0.5 }, "crop:width=100:height=500:gravity=focal", [50, 0, 100, 200]],
  ] as const)("focal point %j, %s: exactly the region %j", async (focalPoint, steps, [left, top, width, height]) => {
    const { out, pixels } = await rendered(photo, steps, focalPoint);
    expect([out.width, out.height]).toEqual([width, height]);
    expect(pixels.data.equals(await region(left, top, width, height))).toBe(true);
  });

  it("without a focal point behaves as gravity=center", async () => {
    const focal = await rendered(photo, "crop:width=100:height=100:gravity=focal");
    const centre = await rendered(photo, "crop:width=100:height=100");
    expect(focal.pixels.data.equals(centre.pixels.data)).toBe(true);
    expect(focal.pixels.data.equals(await region(150, 50, 100, 100))).toBe(true);
  });

  it("the spec's gravities ignore the focal point", async () => {
    const north = await rendered(photo, "crop:width=100:height=100:gravity=north", { x: 0.9, y: 0.9 });
    expect(north.pixels.data.equals(await region(150, 0, 100, 100))).toBe(true);
    expect(source.width).toBe(400);
  });
});

describe("crop gravity=attention and gravity=entropy (libvips smartcrop)", () => {
  /** A flat grey 600 x 400 image with one 60 x 60 high-contrast, saturated checkerboard at (left, top). */
  async function flatWithDetail(left: number, top: number) {
    const width = 600;
    const height = 400;
    const data = Buffer.alloc(width * height * 3, 128);
    for (let y = top; y < top + 60; y++) {
      for (let x = left; x < left + 60; x++) {
        const on = ((x >> 2) + (y >> 2)) % 2 === 1;
        data.set(on ? [255, 200, 0] : [0, 40, 255], (y * width + x) * 3);
      }
    }
    return sharp(data, { raw: { width, height, channels: 3 } })
      .png()
      .toBuffer();
  }
  /** Pixels of the output that are not the flat grey: all 3600 when the window holds the whole detail. */
  const detailPixels = (img: RawImage) => {
    let n = 0;
    for (let i = 0; i < img.data.length; i += img.channels) {
      if (img.data[i] !== 128 || img.data[i + 1] !== 128 || img.data[i + 2] !== 128) n++;
    }
    return n;
  };

  it.each([
    ["attention", 520, 320],
    ["attention", 10, 15],
    ["attention", 300, 20],
    ["entropy", 520, 320],
    ["entropy", 10, 15],
    ["entropy", 20, 300],
  ])("gravity=%s finds the detail at (%i, %i): the 150 x 120 window holds all of it", async (gravity, left, top) => {
    const { out, pixels } = await rendered(
      await flatWithDetail(left, top),
      `crop:width=150:height=120:gravity=${gravity}`,
    );
    expect([out.width, out.height]).toEqual([150, 120]);
    expect(detailPixels(pixels)).toBe(3600);
  });

  it("with x given, only the vertical axis is searched, within the given columns", async () => {
    const original = await flatWithDetail(30, 300);
    for (const gravity of ["attention", "entropy"]) {
      const { out, pixels } = await rendered(original, `crop:width=150:height=120:x=0:gravity=${gravity}`);
      expect([out.width, out.height]).toEqual([150, 120]);
      expect(detailPixels(pixels)).toBe(3600);
    }
  });

  it("the output is an exact region of the original at native resolution", async () => {
    const original = await flatWithDetail(400, 250);
    const { pixels } = await rendered(original, "crop:width=150:height=120:gravity=entropy");
    const source = await decodePixels(original);
    // Find where the detail's top-left landed; the window is the source shifted by that much.
    let at = -1;
    for (let i = 0; i < pixels.data.length && at < 0; i += 3) if (pixels.data[i] !== 128) at = i / 3;
    const [dx, dy] = [400 - (at % 150), 250 - Math.floor(at / 150)];
    const expected = await decodePixels(
      sharp(source.data, { raw: { width: 600, height: 400, channels: 3 } }).extract({
        left: dx,
        top: dy,
        width: 150,
        height: 120,
      }),
    );
    expect(pixels.data.equals(expected.data)).toBe(true);
  });

  it("a window as large as the image on both axes is the whole image (nothing to search)", async () => {
    const original = await flatWithDetail(520, 320);
    const { out } = await rendered(original, "crop:width=600:height=900:gravity=attention");
    expect([out.width, out.height]).toEqual([600, 400]);
  });
});

describe("the focal point follows the image through earlier steps", () => {
  let rgb: Buffer; // 600 x 200: red | green | blue, 200 px each
  beforeAll(async () => {
    rgb = await stripes([RED, GREEN, BLUE], 200, 200);
  });

  it("thumbnail after crop: the point is mapped into the cropped region", async () => {
    // Focal point at x 240 (green). After crop x=200 (green | blue, 400 wide) it is at 40 of 400:
    // the thumbnail's 200 px square slides to the left edge, all green. (Taken unmapped, 0.4 of
    // the crop would be x 160: a window 60..260 with blue in it.)
    const { out, pixels } = await rendered(rgb, "crop:width=400:height=200:x=200/thumbnail:size=100", {
      x: 0.4,
      y: 0.5,
    });
    expect([out.width, out.height]).toEqual([100, 100]);
    expectSolid(pixels, GREEN, SEAM);
  });

  it("a point the crop cut away is dropped: the thumbnail is the centre one", async () => {
    const cropped = "crop:width=400:height=200:x=0/thumbnail:size=100";
    const away = await rendered(rgb, cropped, { x: 0.9, y: 0.5 });
    const none = await rendered(rgb, cropped);
    expect(away.pixels.data.equals(none.pixels.data)).toBe(true);
  });

  it("colour steps and resize keep it; thumbnail then centres on it", async () => {
    const { pixels } = await rendered(rgb, "grayscale/resize:width=300/thumbnail:size=50", { x: 0.95, y: 0.5 });
    // Grey of blue (the right stripe), not of red or green.
    const blueGrey = (
      await decodePixels(
        await sharp({ create: { width: 1, height: 1, channels: 3, background: "#0000ff" } })
          .grayscale()
          .png()
          .toBuffer(),
      )
    ).data[0]!;
    for (const [x, y] of [
      [5, 5],
      [45, 45],
    ] as const) {
      expect(Math.abs(px(pixels, x, y)[0]! - blueGrey)).toBeLessThanOrEqual(3);
    }
  });

  it("fit maps it into the padded canvas: crop gravity=focal after fit is that exact region of the fit output", async () => {
    // fit 600 x 200 into 300 x 300: the content is 300 x 100 at top 100. The point (0.9, 0.1) is
    // at (270, 110) of the canvas: the 50 x 50 window is (245, 85), padding included.
    const fitted = await rendered(rgb, "fit:width=300:height=300:background=000000");
    const { out, pixels } = await rendered(
      rgb,
      "fit:width=300:height=300:background=000000/crop:width=50:height=50:gravity=focal",
      { x: 0.9, y: 0.1 },
    );
    expect([out.width, out.height]).toEqual([50, 50]);
    const expected = await decodePixels(
      sharp(fitted.pixels.data, { raw: { width: 300, height: 300, channels: fitted.pixels.channels } }).extract({
        left: 245,
        top: 85,
        width: 50,
        height: 50,
      }),
    );
    expect(pixels.data.equals(expected.data)).toBe(true);
    expect(px(pixels, 25, 0)).toEqual([0, 0, 0]); // padding above the content
    expect(px(pixels, 25, 49)).toEqual(BLUE);
  });
});

describe("mapFocalPoint of each geometric step", () => {
  const size = (width: number, height: number): Size => ({ width, height });
  // Called as the runner calls them: through the Transformation interface.
  const fitStep: Transformation<"fit"> = fit;
  const thumbnailStep: Transformation<"thumbnail"> = thumbnail;
  const ctx = { limits: defaultMediaLimits };

  it("crop maps through its region and drops a point outside it", () => {
    const params = resolveParams("crop", { width: 100, height: 50, x: 100, y: 50 });
    expect(cropRegion(params, 400, 200)).toEqual({ left: 100, top: 50, width: 100, height: 50 });
    expect(crop.mapFocalPoint({ x: 0.375, y: 0.375 }, size(400, 200), size(100, 50), params, ctx)).toEqual({
      x: 0.5,
      y: 0.5,
    });
    expect(crop.mapFocalPoint({ x: 0.1, y: 0.375 }, size(400, 200), size(100, 50), params, ctx)).toBeUndefined();
    // From the parameters alone: gravity=focal centres on the point, the spec's gravities ignore it.
    const focal = resolveParams("crop", { width: 100, height: 100, gravity: "focal" });
    expect(crop.mapFocalPoint({ x: 0.875, y: 0.25 }, size(400, 200), size(100, 100), focal, ctx)).toEqual({
      x: 0.5,
      y: 0.5,
    });
    const north = resolveParams("crop", { width: 100, height: 100, gravity: "north" });
    expect(crop.mapFocalPoint({ x: 0.5, y: 0.25 }, size(400, 200), size(100, 100), north, ctx)).toEqual({
      x: 0.5,
      y: 0.5,
    });
    // A region the step chose from the pixels (smartcrop) wins over the parameters.
    const kept = { ...ctx, keptRegion: { left: 0, top: 0, width: 100, height: 50 } };
    expect(crop.mapFocalPoint({ x: 0.125, y: 0.125 }, size(400, 200), size(100, 50), params, kept)).toEqual({
      x: 0.5,
      y: 0.5,
    });
  });

  it("resize keeps fractions for inside/fill/one side, maps cover through its window and contain into its padding", () => {
    const point = { x: 0.75, y: 0.5 };
    const r = (p: Parameters<typeof resolveParams<"resize">>[1]) => resolveParams("resize", p);
    // 400x200 into a 100x100 box with the given fit.
    const square = (p: { x: number; y: number }, fit: "cover" | "contain") =>
      resize.mapFocalPoint(p, size(400, 200), size(100, 100), r({ width: 100, height: 100, fit }), ctx);
    expect(resize.mapFocalPoint(point, size(400, 200), size(200, 100), r({ width: 200 }), ctx)).toEqual(point);
    expect(
      resize.mapFocalPoint(point, size(400, 200), size(100, 100), r({ width: 100, height: 100, fit: "fill" }), ctx),
    ).toEqual(point);
    // cover 400x200 -> 100x100: scale 0.5, the centre 200 x 200 kept: x 300 is at 200 of it
    expect(
      resize.mapFocalPoint(point, size(400, 200), size(100, 100), r({ width: 100, height: 100, fit: "cover" }), ctx),
    ).toEqual({ x: 1, y: 0.5 });
    expect(square({ x: 0.1, y: 0.5 }, "cover")).toBeUndefined();
    // contain 400x200 -> 100x100: content 100 x 50 at top 25
    expect(
      resize.mapFocalPoint(point, size(400, 200), size(100, 100), r({ width: 100, height: 100, fit: "contain" }), ctx),
    ).toEqual({ x: 0.75, y: 0.5 });
    expect(square({ x: 0.75, y: 0 }, "contain")).toEqual({ x: 0.75, y: 0.25 });
  });

  it("fit maps into the padded canvas, scaling up as well as down", () => {
    const params = resolveParams("fit", { width: 300, height: 300 });
    expect(fitStep.mapFocalPoint!({ x: 0.5, y: 0 }, size(60, 20), size(300, 300), params, ctx)).toEqual({
      x: 0.5,
      y: 1 / 3,
    });
  });

  it("thumbnail maps through the square it centred on the point", () => {
    const params = resolveParams("thumbnail", { size: 100 });
    expect(thumbnailStep.mapFocalPoint!({ x: 0.5, y: 0.5 }, size(400, 200), size(100, 100), params, ctx)).toEqual({
      x: 0.5,
      y: 0.5,
    });
    // slid to the right edge: x 390 of the square 200..400 is at 0.95
    expect(thumbnailStep.mapFocalPoint!({ x: 0.975, y: 0.5 }, size(400, 200), size(100, 100), params, ctx)).toEqual({
      x: 0.95,
      y: 0.5,
    });
  });
});
