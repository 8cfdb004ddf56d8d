import { runPixelKernel } from "../pixels/step";
import { sameSize, type Transformation } from "./transformation";

/** GIMP-style colour balance on one tonal range, luminosity preserved. */
export const colorBalance = {
  input: "raw",
  outputSize: sameSize,
  async apply(image, { cyan, magenta, yellow, target }, ctx) {
    if (cyan === 0 && magenta === 0 && yellow === 0) return image;
    return runPixelKernel(image, ctx, "color-balance", { cyan, magenta, yellow, target });
  },
} satisfies Transformation<"color-balance">;
