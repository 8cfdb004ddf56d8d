import { sameSize, type Transformation } from "./transformation";
import type { StepContext } from "../types";

export const channelManipulation = {
  // The multipliers mean R, G and B, so the pixels must be 8-bit sRGB: a grey original has one
  // band, a CMYK JPEG four. With three factors on a four-band image sharp leaves the alpha band
  // alone; values are rounded and clipped to 0..255.
  input: "srgb",
  outputSize: sameSize,
  async apply(image, { red, green, blue }, _ctx: StepContext) {
    if (red === 1 && green === 1 && blue === 1) return image;
    return image.linear([red, green, blue], [0, 0, 0]);
  },
} satisfies Transformation<"channelManipulation">;
