import { transformationSpecs } from "@media-platform/contracts";
import { IMAGEMAGICK_BACKGROUND, waveHeight } from "../pixels/kernels/wave";
import type { WaveParams } from "../pixels/kernels";
import { runPixelKernel } from "../pixels/step";
import { TransformationInputError, defineTransformation, type StepContext } from "./transformation";

/** The canvas grows by 2 x amplitude: refuse outputs above the deployment's caps before any work. */
function checkWaveOutput(width: number, height: number, amplitude: number, limits: StepContext["limits"]): void {
  const outHeight = waveHeight(height, amplitude);
  if (outHeight > limits.maxDimension) {
    throw new TransformationInputError(
      "wave.amplitude",
      `the waved image would be ${outHeight} px high (${height} + 2 x ${amplitude}); at most ${limits.maxDimension} px (safety cap maxDimension)`,
    );
  }
  if (width * outHeight > limits.maxOutputPixels) {
    throw new TransformationInputError(
      "wave.amplitude",
      `the waved image would have ${width * outHeight} pixels (${width} x ${outHeight}); at most ${limits.maxOutputPixels} (safety cap maxOutputPixels)`,
    );
  }
}

/**
 * ImageMagick -wave amplitude x wavelength: each column shifted down by A + A sin(2 pi x / L),
 * bilinear sampling, ImageMagick's default background (opaque white) where the source has no pixel.
 */
export const wave = defineTransformation({
  name: "wave",
  params: transformationSpecs.wave.params,
  async apply(image, params, ctx) {
    checkWaveOutput(ctx.width, ctx.height, params.amplitude, ctx.limits);
    return runPixelKernel<WaveParams>(image, ctx, "wave", {
      amplitude: params.amplitude,
      wavelength: params.wavelength,
      background: IMAGEMAGICK_BACKGROUND,
    });
  },
});
