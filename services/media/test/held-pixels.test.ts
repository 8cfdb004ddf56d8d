import { defaultMediaLimits, parseMediaPath, type OriginalHeader } from "@media-platform/contracts";
import { heldPixels, jpegShrinkOnLoad, type DecodeFacts } from "../src/render/pipeline/held-pixels";
import { planRender, type RenderPlan } from "../src/render/pipeline/plan";
import { pipelineRender } from "./support/media-server";

const ID = "00000000-0000-4000-8000-000000000000";
const TWELVE_MP = { width: 4000, height: 3000 };
const JPEG: DecodeFacts = { shrinksOnLoad: "jpeg", srgb: true };

/** The pixels the gate charges for `path`'s steps on an original of `size`. */
const held = (path: string, size = TWELVE_MP, facts: DecodeFacts = JPEG) =>
  planRender(parseMediaPath(`/${path}/${ID}.jpg`).steps, size, defaultMediaLimits, { format: "jpeg", decode: facts })
    .heldPixels;

describe("pixels a render holds (the in-flight gate's charge, MEDIA_MAX_INFLIGHT_PIXELS)", () => {
  it("chooses sharp's JPEG shrink-on-load factor: 8, 4 or 2, halved at libjpeg's rounding case", () => {
    expect([1.9, 2, 2.5, 3.9, 4, 4.5, 5, 7.9, 8, 8.5, 9, 11.7].map(jpegShrinkOnLoad)).toEqual([
      1, 1, 1, 2, 2, 2, 4, 4, 4, 4, 8, 8,
    ]);
  });

  it("charges a 256 px thumbnail of a 12 MP JPEG its 1/8 decode, not the original's 12 M pixels", () => {
    // 4000 x 3000 -> 500 x 375 decoded (shrink 8); the 256 x 256 result streams into the encoder.
    expect(held("thumbnail:size=256")).toBe(500 * 375);
    expect(held("thumbnail:size=256")).toBe(187_500);
    // A full-size resize decodes whole.
    expect(held("resize:width=4000")).toBe(12_000_000);
    expect(held("grayscale")).toBe(12_000_000);
    // Half size: a reduction of exactly 2 decodes whole (libjpeg's rounding).
    expect(held("resize:width=2000")).toBe(12_000_000);
    // A padded fit reduces by the larger side: 5, so 1/4 on load (1000 x 750).
    expect(held("fit:width=800:height=800")).toBe(750_000);
    // A chain materialises the first step's output for the next: 1000 x 750 decoded, 512 x 512 kept.
    expect(held("thumbnail:size=512/grayscale")).toBe(750_000 + 512 * 512);
    // quality=auto keeps the result for its trial encodes.
    expect(held("thumbnail:size=256:quality=auto")).toBe(187_500 + 65_536);
    // A crop reads the decode at full scale.
    expect(held("crop:width=800:height=600")).toBe(12_000_000);
  });

  it("decodes whole what does not shrink on load: PNG, a focal-point thumbnail, a padded fit of non-sRGB pixels", () => {
    expect(held("thumbnail:size=256", TWELVE_MP, { srgb: true })).toBe(12_000_000);
    expect(held("thumbnail:size=256", TWELVE_MP, { ...JPEG, focalPoint: true })).toBe(12_000_000);
    expect(held("fit:width=800:height=800", TWELVE_MP, { shrinksOnLoad: "jpeg", srgb: false })).toBe(12_000_000);
    // WebP scales on load by any factor: 4000/11.72 = 341.3 -> 342 x 256.
    expect(held("thumbnail:size=256", TWELVE_MP, { shrinksOnLoad: "webp", srgb: true })).toBe(342 * 256);
    // A pixel kernel's output is raw pixels, held with its input.
    expect(held("solarize")).toBe(24_000_000);
  });

  it("counts every frame of an animation", () => {
    const plan = planRender(
      parseMediaPath(`/solarize/${ID}.gif`).steps,
      { width: 100, height: 100 },
      defaultMediaLimits,
      {
        format: "gif",
        frames: 10,
      },
    );
    expect(plan.heldPixels).toBe(10 * 20_000);
    expect(heldPixels(plan.steps, { width: 100, height: 100 }, {}, 10)).toBe(200_000);
  });

  it("is what the pipeline asks the gate for, from the stored header before any byte is decoded", async () => {
    const header: OriginalHeader = {
      width: 4000,
      height: 3000,
      orientedWidth: 4000,
      orientedHeight: 3000,
      pages: 1,
      hasAlpha: false,
      channels: 3,
      space: "srgb",
      depth: "uchar",
    };
    const asked = async (path: string, focalPoint?: { x: number; y: number }) => {
      let plan: RenderPlan | undefined;
      const refused = new Error("admission refused (test)");
      await expect(
        pipelineRender()(
          {
            // Never read: the plan comes from the header, and admission refuses before decoding.
            original: Buffer.alloc(0),
            header,
            contentType: "image/jpeg",
            steps: parseMediaPath(`/${path}/${ID}.jpg`).steps,
            cacheKey: path,
            focalPoint,
          },
          {
            signal: new AbortController().signal,
            deadline: Date.now() + 10_000,
            admit: async (p) => {
              plan = p;
              throw refused;
            },
          },
        ),
      ).rejects.toBe(refused);
      return plan!;
    };
    const thumbnail = await asked("thumbnail:size=256");
    expect([thumbnail.heldPixels, thumbnail.workPixels]).toEqual([187_500, 12_000_000]);
    expect((await asked("thumbnail:size=256", { x: 0.2, y: 0.3 })).heldPixels).toBe(12_000_000);
    expect((await asked("grayscale")).heldPixels).toBe(12_000_000);
  });
});
