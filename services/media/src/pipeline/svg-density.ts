import type { TransformationName, TransformationStep } from "@media-platform/contracts";
import type { Size } from "../transformations/transformation";
import type { RenderPlan } from "./plan";

/**
 * An SVG original has no pixels of its own: librsvg draws it at a density (sharp's `density`, in
 * dpi). At 72 dpi one user unit is one pixel: the size the asset reports. A render draws it at
 * the density its first sizing step needs, so a 2000 px thumbnail of a 100 px logo is drawn at
 * 2000 px, not enlarged from 100 px, and a 64 px one of a 5000 px poster is not drawn at 5000 px.
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
]);

/** sharp's `density` range. */
const MIN_DENSITY = 1;
const MAX_DENSITY = 100_000;

/**
 * The scale (density / 72) at which to draw an SVG of `intrinsic` size for `plan`, made at that
 * size: the sizing step's output over its input, capped at limitInputPixels and to sharp's
 * density range, at least 1 px a side; 1 when no step qualifies (see above).
 */
export function svgDrawingScale(
  steps: readonly TransformationStep[],
  plan: RenderPlan,
  intrinsic: Size,
  limitInputPixels: number,
): number {
  const index = steps.findIndex((step) => !PER_PIXEL.has(step.name));
  if (index < 0 || !SIZING.has(steps[index]!.name)) return 1;
  const { output } = plan.steps[index]!;
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

/** True when both plans produce the same size at every step. */
const sameOutputs = (a: RenderPlan, b: RenderPlan): boolean =>
  a.steps.length === b.steps.length &&
  a.steps.every(
    (step, i) => step.output.width === b.steps[i]!.output.width && step.output.height === b.steps[i]!.output.height,
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
 * and kept only when every step then gives the same size (else, or when that plan is over a
 * limit, the 72 dpi drawing and the plan as made).
 */
export function svgDrawing(
  steps: readonly TransformationStep[],
  plan: RenderPlan,
  intrinsic: Size,
  limitInputPixels: number,
  planAt: (size: Size) => RenderPlan,
): SvgDrawing {
  const asReported = { plan, size: intrinsic, density: SVG_BASE_DENSITY };
  const scale = svgDrawingScale(steps, plan, intrinsic, limitInputPixels);
  const size = drawnSize(intrinsic, scale);
  if (size.width === intrinsic.width && size.height === intrinsic.height) return asReported;
  if (size.width * size.height > limitInputPixels) return asReported;
  let scaled: RenderPlan;
  try {
    scaled = planAt(size);
  } catch {
    return asReported;
  }
  return sameOutputs(plan, scaled) ? { plan: scaled, size, density: SVG_BASE_DENSITY * scale } : asReported;
}
