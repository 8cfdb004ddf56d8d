import type { FocalPoint } from "@media-platform/contracts";
import type { Region, Size } from "../types";

/**
 * Geometry of focal points: windows centred on one, and where one lands after a step. Points
 * are fractions of an image (x from the left, y from the top); regions are in its pixels.
 */

/** Start of a `length`-long span centred on `centre` on an axis of `extent` pixels, slid inside it. */
function spanAround(centre: number, length: number, extent: number): number {
  return Math.min(Math.max(0, Math.round(centre - length / 2)), Math.max(0, extent - length));
}

/** A `width` x `height` window of an image of `size`, centred on `point`, slid inside the image. */
export function windowAround(point: FocalPoint, width: number, height: number, size: Size): Region {
  return {
    left: spanAround(point.x * size.width, width, size.width),
    top: spanAround(point.y * size.height, height, size.height),
    width,
    height,
  };
}

/** The largest square of an image of `size` centred on `point`, slid inside the image. */
export function largestSquareAround(point: FocalPoint, size: Size): Region {
  const side = Math.min(size.width, size.height);
  return windowAround(point, side, side, size);
}

/** `point` of an image of `size`, in fractions of `region` of that image; undefined when outside it. */
export function pointInRegion(point: FocalPoint, size: Size, region: Region): FocalPoint | undefined {
  const x = point.x * size.width - region.left;
  const y = point.y * size.height - region.top;
  if (x < 0 || y < 0 || x > region.width || y > region.height) return undefined;
  return { x: x / region.width, y: y / region.height };
}

/**
 * The region of `input` that a centred cover resize to `output` keeps (sharp's fit=cover,
 * position=centre): scaled until both sides cover the output, the overflow cut equally.
 */
export function coverRegion(input: Size, output: Size): Region {
  const scale = Math.max(output.width / input.width, output.height / input.height);
  const width = Math.min(input.width, output.width / scale);
  const height = Math.min(input.height, output.height / scale);
  return { left: (input.width - width) / 2, top: (input.height - height) / 2, width, height };
}

/** Where `point` lands when `input` is scaled by `scale` and padded to `output`, centred (fit, contain). */
export function pointInPadded(point: FocalPoint, input: Size, output: Size, scale: number): FocalPoint {
  const width = input.width * scale;
  const height = input.height * scale;
  return {
    x: ((output.width - width) / 2 + point.x * width) / output.width,
    y: ((output.height - height) / 2 + point.y * height) / output.height,
  };
}
