import type { FocalPoint, ResolvedParams } from "@media-platform/contracts";
import { pointInRegion, windowAround } from "./focal-point";
import { smartcropStart } from "./smartcrop";
import type { Transformation } from "./transformation";
import { TransformationInputError } from "../errors";
import type { Region, Size } from "../types";

type CropParams = ResolvedParams<"crop">;
type Gravity = CropParams["gravity"];

/** Where the window starts on the axes x/y leave open, when the focal point or smartcrop places it. */
export interface Placement {
  left?: number;
  top?: number;
}

/** Start of a `length`-long span on an axis of `extent` pixels, placed by gravity. */
function placeOnAxis(extent: number, length: number, anchor: "start" | "centre" | "end"): number {
  if (anchor === "start") return 0;
  if (anchor === "end") return extent - length;
  return Math.floor((extent - length) / 2);
}

// The extension gravities (focal, attention, entropy) centre where they place nothing.
const horizontalAnchor = (g: Gravity) => (g === "west" ? "start" : g === "east" ? "end" : "centre");
const verticalAnchor = (g: Gravity) => (g === "north" ? "start" : g === "south" ? "end" : "centre");

/**
 * The region a crop extracts from a `width` x `height` image: at (x, y) when given, else
 * placed by `placement` (focal point, smartcrop) or gravity (each axis on its own, so `x` alone
 * keeps the vertical gravity), then clipped to the image. An empty intersection is a 400
 * naming the offending parameter. The placement never changes the size, so the plan's
 * outputSize needs none.
 */
export function cropRegion(params: CropParams, width: number, height: number, placement: Placement = {}): Region {
  const left = params.x ?? placement.left ?? placeOnAxis(width, params.width, horizontalAnchor(params.gravity));
  const top = params.y ?? placement.top ?? placeOnAxis(height, params.height, verticalAnchor(params.gravity));
  const x0 = Math.max(0, left);
  const y0 = Math.max(0, top);
  const x1 = Math.min(width, left + params.width);
  const y1 = Math.min(height, top + params.height);
  if (x1 <= x0) {
    throw new TransformationInputError(
      params.x !== undefined ? "crop.x" : "crop",
      `the crop region (x ${left} to ${left + params.width}) lies outside the image, which is ${width} px wide`,
    );
  }
  if (y1 <= y0) {
    throw new TransformationInputError(
      params.y !== undefined ? "crop.y" : "crop",
      `the crop region (y ${top} to ${top + params.height}) lies outside the image, which is ${height} px high`,
    );
  }
  return { left: x0, top: y0, width: x1 - x0, height: y1 - y0 };
}

/** gravity=focal: the window centred on the focal point, slid inside the image; none without one (centre). */
function focalPlacement(params: CropParams, size: Size, point: FocalPoint | undefined): Placement {
  if (!point) return {};
  const { left, top } = windowAround(point, params.width, params.height, size);
  return { left, top };
}

export const crop = {
  input: "encoded",
  outputSize: (input, params) => {
    const { width, height } = cropRegion(params, input.width, input.height);
    return { width, height };
  },
  usesFocalPoint: (params) => params.gravity === "focal" && (params.x === undefined || params.y === undefined),
  // attention/entropy place the window from the pixels: per frame it would jump, so an
  // animation gives its first frame.
  posterOnly: (params) =>
    (params.gravity === "attention" || params.gravity === "entropy") &&
    (params.x === undefined || params.y === undefined),
  // apply records the region it kept; from the parameters alone only the pixel-free placements.
  mapFocalPoint: (point, input, _output, params, ctx) =>
    pointInRegion(
      point,
      input,
      ctx.keptRegion ??
        cropRegion(
          params,
          input.width,
          input.height,
          params.gravity === "focal" ? focalPlacement(params, input, point) : {},
        ),
    ),
  // With autoOrient on the input, sharp orients before a pre-resize extract, so the region
  // is in the same (oriented) coordinates as ctx.width/height.
  async apply(image, params, ctx) {
    const size = { width: ctx.width, height: ctx.height };
    // Validates first (400 before any pixel work) and fixes the axes x/y give.
    let region = cropRegion(params, ctx.width, ctx.height);
    if (params.gravity === "focal") {
      region = cropRegion(params, ctx.width, ctx.height, focalPlacement(params, size, ctx.focalPoint));
    } else if (params.gravity === "attention" || params.gravity === "entropy") {
      const find = {
        left: params.x === undefined && region.width < ctx.width,
        top: params.y === undefined && region.height < ctx.height,
      };
      if (find.left || find.top) {
        const placement = await smartcropStart(image, params.gravity, size, region, find);
        region = cropRegion(params, ctx.width, ctx.height, placement);
      }
    }
    ctx.keptRegion = region;
    return image.extract(region);
  },
} satisfies Transformation<"crop">;
