import type sharp from "sharp";
import { sameSize, type Transformation } from "./transformation";

/**
 * Maps the URL's intensity v (> 0) onto libvips' sharpen (an unsharp mask on L* whose
 * gain is m1 in flat areas and m2 on edges, with a Gaussian of the given sigma):
 *
 *   sigma = 0.5 + 0.25 v   (radius grows slowly: v 1 -> 0.75, v 5 -> 1.75, v 20 -> 5.5)
 *   m1    = 0.5 v          (flat areas get half the edge gain, so noise grows slower)
 *   m2    = v              (v 2 equals sharp's own default m1 1 / m2 2)
 *   y2    = 10 + 2 v, y3 = 20 + 4 v (clamps on how far a pixel may brighten / darken,
 *                          sharp's defaults at v 0, relaxed as v grows)
 *
 * Every term is increasing in v, so a larger value never sharpens less; as v -> 0 the
 * gains go to 0, continuous with v = 0, which returns the image untouched.
 */
export function sharpenOptions(v: number): sharp.SharpenOptions {
  // libvips accepts sigma up to 10; a deployment raising maxSharpen past 38 keeps that radius.
  return { sigma: Math.min(10, 0.5 + 0.25 * v), m1: 0.5 * v, m2: v, x1: 2, y2: 10 + 2 * v, y3: 20 + 4 * v };
}

export const sharpen = {
  input: "encoded",
  outputSize: sameSize,
  apply: async (image, params) => (params.value === 0 ? image : image.sharpen(sharpenOptions(params.value))),
} satisfies Transformation<"sharpen">;
