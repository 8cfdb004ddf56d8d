import type { RasterFormat, TransformationName } from "@media-platform/contracts";

/**
 * What one pixel costs, in CPU nanoseconds, measured on this stack by bench/calibrate-cost.ts
 * (`pnpm bench:calibrate-cost --write` regenerates the table below; do not edit it by hand).
 * A step counts the larger of its input and output pixels; an encoder counts its output pixels.
 */
// calibrated:begin
export const STEP_NS_PER_PIXEL: Readonly<Record<TransformationName, number>> = {
  crop: 0.5,
  "color-balance": 76,
  clahe: 232,
  grayscale: 0.5,
  fit: 28,
  saturation: 76,
  "add-noise": 330,
  brightness: 109,
  wave: 46,
  channelManipulation: 0.5,
  sharpen: 110,
  avatar: 230,
  thumbnail: 0.5,
  exposure: 19,
  solarize: 3.9,
  threshold: 12,
  resize: 0.5,
  format: 0.5,
  frame: 0.5,
};

export const ENCODER_NS_PER_PIXEL: Readonly<Record<Exclude<RasterFormat, "avif">, number>> = {
  jpeg: 19,
  png: 67,
  webp: 116,
  gif: 1819,
  tiff: 53,
};

/** AVIF by encoder effort 0-9. */
export const AVIF_NS_PER_PIXEL: readonly number[] = [124, 364, 676, 1237, 5929, 7626, 13806, 19078, 21762, 47484];
// calibrated:end

/** sharp's AVIF effort when none is configured. */
export const SHARP_DEFAULT_AVIF_EFFORT = 4;

/** CPU nanoseconds per output pixel of an encoder (AVIF at the given effort). */
export function encoderNsPerPixel(format: RasterFormat, avifEffort = SHARP_DEFAULT_AVIF_EFFORT): number {
  if (format === "avif") return AVIF_NS_PER_PIXEL[Math.min(9, Math.max(0, Math.round(avifEffort)))]!;
  return ENCODER_NS_PER_PIXEL[format];
}
