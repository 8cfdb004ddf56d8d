import { transformationSpecs } from "@media-platform/contracts";
import { assertOutputPixels, defineTransformation } from "./transformation";

export const thumbnail = defineTransformation({
  name: "thumbnail",
  params: transformationSpecs.thumbnail.params,
  async apply(image, params, ctx) {
    assertOutputPixels("thumbnail", params.size, params.size, ctx.limits);
    ctx.output.quality = params.quality;
    // A plain cover resize on the pipeline as given: as the first step that pipeline is still
    // the encoded original, so libvips shrinks JPEG/WebP on load exactly as raw sharp would.
    return image.resize(params.size, params.size, { fit: "cover", position: "centre" });
  },
});
