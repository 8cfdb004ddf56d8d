import { transformationSpecs } from "@media-platform/contracts";
import type { ClaheParams } from "../pixels/kernels";
import { runPixelKernel } from "../pixels/step";
import { defineTransformation } from "./transformation";

/**
 * Tiled CLAHE as OpenCV's createCLAHE, on the lightness of Lab (colour conversion inside the
 * kernel, in the worker). tileSize px maps onto OpenCV's grid as ceil(side / tileSize) tiles.
 * Not sharp.clahe: libvips's is a per-pixel sliding window, far slower on large images.
 */
export const clahe = defineTransformation({
  name: "clahe",
  params: transformationSpecs.clahe.params,
  apply: (image, params, ctx) =>
    runPixelKernel<ClaheParams>(image, ctx, "clahe", { clipLimit: params.clipLimit, tileSize: params.tileSize }),
});
