import { largestSquareAround, pointInRegion } from "./focal-point";
import { cropToSquare } from "./square-crop";
import type { Transformation } from "./transformation";

export const thumbnail = {
  // A plain cover resize on the pipeline as given: as the first step that pipeline is still
  // the encoded original, so libvips shrinks JPEG/WebP on load exactly as raw sharp would.
  input: "encoded",
  outputSize: (_input, params) => ({ width: params.size, height: params.size }),
  usesFocalPoint: () => true,
  // The cover square is the largest square around the point (which it was centred on).
  mapFocalPoint: (point, input) => pointInRegion(point, input, largestSquareAround(point, input)),
  async apply(image, params, ctx) {
    ctx.output.quality = params.quality;
    if (!ctx.focalPoint) return image.resize(params.size, params.size, { fit: "cover", position: "centre" });
    // The cover square centred on the focal point, slid inside the image; resized whole first
    // when that is a large reduction, so shrink-on-load still applies.
    const square = largestSquareAround(ctx.focalPoint, { width: ctx.width, height: ctx.height });
    return cropToSquare(image, square, params.size, ctx.width, ctx.height);
  },
} satisfies Transformation<"thumbnail">;
