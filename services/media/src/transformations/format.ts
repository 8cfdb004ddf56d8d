import { transformationSpecs } from "@media-platform/contracts";
import { defineTransformation } from "./transformation";

/**
 * Extension step: the output format, chosen in the URL (the spec's rule, output = stored format,
 * holds for every URL without this step). Changes only the encoder settings, never the pixels.
 */
export const format = defineTransformation({
  name: "format",
  params: transformationSpecs.format.params,
  async apply(image, params, ctx) {
    ctx.output.format = params.type;
    if (params.quality !== undefined) ctx.output.quality = params.quality;
    return image;
  },
});
