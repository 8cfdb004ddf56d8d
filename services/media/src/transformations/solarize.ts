import { transformationSpecs } from "@media-platform/contracts";
import type { SolarizeParams } from "../pixels/kernels";
import { runPixelKernel } from "../pixels/step";
import { defineTransformation } from "./transformation";

/** Inverts R, G and B values above the threshold (ImageMagick -solarize); alpha untouched. */
export const solarize = defineTransformation({
  name: "solarize",
  params: transformationSpecs.solarize.params,
  apply: (image, params, ctx) =>
    runPixelKernel<SolarizeParams>(image, ctx, "solarize", { threshold: params.threshold }),
});
