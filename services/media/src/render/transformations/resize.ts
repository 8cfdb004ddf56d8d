import type sharp from "sharp";
import { parseColor, type ResolvedParams } from "@media-platform/contracts";
import { fromRaw, toRaw } from "../raw";
import { paddingColour } from "./fit";
import { coverRegion, pointInPadded, pointInRegion } from "./focal-point";
import type { Transformation } from "./transformation";

type ResizeParams = ResolvedParams<"resize">;

/**
 * The box in device pixels: CSS sizes times dpr, the factor lowered so that no side exceeds the
 * maxDimension cap (both sides by the same factor, so the box keeps its aspect ratio).
 */
export function resizeBox(
  params: Pick<ResizeParams, "width" | "height" | "dpr">,
  maxDimension: number,
): { width: number | undefined; height: number | undefined } {
  let factor = params.dpr;
  if (params.width !== undefined) factor = Math.min(factor, maxDimension / params.width);
  if (params.height !== undefined) factor = Math.min(factor, maxDimension / params.height);
  const scale = (v: number | undefined) => (v === undefined ? undefined : Math.max(1, Math.round(v * factor)));
  return { width: scale(params.width), height: scale(params.height) };
}

/** The size resize produces from a `sourceWidth` x `sourceHeight` image (sharp's rules, computed up front). */
export function resizeOutputSize(
  sourceWidth: number,
  sourceHeight: number,
  box: { width: number | undefined; height: number | undefined },
  fit: ResizeParams["fit"],
  enlarge: boolean,
): { width: number; height: number } {
  const scaled = (s: number) => ({
    width: Math.max(1, Math.round(sourceWidth * s)),
    height: Math.max(1, Math.round(sourceHeight * s)),
  });
  const limit = (s: number) => (enlarge ? s : Math.min(s, 1));
  const { width: w, height: h } = box;
  if (w === undefined || h === undefined) return scaled(limit(w !== undefined ? w / sourceWidth : h! / sourceHeight));
  switch (fit) {
    case "inside":
      return scaled(limit(Math.min(w / sourceWidth, h / sourceHeight)));
    case "contain":
      return { width: w, height: h };
    case "cover":
    case "fill":
      return enlarge ? { width: w, height: h } : { width: Math.min(w, sourceWidth), height: Math.min(h, sourceHeight) };
  }
}

/**
 * Extension step for responsive images (srcset widths). With one side given the aspect ratio is
 * always kept, whatever `fit` says (there is no box to cover, pad or stretch to).
 */
export const resize = {
  // The pipeline as given: as the first step that is the encoded original, so libvips shrinks
  // JPEG/WebP on load (the common srcset case). Only contain's padding needs sRGB (below).
  input: "encoded",
  outputSize: (input, params, limits) =>
    resizeOutputSize(
      input.width,
      input.height,
      resizeBox(params, limits.maxDimension),
      params.fit,
      params.enlarge === "true",
    ),
  mapFocalPoint(point, input, output, params, ctx) {
    const box = resizeBox(params, ctx.limits.maxDimension);
    // One side, inside and fill scale the whole image: fractions stay.
    if (box.width === undefined || box.height === undefined) return point;
    switch (params.fit) {
      case "inside":
      case "fill":
        return point;
      case "cover":
        return pointInRegion(point, input, coverRegion(input, output));
      case "contain": {
        const fits = Math.min(box.width / input.width, box.height / input.height);
        return pointInPadded(point, input, output, params.enlarge === "true" ? fits : Math.min(fits, 1));
      }
    }
  },
  async apply(image, params, ctx) {
    const box = resizeBox(params, ctx.limits.maxDimension);
    const enlarge = params.enlarge === "true";
    const oneSide = box.width === undefined || box.height === undefined;
    const options: sharp.ResizeOptions = {
      fit: oneSide ? "inside" : params.fit,
      position: "centre",
      withoutEnlargement: !enlarge,
    };
    let input = image;
    if (!oneSide && params.fit === "contain") {
      // Validated by the URL parser, so a colour is always there.
      options.background = paddingColour(parseColor(params.background)!, ctx.output.format);
      // As fit's "srgb" input: sharp greys the padding of a grey (1-2 band) first-step input.
      // Later steps start from 8-bit sRGB pixels already.
      if (ctx.stepIndex === 0) {
        const meta = await image.metadata();
        if (meta.channels < 3 || meta.space !== "srgb") input = fromRaw(await toRaw(image));
      }
    }
    return input.resize(box.width ?? null, box.height ?? null, options);
  },
} satisfies Transformation<"resize">;
