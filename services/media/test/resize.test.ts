import sharp from "sharp";
import { defaultMediaLimits, MediaUrlError, parseMediaPath } from "@media-platform/contracts";
import { planRender } from "../src/render/pipeline/plan";
import { resizeBox, resizeOutputSize } from "../src/render/transformations/resize";
import { closeHarness, decodePixels, fixturePath, renderFixture } from "./support/render-harness";

afterAll(closeHarness);

// rocket.jpg is 640 x 427 (JPEG), coffee.png 600 x 400 (PNG), camera.png 512 x 512 grey.
const ID = "00000000-0000-4000-8000-000000000000";

async function size(data: Buffer): Promise<[number, number, string]> {
  const m = await sharp(data).metadata();
  return [m.width, m.height, m.format];
}

describe("resize: dimensions", () => {
  it.each([
    ["resize:width=320", 320, 214],
    ["resize:height=100", 150, 100],
    ["resize:width=320:height=100", 150, 100], // inside (default)
    ["resize:width=320:height=100:fit=cover", 320, 100],
    ["resize:width=320:height=100:fit=contain", 320, 100],
    ["resize:width=320:height=100:fit=fill", 320, 100],
    ["resize:width=160:dpr=2", 320, 214],
    ["resize:width=100:dpr=1.5", 150, 100],
    // never enlarges by default: the 640 px original keeps its size
    ["resize:width=1000", 640, 427],
    ["resize:width=500:dpr=2", 640, 427],
    ["resize:width=1000:enlarge=true", 1000, 667],
    ["resize:width=1000:height=300:fit=cover", 640, 300],
    ["resize:width=1000:height=300:fit=cover:enlarge=true", 1000, 300],
    // contain pads to the box; the image inside is not enlarged
    ["resize:width=1000:height=300:fit=contain", 1000, 300],
    // one side given: the aspect ratio is kept whatever fit says
    ["resize:width=320:fit=fill", 320, 214],
  ])("%s on a 640 x 427 JPEG gives %i x %i, still JPEG", async (steps, width, height) => {
    const out = await renderFixture("rocket.jpg", steps);
    expect(await size(out.data)).toEqual([width, height, "jpeg"]);
    expect(out.contentType).toBe("image/jpeg");
    expect([out.width, out.height]).toEqual([width, height]);
  });

  it("computes the same size up front as sharp produces (the pixel cap check relies on it)", async () => {
    const src = { w: 640, h: 427 };
    for (const fit of ["inside", "cover", "contain", "fill"] as const)
      for (const enlarge of [false, true])
        for (const box of [
          { width: 1000, height: 300 },
          { width: 320, height: 100 },
          { width: 1000, height: undefined },
          { width: undefined, height: 50 },
        ]) {
          const expected = resizeOutputSize(src.w, src.h, box, fit, enlarge);
          const oneSide = box.width === undefined || box.height === undefined;
          const { info } = await sharp(fixturePath("rocket.jpg"))
            .resize(box.width ?? null, box.height ?? null, {
              fit: oneSide ? "inside" : fit,
              withoutEnlargement: !enlarge,
            })
            .toBuffer({ resolveWithObject: true });
          expect([fit, enlarge, box, expected]).toEqual([
            fit,
            enlarge,
            box,
            { width: info.width, height: info.height },
          ]);
        }
  });

  it("dpr is capped by maxDimension, keeping the box's aspect ratio", () => {
    expect(resizeBox({ width: 3000, height: 1000, dpr: 4 }, 8192)).toEqual({ width: 8192, height: 2731 });
    expect(resizeBox({ width: 400, height: undefined, dpr: 3 }, 8192)).toEqual({ width: 1200, height: undefined });
    expect(resizeBox({ width: 400, height: 300, dpr: 2 }, 500)).toEqual({ width: 500, height: 375 });
  });

  it("dpr capped in a render: width=100:dpr=4 with maxDimension 200 gives 200 px", async () => {
    const limits = { ...defaultMediaLimits, maxDimension: 200 };
    const out = await renderFixture("rocket.jpg", "resize:width=100:dpr=4", { limits });
    expect(await size(out.data)).toEqual([200, 133, "jpeg"]);
  });
});

describe("resize: pixels", () => {
  it("contain pads with the background colour (red bands above and below a wide image)", async () => {
    const out = await renderFixture("rocket.jpg", "resize:width=300:height=300:fit=contain:background=ff0000");
    const img = await decodePixels(out.data);
    expect([img.width, img.height]).toEqual([300, 300]);
    const top = Array.from(img.data.subarray(0, 3));
    const mid = (150 * 300 + 150) * img.channels;
    expect(top[0]).toBeGreaterThan(240);
    expect(top[1]).toBeLessThan(15);
    expect(top[2]).toBeLessThan(15);
    // the centre is photo, not padding
    expect(Array.from(img.data.subarray(mid, mid + 3))).not.toEqual(top);
  });

  it("a grey original padded with a colour keeps the colour (sRGB, not greyed)", async () => {
    const out = await renderFixture(
      "camera.png",
      "resize:width=600:height=512:fit=contain:enlarge=true:background=ff0000",
    );
    const img = await decodePixels(out.data);
    expect([img.width, img.height]).toEqual([600, 512]);
    expect(Array.from(img.data.subarray(0, 3))).toEqual([255, 0, 0]);
  });

  it("a PNG stays PNG; the mean colour matches a plain sharp resize", async () => {
    const out = await renderFixture("coffee.png", "resize:width=150");
    expect(await size(out.data)).toEqual([150, 100, "png"]);
    const ours = await decodePixels(out.data);
    const ref = await decodePixels(sharp(fixturePath("coffee.png")).resize(150, 100));
    let diff = 0;
    for (let i = 0; i < ours.data.length; i++) diff += Math.abs(ours.data[i]! - ref.data[i]!);
    expect(diff / ours.data.length).toBeLessThan(1);
  });

  it("chains: resize then crop sees the resized size", async () => {
    const out = await renderFixture("rocket.jpg", "resize:width=320/crop:width=100:height=100:gravity=south");
    expect(await size(out.data)).toEqual([100, 100, "jpeg"]);
  });
});

describe("resize: URL validation", () => {
  const issues = (path: string) => {
    try {
      parseMediaPath(path);
    } catch (err) {
      if (err instanceof MediaUrlError) return err.issues;
      throw err;
    }
    return [];
  };

  it.each([
    ["resize", "resize", /width, height or both/],
    ["resize:width=0", "resize.width", /below the allowed range/],
    ["resize:width=8193", "resize.width", /above the allowed range/],
    ["resize:width=100:dpr=5", "resize.dpr", /from 1 to 4/],
    ["resize:width=100:dpr=0.5", "resize.dpr", /below/],
    ["resize:width=100:fit=scale-down", "resize.fit", /inside, cover, contain, fill/],
    ["resize:width=100:enlarge=yes", "resize.enlarge", /false, true/],
    ["resize:width=100:background=nope!", "resize.background", /not a colour/],
  ])("%s is a 400 naming %s", (steps, path, message) => {
    const found = issues(`/${steps}/${ID}.jpg`);
    expect(found).toHaveLength(1);
    expect(found[0]!.path).toBe(path);
    expect(found[0]!.message).toMatch(message);
  });

  it("refuses an output above MEDIA_MAX_OUTPUT_PIXELS before doing the work", async () => {
    const limits = { ...defaultMediaLimits, maxOutputPixels: 10_000 };
    await expect(renderFixture("rocket.jpg", "resize:width=200", { limits })).rejects.toMatchObject({
      name: "TransformationInputError",
      path: "resize",
    });
  });

  it("is planned from the header like every step: output sizes up front, resize and format in the work budget", () => {
    const steps = (p: string) => parseMediaPath(`/${p}/${ID}.jpg`).steps;
    const plan = planRender(
      steps("resize:width=320/format:type=webp/resize:width=1000:height=300:fit=contain:enlarge=true"),
      { width: 640, height: 427 },
      defaultMediaLimits,
    );
    expect(plan.steps.map((s) => [s.name, s.output.width, s.output.height])).toEqual([
      ["resize", 320, 214],
      ["format", 320, 214],
      ["resize", 1000, 300],
    ]);
    expect(plan.workPixels).toBe(640 * 427 + 320 * 214 + 1000 * 300);
    // dpr multiplies the box: 2000 x 2000 at dpr 4 is 8000 x 8000 = 64 M pixels, within the output
    // cap given here but above a 50 M work budget
    const limits = { ...defaultMediaLimits, maxOutputPixels: 100_000_000, maxWorkPixels: 50_000_000 };
    expect(() =>
      planRender(
        steps("resize:width=2000:height=2000:fit=fill:enlarge=true:dpr=4"),
        { width: 640, height: 427 },
        limits,
      ),
    ).toThrow(expect.objectContaining({ name: "TransformationInputError", path: "path" }));
  });
});
