import sharp from "sharp";
import type { ResolvedParams, TransformationStep } from "@media-platform/contracts";
import { drawLayer, fadeLayer, layerBox, type Layer } from "./layer";
import { sameSize, TransformationInputError, type Transformation } from "./transformation";

/** The asset ids a request's overlay steps draw (each once, in order): read before the render. */
export function overlayAssets(steps: readonly TransformationStep[]): string[] {
  const ids = steps.flatMap((step) => (step.name === "overlay" ? [step.params.asset!] : []));
  return [...new Set(ids)];
}

/**
 * The overlay asset ids a cache key (a media request-target already validated) names, lower-cased:
 * for entries built from a key alone (a Redis-tier hit on the hot path).
 */
export function overlayAssetsOfKey(key: string): string[] {
  const ids = [...key.matchAll(/(?:^|\/)overlay:(?:[^/]*:)?asset=([0-9a-f-]{36})/gi)].map((m) => m[1]!.toLowerCase());
  return [...new Set(ids)];
}

/**
 * The overlay's original as an RGBA layer for a `width` x `height` image: scaled to `scale` of
 * the image width, or at its own size shrunk to fit inside the image (aspect ratio kept).
 */
async function overlayLayer(
  original: Buffer,
  params: ResolvedParams<"overlay">,
  width: number,
  height: number,
  limitInputPixels: number,
): Promise<Layer> {
  const source = sharp(original, { autoOrient: true, failOn: "error", limitInputPixels });
  const resized =
    params.scale !== undefined
      ? source.resize({ width: Math.max(1, Math.round(width * params.scale)) })
      : source.resize(width, height, { fit: "inside", withoutEnlargement: true });
  const { data, info } = await resized
    .toColourspace("srgb")
    .ensureAlpha()
    .raw({ depth: "uchar" })
    .toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

/**
 * Extension step: another asset of the workspace drawn over the image. Delivery reads the
 * overlay's original (same workspace only) before the render and hands it in ctx.overlays.
 */
export const overlay = {
  input: "raw",
  outputSize: sameSize,
  async apply(image, params, ctx) {
    const original = ctx.overlays?.get(params.asset);
    if (!original) throw new TransformationInputError("overlay.asset", "the overlay asset was not read");
    const layer = fadeLayer(
      await overlayLayer(original, params, image.width, image.height, ctx.limitInputPixels ?? 100_000_000),
      params.opacity,
    );
    return drawLayer(image, layer, layerBox(image, layer, params.gravity, params.x, params.y), params.tile === "true");
  },
} satisfies Transformation<"overlay">;
