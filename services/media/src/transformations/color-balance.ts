import { transformationSpecs } from "@media-platform/contracts";
import type { ColorBalanceParams } from "../pixels/kernels";
import { runPixelKernel } from "../pixels/step";
import { defineTransformation } from "./transformation";

/** GIMP-style colour balance on one tonal range, luminosity preserved; an absent axis is 0. */
export const colorBalance = defineTransformation({
  name: "color-balance",
  params: transformationSpecs["color-balance"].params,
  async apply(image, params, ctx) {
    const cyan = params.cyan ?? 0;
    const magenta = params.magenta ?? 0;
    const yellow = params.yellow ?? 0;
    if (cyan === 0 && magenta === 0 && yellow === 0) return image;
    return runPixelKernel<ColorBalanceParams>(image, ctx, "color-balance", {
      cyan,
      magenta,
      yellow,
      target: params.target,
    });
  },
});
