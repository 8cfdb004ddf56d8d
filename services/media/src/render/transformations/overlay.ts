import sharp from "sharp";
import type { ResolvedParams, TransformationStep } from "@media-platform/contracts";
import { drawLayer, fadeLayer, layerBox, type Layer } from "./layer";
import { sameSize, type Transformation } from "./transformation";
import { TransformationInputError } from "../errors";
import { withTimeout } from "../deadline";

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
/** An overlay's original, its step's parameters, and the size and pixel limit of the image under it. */
interface LayerRequest {
  original: Buffer;
  params: ResolvedParams<"overlay">;
  width: number;
  height: number;
  limitInputPixels: number;
  deadline: number | undefined;
}

async function overlayLayer({
  original,
  params,
  width,
  height,
  limitInputPixels,
  deadline,
}: LayerRequest): Promise<Layer> {
  const source = withTimeout(sharp(original, { autoOrient: true, failOn: "error", limitInputPixels }), deadline);
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
 * Layers made in this process, by overlay original (the same Buffer for every frame of one render)
 * and size: an animation decodes and scales its overlay once, not once per frame. Weakly held, so
 * a layer lives as long as the render that read the original.
 */
const layers = new WeakMap<Buffer, Map<string, Promise<Layer>>>();

function layerFor(request: LayerRequest): Promise<Layer> {
  const { original, params, width, height } = request;
  let byShape = layers.get(original);
  if (!byShape) layers.set(original, (byShape = new Map()));
  const shape = `${width}x${height}:${params.scale}:${params.opacity}`;
  let layer = byShape.get(shape);
  if (!layer) {
    layer = overlayLayer(request).then((l) => fadeLayer(l, params.opacity));
    // A failed decode is not kept: the error goes to this render only.
    layer.catch(() => byShape.delete(shape));
    byShape.set(shape, layer);
  }
  return layer;
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
    const layer = await layerFor({
      original,
      params,
      width: image.width,
      height: image.height,
      limitInputPixels: ctx.limitInputPixels ?? 100_000_000,
      deadline: ctx.deadline,
    });
    return drawLayer(image, layer, layerBox(image, layer, params.gravity, params.x, params.y), params.tile === "true");
  },
} satisfies Transformation<"overlay">;
