import type { RawImage } from "./kernel";
import { assertRawImage, type PixelKernel } from "./kernel";
import { mapColourChannels } from "./solarize";
import { SRGB_TO_LINEAR, linearToSrgb } from "./srgb";

export interface ExposureParams {
  /** Stops (EV): linear-light values are multiplied by 2^value, then clipped. */
  value: number;
}

/** The 256-entry table of one exposure shift: sRGB decode, x 2^EV, clip, encode. */
export function exposureTable(ev: number): Uint8Array {
  const gain = Math.pow(2, ev);
  const lut = new Uint8Array(256);
  for (let v = 0; v < 256; v++) {
    const linear = Math.min(1, SRGB_TO_LINEAR[v]! * gain);
    lut[v] = Math.round(linearToSrgb(linear) * 255);
  }
  return lut;
}

export const exposure: PixelKernel<ExposureParams> = (image: RawImage, { value }) => {
  assertRawImage(image);
  if (value === 0) return image;
  return mapColourChannels(image, exposureTable(value));
};
