import type { Transformation } from "./transformation";

export const thumbnail = {
  // A plain cover resize on the pipeline as given: as the first step that pipeline is still
  // the encoded original, so libvips shrinks JPEG/WebP on load exactly as raw sharp would.
  input: "encoded",
  outputSize: (_input, params) => ({ width: params.size, height: params.size }),
  async apply(image, params, ctx) {
    ctx.output.quality = params.quality;
    return image.resize(params.size, params.size, { fit: "cover", position: "centre" });
  },
} satisfies Transformation<"thumbnail">;
