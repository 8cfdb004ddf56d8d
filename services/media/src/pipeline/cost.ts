import type { AssetFormat, TransformationName } from "@media-platform/contracts";

/**
 * What one pixel costs, in CPU nanoseconds, measured on this stack by bench/calibrate-cost.ts
 * (`pnpm bench:calibrate-cost --write` regenerates the table below; do not edit it by hand).
 * A step counts the larger of its input and output pixels; an encoder counts its output pixels.
 */
// calibrated:begin
export const STEP_NS_PER_PIXEL: Readonly<Record<TransformationName, number>> = {
  crop: 1,
  "color-balance": 1,
  clahe: 1,
  grayscale: 1,
  fit: 1,
  saturation: 1,
  "add-noise": 1,
  brightness: 1,
  wave: 1,
  channelManipulation: 1,
  sharpen: 1,
  avatar: 1,
  thumbnail: 1,
  exposure: 1,
  solarize: 1,
  threshold: 1,
  resize: 1,
  format: 1,
};

export const ENCODER_NS_PER_PIXEL: Readonly<Record<Exclude<AssetFormat, "avif">, number>> = {
  jpeg: 1,
  png: 1,
  webp: 1,
  gif: 1,
  tiff: 1,
};

/** AVIF by encoder effort 0-9. */
export const AVIF_NS_PER_PIXEL: readonly number[] = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1];
// calibrated:end

/** sharp's AVIF effort when none is configured. */
export const SHARP_DEFAULT_AVIF_EFFORT = 4;

/** CPU nanoseconds per output pixel of an encoder (AVIF at the given effort). */
export function encoderNsPerPixel(format: AssetFormat, avifEffort = SHARP_DEFAULT_AVIF_EFFORT): number {
  if (format === "avif") return AVIF_NS_PER_PIXEL[Math.min(9, Math.max(0, Math.round(avifEffort)))]!;
  return ENCODER_NS_PER_PIXEL[format];
}
