import type sharp from "sharp";
import type { LAYER_GRAVITIES } from "@media-platform/contracts";
import { fromRaw } from "../raw";
import type { RawImage } from "../types";
import type { Region, Size } from "../types";

export type LayerGravity = (typeof LAYER_GRAVITIES)[number];

/** An RGBA layer drawn over an image (overlay, text). */
export interface Layer {
  data: Buffer;
  width: number;
  height: number;
}

/**
 * Where a `layer`-sized box sits in `image`: placed by gravity (a corner or side touches that
 * edge, center is centred), then moved by the offsets. May lie partly or wholly outside.
 */
export function layerBox(image: Size, layer: Size, gravity: LayerGravity, x: number, y: number): Region {
  const horizontal = gravity.endsWith("west") ? 0 : gravity.endsWith("east") ? 1 : 0.5;
  const vertical = gravity.startsWith("north") ? 0 : gravity.startsWith("south") ? 1 : 0.5;
  return {
    left: Math.round((image.width - layer.width) * horizontal) + x,
    top: Math.round((image.height - layer.height) * vertical) + y,
    width: layer.width,
    height: layer.height,
  };
}

/** Multiplies a layer's alpha by `opacity` (0..1), in place. */
export function fadeLayer(layer: Layer, opacity: number): Layer {
  if (opacity >= 1) return layer;
  for (let i = 3; i < layer.data.length; i += 4) layer.data[i] = Math.round(layer.data[i]! * opacity);
  return layer;
}

/** The part of `layer` at `box` that lies inside an `image`-sized canvas, or undefined when none does. */
function visiblePart(layer: Layer, box: Region, image: Size): { layer: Layer; left: number; top: number } | undefined {
  const left = Math.max(0, box.left);
  const top = Math.max(0, box.top);
  const right = Math.min(image.width, box.left + box.width);
  const bottom = Math.min(image.height, box.top + box.height);
  if (right <= left || bottom <= top) return undefined;
  const width = right - left;
  const height = bottom - top;
  if (width === layer.width && height === layer.height) return { layer, left, top };
  const data = Buffer.allocUnsafe(width * height * 4);
  for (let row = 0; row < height; row++) {
    const from = ((top - box.top + row) * layer.width + (left - box.left)) * 4;
    layer.data.copy(data, row * width * 4, from, from + width * 4);
  }
  return { layer: { data, width, height }, left, top };
}

/**
 * `base` with `layer` drawn over it at `box` (clipped to the image), or repeated over the whole
 * image when `tile`. The result keeps the base's bands: an opaque base stays opaque.
 */
export function drawLayer(base: RawImage, layer: Layer, box: Region, tile = false): sharp.Sharp | RawImage {
  const image = { width: base.width, height: base.height };
  const part = tile ? visiblePart(layer, { ...box, left: 0, top: 0 }, image) : visiblePart(layer, box, image);
  if (!part) return base;
  const raw = { width: part.layer.width, height: part.layer.height, channels: 4 as const };
  const drawn = fromRaw(base).composite([
    tile
      ? { input: part.layer.data, raw, tile: true, gravity: "northwest" }
      : { input: part.layer.data, raw, left: part.left, top: part.top },
  ]);
  return base.channels === 4 ? drawn : drawn.removeAlpha();
}
