import type { RawImage } from "./kernel";
import { assertRawImage, type PixelKernel } from "./kernel";

export interface SolarizeParams {
  /** 0..255: channel values strictly above it are inverted (ImageMagick -solarize semantics). */
  threshold: number;
}

/** Inverts each colour channel value above the threshold; alpha is untouched. */
export const solarize: PixelKernel<SolarizeParams> = (image: RawImage, { threshold }) => {
  assertRawImage(image);
  const lut = new Uint8Array(256);
  for (let v = 0; v < 256; v++) lut[v] = v > threshold ? 255 - v : v;
  return mapColourChannels(image, lut);
};

/** Applies a 256-entry table to R, G and B in place; alpha stays as it is. */
export function mapColourChannels(image: RawImage, lut: Uint8Array): RawImage {
  const { data, channels } = image;
  for (let i = 0; i < data.length; i += channels) {
    data[i] = lut[data[i]!]!;
    data[i + 1] = lut[data[i + 1]!]!;
    data[i + 2] = lut[data[i + 2]!]!;
  }
  return image;
}
