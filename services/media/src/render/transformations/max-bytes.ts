import { sameSize, type Transformation } from "./transformation";

/**
 * Extension step: a byte budget for the encoded result. Changes only the encoder settings; the
 * encode (pipeline/encode-search.ts) lowers the quality, then the size, until the result fits.
 */
export const maxBytes = {
  input: "encoded",
  outputSize: sameSize,
  async apply(image, params, ctx) {
    // Two budgets in one chain: the smaller holds.
    ctx.output.maxBytes = Math.min(ctx.output.maxBytes ?? Number.POSITIVE_INFINITY, params.value);
    return image;
  },
} satisfies Transformation<"max-bytes">;
