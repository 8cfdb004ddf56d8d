import type { ResolvedParams } from "@media-platform/contracts";
import { TransformationInputError, type Transformation } from "./transformation";

export interface Region {
  left: number;
  top: number;
  width: number;
  height: number;
}

type Gravity = ResolvedParams<"crop">["gravity"];

/** Start of a `length`-long span on an axis of `extent` pixels, placed by gravity. */
function placeOnAxis(extent: number, length: number, anchor: "start" | "centre" | "end"): number {
  if (anchor === "start") return 0;
  if (anchor === "end") return extent - length;
  return Math.floor((extent - length) / 2);
}

const horizontalAnchor = (g: Gravity) => (g === "west" ? "start" : g === "east" ? "end" : "centre");
const verticalAnchor = (g: Gravity) => (g === "north" ? "start" : g === "south" ? "end" : "centre");

/**
 * The region a crop extracts from a `width` x `height` image: at (x, y) when given, else
 * placed by gravity (each axis on its own, so `x` alone keeps the vertical gravity), then
 * clipped to the image. An empty intersection is a 400 naming the offending parameter.
 */
export function cropRegion(params: ResolvedParams<"crop">, width: number, height: number): Region {
  const left = params.x ?? placeOnAxis(width, params.width, horizontalAnchor(params.gravity));
  const top = params.y ?? placeOnAxis(height, params.height, verticalAnchor(params.gravity));
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

export const crop = {
  input: "encoded",
  outputSize: (input, params) => {
    const { width, height } = cropRegion(params, input.width, input.height);
    return { width, height };
  },
  // With autoOrient on the input, sharp orients before a pre-resize extract, so the region
  // is in the same (oriented) coordinates as ctx.width/height.
  apply: async (image, params, ctx) => image.extract(cropRegion(params, ctx.width, ctx.height)),
} satisfies Transformation<"crop">;
