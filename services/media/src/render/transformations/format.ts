import { sameSize, type Transformation } from "./transformation";

/**
 * Extension step: the output format, chosen in the URL (the spec's rule, output = stored format,
 * holds for every URL without this step). Changes only the encoder settings, never the pixels.
 */
export const format = {
  input: "encoded",
  outputSize: sameSize,
  async apply(image, params, ctx) {
    ctx.output.format = params.type;
    if (params.quality !== undefined) ctx.output.quality = params.quality;
    return image;
  },
} satisfies Transformation<"format">;
