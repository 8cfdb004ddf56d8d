import type { Size } from "../types";

/** What this file reads of a planned step (plan.ts's PlannedStep, which imports this file). */
interface PlannedStep {
  name: string;
  params: unknown;
  transformation: { input?: string };
  input: Size;
  output: Size;
}

/**
 * What the in-flight gate (MEDIA_MAX_INFLIGHT_PIXELS) charges a render: the pixels it holds in
 * memory at once, not the pixels it reads. A JPEG or WebP original whose first step resizes it
 * is decoded at a reduced scale (libvips' shrink-on-load), so a 256 px thumbnail of a 12 MP JPEG
 * holds a 500 x 375 decode, not 12 million pixels.
 */

/** How the original decodes, as far as its memory goes (render.ts knows it before admission). */
export interface DecodeFacts {
  /** The original's format when its decoder shrinks on load (JPEG by 2, 4 or 8; WebP by any scale); else decoded whole. */
  shrinksOnLoad?: "jpeg" | "webp";
  /** 8-bit sRGB with 3-4 bands: fit and a padded resize run on the decoder's pipeline (else on decoded pixels). */
  srgb?: boolean;
  /** A focal point moves a thumbnail's window, which may be cut before the resize: decoded whole. */
  focalPoint?: boolean;
}

/**
 * sharp's JPEG shrink-on-load factor for a reduction by `shrink` (sharp 0.35 pipeline.cc with
 * fastShrinkOnLoad, its default): the largest of 8, 4, 2 not above it, halved when the
 * reduction's whole part equals it (libjpeg's rounding).
 */
export function jpegShrinkOnLoad(shrink: number): 1 | 2 | 4 | 8 {
  const factor = shrink >= 8 ? 8 : shrink >= 4 ? 4 : shrink >= 2 ? 2 : 1;
  return factor > 1 && Math.trunc(shrink) === factor ? ((factor / 2) as 2 | 4) : factor;
}

/**
 * By how much the first step reduces the original while it decodes (1: not at all). Only the
 * resampling steps that run on the decoder's own pipeline do: thumbnail (without a focal point),
 * resize, and fit; a padded one (fit, resize with fit=contain) fits the whole image in the box, so
 * the larger of the two reductions, and needs sRGB input to stay on that pipeline.
 */
function loadReduction(step: PlannedStep, facts: DecodeFacts): number {
  const { input, output } = step;
  const across = input.width / output.width;
  const down = input.height / output.height;
  switch (step.name) {
    case "thumbnail":
      return facts.focalPoint ? 1 : Math.min(across, down);
    case "fit":
      return facts.srgb ? Math.max(across, down) : 1;
    case "resize": {
      const padded = (step.params as { fit?: string }).fit === "contain";
      if (!padded) return Math.min(across, down);
      return facts.srgb ? Math.max(across, down) : 1;
    }
    default:
      return 1;
  }
}

/** The size the decoder produces for the render's first step (the original's, unless it shrinks on load). */
export function decodedSize(first: PlannedStep | undefined, original: Size, facts: DecodeFacts): Size {
  const reduction = first && facts.shrinksOnLoad ? loadReduction(first, facts) : 1;
  if (reduction <= 1) return original;
  const factor = facts.shrinksOnLoad === "jpeg" ? jpegShrinkOnLoad(reduction) : reduction;
  return { width: Math.ceil(original.width / factor), height: Math.ceil(original.height / factor) };
}

/**
 * Whether the render materialises its last step's output: a pixel kernel returns raw pixels, and
 * quality=auto and max-bytes encode the materialised result several times (encode-search.ts).
 * Otherwise the last step's pixels stream into the encoder, line by line.
 */
function materialisesResult(steps: readonly PlannedStep[]): boolean {
  const last = steps.at(-1);
  if (last?.transformation.input === "raw") return true;
  return steps.some(
    (s) =>
      s.name === "max-bytes" ||
      ((s.name === "thumbnail" || s.name === "format") && (s.params as { quality?: unknown }).quality === "auto"),
  );
}

/**
 * Pixels a render holds at its peak: each step holds its input and the output it materialises
 * (every step's but the last, whose pixels stream into the encoder unless materialisesResult),
 * the first step's input being the decode at the decoder's scale; times the frames of an
 * animation. An upper bound: libvips streams much of a decode rather than holding all of it.
 */
export function heldPixels(steps: readonly PlannedStep[], original: Size, facts: DecodeFacts = {}, frames = 1): number {
  const decoded = decodedSize(steps[0], original, facts);
  const keepsLast = materialisesResult(steps);
  let input = decoded.width * decoded.height;
  let peak = input;
  for (const [i, step] of steps.entries()) {
    const output = step.output.width * step.output.height;
    const held = i < steps.length - 1 || keepsLast ? output : 0;
    peak = Math.max(peak, input + held);
    input = output;
  }
  return peak * Math.max(1, frames);
}
