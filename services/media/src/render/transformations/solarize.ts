import { runPixelKernel } from "../pixels/step";
import { sameSize, type Transformation } from "./transformation";

/** Inverts R, G and B values above the threshold (ImageMagick -solarize); alpha untouched. */
export const solarize = {
  input: "raw",
  outputSize: sameSize,
  apply: (image, params, ctx) => runPixelKernel(image, ctx, "solarize", { threshold: params.threshold }),
} satisfies Transformation<"solarize">;
