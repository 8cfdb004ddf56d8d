import { transformationSpecs } from "@media-platform/contracts";
import { fromRaw, toRaw } from "../pipeline/raw";
import { defineTransformation } from "./transformation";

export const channelManipulation = defineTransformation({
  name: "channelManipulation",
  params: transformationSpecs.channelManipulation.params,
  async apply(image, params, ctx) {
    const red = params.red ?? 1;
    const green = params.green ?? 1;
    const blue = params.blue ?? 1;
    if (red === 1 && green === 1 && blue === 1) return image;
    // The multipliers mean R, G and B, so the pixels must be 8-bit sRGB: a grey original
    // has one band, a CMYK JPEG four. Later steps start from raw sRGB already; a first step
    // on an original in another layout is decoded to it. With three factors on a four-band
    // image sharp leaves the alpha band alone; values are rounded and clipped to 0..255.
    let rgb = image;
    if (ctx.stepIndex === 0) {
      const meta = await image.metadata();
      if (meta.space !== "srgb" || meta.depth !== "uchar" || meta.channels < 3) rgb = fromRaw(await toRaw(image));
    }
    return rgb.linear([red, green, blue], [0, 0, 0]);
  },
});
