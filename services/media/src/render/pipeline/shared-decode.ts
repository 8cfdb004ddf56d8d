import sharp from "sharp";
import type { OriginalHeader } from "@media-platform/contracts";
import type { StepContext } from "../types";
import { resize, resizeBox } from "../transformations/resize";
import type { DecodedImages } from "./decoded-images";
import type { RenderPlan } from "./plan";
import { fromRaw, toRaw } from "../raw";
import type { RawImage } from "../types";

/**
 * JPEG and WebP originals shrink on load: a rendition more than this many times smaller than the
 * shared decode decodes on its own (at its own scale), since resampling the shared pixels again
 * would take it further than 1.0 per channel from that independent render. JPEG's shrink-on-load
 * (DCT scaling) both saves most of the decode and differs most from a resampling; WebP's still
 * decodes the whole bitstream, and stays within 1.0 up to 3x (test/shared-decode.test.ts).
 */
export const MAX_SHARED_REDUCTION_ON_LOAD_SHRINK = { jpeg: 2, webp: 3 } as const;

/** Originals below this many pixels decode in a few milliseconds: each rendition decodes its own. */
export const SHARED_DECODE_MIN_PIXELS = 1_000_000;

/**
 * A shared decode is at least this large on its long side (when the original is): every srcset
 * width up to 2048 px then comes from the first decode, whatever order the widths arrive in.
 */
export const SHARED_DECODE_MIN_LONG_SIDE = 2048;

export interface SharedDecodeInput {
  decoded: DecodedImages | undefined;
  /** `<assetId>|<local generation>` (delivery); none = not shared. */
  key: string | undefined;
  plan: RenderPlan;
  header: OriginalHeader;
  /** The original is 8-bit sRGB with 3-4 bands: its decoded pixels are what toRaw gives. */
  srgb: boolean;
  /** A still (one frame, no `frame` step) whose first step runs on the original. */
  still: boolean;
  /** The original's format when it decodes at a reduced scale (JPEG, WebP). */
  shrinksOnLoad: keyof typeof MAX_SHARED_REDUCTION_ON_LOAD_SHRINK | undefined;
  /** A JPEG whose HDR gain map the independent render would keep: not shared. */
  gainMap: boolean;
  bytes: Buffer;
  sharpOptions: sharp.SharpOptions;
  ctx: StepContext;
}

/**
 * The first step of a render, when it is a `resize` of a large still sRGB original, computed from
 * a decode shared with the other renditions of that original (DecodedImages): the original is
 * decoded once at the largest scale needed (with libvips' shrink-on-load for JPEG and WebP), and
 * each rendition resizes those pixels to its planned size. Undefined when the render is not
 * eligible or the budget has no room: the caller runs the step on the original itself.
 *
 * Two resamplings instead of one: the result differs from an independent render by a mean
 * absolute difference below 1.0 per channel (test/shared-decode.test.ts, on the corpus).
 */
export async function sharedFirstStep(input: SharedDecodeInput): Promise<RawImage | undefined> {
  const { decoded, key, plan, header, ctx } = input;
  const first = plan.steps[0];
  if (!decoded || !key || !input.srgb || !input.still || input.gainMap || first?.name !== "resize") return undefined;
  const width = header.orientedWidth;
  const height = header.orientedHeight;
  if (width * height < SHARED_DECODE_MIN_PIXELS) return undefined;
  const out = first.output;
  // The scale covering the output on both sides (a cover crop or a fill needs the larger one).
  const needScale = Math.min(1, Math.max(out.width / width, out.height / height));
  const scale = Math.max(needScale, Math.min(1, SHARED_DECODE_MIN_LONG_SIDE / Math.max(width, height)));
  const size = (s: number) => ({
    width: Math.min(width, Math.max(1, Math.ceil(width * s - 1e-9))),
    height: Math.min(height, Math.max(1, Math.ceil(height * s - 1e-9))),
  });
  const target = size(scale);
  const shrink = input.shrinksOnLoad;
  if (shrink && target.width > out.width * MAX_SHARED_REDUCTION_ON_LOAD_SHRINK[shrink]) return undefined;
  const decode = () => {
    const image = sharp(input.bytes, input.sharpOptions);
    const scaled =
      target.width === width && target.height === height
        ? image
        : image.resize(target.width, target.height, { fit: "fill" });
    return toRaw(scaled);
  };
  return decoded.with(key, size(needScale), target, decode, async (image) => {
    const params = first.params as Parameters<typeof resize.apply>[1];
    const box = resizeBox(params, ctx.limits.maxDimension);
    const wholeImage =
      box.width === undefined || box.height === undefined || params.fit === "inside" || params.fit === "fill";
    if (wholeImage) {
      // The planned size exactly (computed from the original), so every size matches an independent render.
      if (image.width === out.width && image.height === out.height) return image;
      // By width, as the step does (a fill to both sides resamples each axis on its own: further
      // from the independent render); a size that rounds otherwise is set exactly.
      const scaled = await toRaw(fromRaw(image).resize(out.width));
      if (scaled.height === out.height) return scaled;
      return toRaw(fromRaw(image).resize(out.width, out.height, { fit: "fill" }));
    }
    // cover and contain: the step itself, on the decoded pixels (crop or padding as it does them).
    const stepCtx: StepContext = { ...ctx, width: image.width, height: image.height, hasAlpha: image.channels === 4 };
    const result = await toRaw((await resize.apply(fromRaw(image), params, stepCtx)) as sharp.Sharp);
    if (result.width === out.width && result.height === out.height) return result;
    return toRaw(fromRaw(result).resize(out.width, out.height, { fit: "fill" }));
  });
}
