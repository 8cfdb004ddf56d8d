import { IMAGEMAGICK_BACKGROUND, waveHeight } from "../pixels/kernels/wave";
import { runPixelKernel } from "../pixels/step";
import type { Transformation } from "./transformation";
import { TransformationInputError } from "../errors";

/**
 * ImageMagick -wave amplitude x wavelength: each column shifted down by A + A sin(2 pi x / L),
 * bilinear sampling, ImageMagick's default background (opaque white) where the source has no pixel.
 */
export const wave = {
  input: "raw",
  sizeParam: "amplitude",
  // The canvas grows by 2 x amplitude; its height is held to maxDimension like any URL size.
  outputSize(input, params, limits) {
    const outHeight = waveHeight(input.height, params.amplitude);
    if (outHeight > limits.maxDimension) {
      throw new TransformationInputError(
        "wave.amplitude",
        `the waved image would be ${outHeight} px high (${input.height} + 2 x ${params.amplitude}); at most ${limits.maxDimension} px (safety cap maxDimension)`,
      );
    }
    return { width: input.width, height: outHeight };
  },
  apply: (image, params, ctx) =>
    runPixelKernel(image, ctx, "wave", {
      amplitude: params.amplitude,
      wavelength: params.wavelength,
      background: IMAGEMAGICK_BACKGROUND,
    }),
} satisfies Transformation<"wave">;
