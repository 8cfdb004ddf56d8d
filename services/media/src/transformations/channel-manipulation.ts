import { transformationSpecs } from "@media-platform/contracts";
import { fromRaw, toRaw } from "../pipeline/raw";
import { defineTransformation } from "./transformation";

export const channelManipulation = defineTransformation({
  name: "channelManipulation",
  params: transformationSpecs.channelManipulation.params,
  async apply(image, params) {
    const red = params.red ?? 1;
    const green = params.green ?? 1;
    const blue = params.blue ?? 1;
    if (red === 1 && green === 1 && blue === 1) return image;
    // The multipliers mean R, G and B, so the pixels must be 8-bit sRGB first: a grey
    // original has one band and a CMYK JPEG four. With three factors on a four-band image
    // sharp leaves the alpha band alone; values are rounded and clipped to 0..255.
    const raw = await toRaw(image);
    return fromRaw(raw).linear([red, green, blue], [0, 0, 0]);
  },
});
