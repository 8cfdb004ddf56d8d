import type { TransformationName, TransformationStep } from "@media-platform/contracts";
import type { Size } from "../types";
import type { RenderPlan } from "./plan";

/**
 * An SVG original has no pixels of its own: librsvg draws it at a density (sharp's `density`, in
 * dpi). At 72 dpi one user unit is one pixel: the size the asset reports. A render draws it at
 * the density its first sizing step needs, so a 2000 px thumbnail of a 100 px logo is drawn at
 * 2000 px, not enlarged from 100 px, and a 64 px one of a 5000 px poster is not drawn at 5000 px.
 * (sharp itself draws at a resize's scale when that resize is the first operation on the SVG;
 * this also covers chains, where the steps before it or the step itself work on decoded pixels.)
 *
 * That changes the size the steps see, so it applies only where the result is the same at any
 * density but for sharpness: the steps before the sizing step work pixel by pixel, and the
 * sizing step sizes by its parameters alone. Everything else (crop coordinates, kernel radii,
 * wave amplitudes in pixels) is in the asset's reported pixels and gets the 72 dpi drawing.
 * The drawing is capped at limitInputPixels, like any decoded original.
 */

/** The density at which the drawing has the asset's reported size. */
export const SVG_BASE_DENSITY = 72;

/** Steps whose result does not depend on the drawing's density, only on their parameters. */
const SIZING: ReadonlySet<TransformationName> = new Set(["resize", "fit", "thumbnail", "avatar"]);
/** Steps that work pixel by pixel (and format/frame, which touch no pixel). */
const PER_PIXEL: ReadonlySet<TransformationName> = new Set([
  "grayscale",
  "saturation",
  "brightness",
  "exposure",
  "channelManipulation",
  "solarize",
  "threshold",
  "color-balance",
  "format",
  "frame",
  "page",
]);

/** sharp's `density` range. */
const MIN_DENSITY = 1;
const MAX_DENSITY = 100_000;

/** The index of the step the drawing is sized for, or -1 when it stays at 72 dpi (see above). */
function sizingStep(steps: readonly TransformationStep[]): number {
  const index = steps.findIndex((step) => !PER_PIXEL.has(step.name));
  return index >= 0 && SIZING.has(steps[index]!.name) ? index : -1;
}

/**
 * The scale (density / 72) at which to draw an SVG of `intrinsic` size for the sizing step
 * `output`: its output over its input, capped at limitInputPixels and to sharp's density range,
 * at least 1 px a side.
 */
function drawingScale(output: Size, intrinsic: Size, limitInputPixels: number): number {
  const wanted = Math.max(output.width / intrinsic.width, output.height / intrinsic.height);
  const cap = Math.sqrt(limitInputPixels / (intrinsic.width * intrinsic.height));
  const floor = Math.max(MIN_DENSITY / SVG_BASE_DENSITY, 1 / Math.min(intrinsic.width, intrinsic.height));
  return Math.max(floor, Math.min(wanted, cap, MAX_DENSITY / SVG_BASE_DENSITY));
}

/** sharp's size of the drawing at `scale`: librsvg rounds to the nearest pixel. */
export const drawnSize = (intrinsic: Size, scale: number): Size => ({
  width: Math.max(1, Math.round(intrinsic.width * scale)),
  height: Math.max(1, Math.round(intrinsic.height * scale)),
});

/** True when both plans produce the same size at every step from `from` on. */
const sameOutputs = (a: RenderPlan, b: RenderPlan, from: number): boolean =>
  a.steps.length === b.steps.length &&
  a.steps
    .slice(from)
    .every(
      (step, i) =>
        step.output.width === b.steps[from + i]!.output.width &&
        step.output.height === b.steps[from + i]!.output.height,
    );

export interface SvgDrawing {
  /** The plan at the drawing's size. */
  plan: RenderPlan;
  /** The drawing's size: what the first step gets. */
  size: Size;
  /** sharp's `density` for the drawing. */
  density: number;
}

/**
 * How to draw an SVG for `plan` (made at its intrinsic size): planned again at the scaled size,
 * and kept only when the sizing step and every step after it then give the same size (else, or
 * when that plan is over a limit, the 72 dpi drawing and the plan as made).
 */
export function svgDrawing(
  steps: readonly TransformationStep[],
  plan: RenderPlan,
  intrinsic: Size,
  limitInputPixels: number,
  planAt: (size: Size) => RenderPlan,
): SvgDrawing {
  const asReported = { plan, size: intrinsic, density: SVG_BASE_DENSITY };
  const index = sizingStep(steps);
  if (index < 0) return asReported;
  const scale = drawingScale(plan.steps[index]!.output, intrinsic, limitInputPixels);
  const size = drawnSize(intrinsic, scale);
  if (size.width === intrinsic.width && size.height === intrinsic.height) return asReported;
  if (size.width * size.height > limitInputPixels) return asReported;
  let scaled: RenderPlan;
  try {
    scaled = planAt(size);
  } catch {
    return asReported;
  }
  return sameOutputs(plan, scaled, index) ? { plan: scaled, size, density: SVG_BASE_DENSITY * scale } : asReported;
}

/**
 * The elements of an SVG's text, counted as start tags (`<` then a letter; a comment or a closing
 * tag is not one): what the cost model prices its drawing by. A byte scan, no parse: the stored
 * SVG is sanitised markup of at most a few megabytes.
 */
export function svgElementCount(bytes: Uint8Array): number {
  let elements = 0;
  for (let i = bytes.indexOf(0x3c); i >= 0 && i < bytes.length - 1; i = bytes.indexOf(0x3c, i + 1)) {
    const next = bytes[i + 1]! | 0x20;
    if (next >= 0x61 && next <= 0x7a) elements++;
  }
  return elements;
}
