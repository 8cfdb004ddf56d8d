import sharp from "sharp";

/**
 * Decoded pixels between steps: always 8-bit sRGB, 3 channels (RGB) or 4 (RGBA),
 * row-major, no padding. Kernels in worker threads receive exactly this.
 */
export interface RawImage {
  data: Buffer;
  width: number;
  height: number;
  channels: 3 | 4;
}

/** Runs the pending sharp operations and returns 8-bit sRGB pixels. */
export async function toRaw(image: sharp.Sharp): Promise<RawImage> {
  const { data, info } = await image
    .toColourspace("srgb")
    .raw({ depth: "uchar" })
    .toBuffer({ resolveWithObject: true });
  if (info.channels === 3 || info.channels === 4) {
    return { data, width: info.width, height: info.height, channels: info.channels };
  }
  // Grey(+alpha) can still come out of some ops; widen so kernels see one layout.
  const widened = await sharp(data, { raw: { width: info.width, height: info.height, channels: info.channels } })
    .toColourspace("srgb")
    .raw({ depth: "uchar" })
    .toBuffer({ resolveWithObject: true });
  return {
    data: widened.data,
    width: widened.info.width,
    height: widened.info.height,
    channels: widened.info.channels as 3 | 4,
  };
}

/** Wraps raw pixels as a new sharp pipeline (operations after this run in call order). */
export function fromRaw(image: RawImage): sharp.Sharp {
  return sharp(image.data, { raw: { width: image.width, height: image.height, channels: image.channels } });
}
