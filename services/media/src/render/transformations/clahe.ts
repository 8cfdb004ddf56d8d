import { runPixelKernel } from "../pixels/step";
import { sameSize, type Transformation } from "./transformation";

/**
 * Tiled CLAHE as OpenCV's createCLAHE, on the lightness of Lab (colour conversion inside the
 * kernel, in the worker). tileSize px maps onto OpenCV's grid as ceil(side / tileSize) tiles.
 * Not sharp.clahe: libvips's is a per-pixel sliding window, far slower on large images.
 */
export const clahe = {
  input: "raw",
  outputSize: sameSize,
  apply: (image, params, ctx) =>
    runPixelKernel(image, ctx, "clahe", { clipLimit: params.clipLimit, tileSize: params.tileSize }),
} satisfies Transformation<"clahe">;
