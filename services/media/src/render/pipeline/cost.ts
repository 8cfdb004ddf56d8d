import type { RasterFormat, TransformationName } from "@media-platform/contracts";
import { AUTO_QUALITY_ENCODES, MAX_BYTES_ENCODES } from "./encode-search";

/**
 * What one pixel costs, in CPU nanoseconds, measured on this stack by bench/calibrate-cost.ts
 * (`pnpm bench:calibrate-cost --write` regenerates the table below; do not edit it by hand).
 * A step counts the larger of its input and output pixels; an encoder counts its output pixels.
 */
// calibrated:begin
export const STEP_NS_PER_PIXEL: Readonly<Record<TransformationName, number>> = {
  crop: 0.5,
  "color-balance": 76,
  clahe: 232,
  grayscale: 0.5,
  fit: 28,
  saturation: 76,
  "add-noise": 330,
  brightness: 109,
  wave: 46,
  channelManipulation: 0.5,
  sharpen: 110,
  avatar: 230,
  thumbnail: 0.5,
  exposure: 19,
  solarize: 3.9,
  threshold: 12,
  resize: 0.5,
  format: 0.5,
  frame: 0.5,
  page: 0.5,
  "max-bytes": 0.5,
  overlay: 14,
  text: 0.5,
  redact: 94,
};

export const ENCODER_NS_PER_PIXEL: Readonly<Record<Exclude<RasterFormat, "avif">, number>> = {
  jpeg: 19,
  png: 67,
  webp: 116,
  gif: 1819,
  tiff: 53,
};

/** AVIF by encoder effort 0-9. */
export const AVIF_NS_PER_PIXEL: readonly number[] = [124, 364, 676, 1237, 5929, 7626, 13806, 19078, 21762, 47484];
// calibrated:end

/**
 * Drawing a PDF page with pdf.js on a Skia canvas, per pixel drawn, for a page of text and line
 * art (bench/formats-miss.ts measures it; a page full of images or vector detail costs more, which
 * the render process's deadline bounds).
 */
export const PDF_DRAW_NS_PER_PIXEL = 150;

/** sharp's AVIF effort when none is configured. */
export const SHARP_DEFAULT_AVIF_EFFORT = 4;

/** CPU nanoseconds per output pixel of an encoder (AVIF at the given effort). */
export function encoderNsPerPixel(format: RasterFormat, avifEffort = SHARP_DEFAULT_AVIF_EFFORT): number {
  if (format === "avif") return AVIF_NS_PER_PIXEL[Math.min(9, Math.max(0, Math.round(avifEffort)))]!;
  return ENCODER_NS_PER_PIXEL[format];
}

/**
 * One SSIMULACRA2 score of quality=auto per output pixel, decoding the trial encode included
 * (measured by `pnpm bench auto-quality`, bench/results/latest.md).
 */
export const SSIMULACRA2_NS_PER_PIXEL = 1200;

/** The steps' encoder settings the cost model reads (the planned steps' resolved parameters). */
interface PlannedParams {
  name: TransformationName;
  params: unknown;
}

/**
 * The encoder's cost per output pixel with the searches of the request: quality=auto
 * (thumbnail, format) is AUTO_QUALITY_ENCODES encodes, each scored; max-bytes counts its worst
 * case, MAX_BYTES_ENCODES more encodes (the smaller sizes counted at full size).
 */
export function searchedEncoderNsPerPixel(
  steps: readonly PlannedParams[],
  format: RasterFormat,
  avifEffort?: number,
): number {
  const once = encoderNsPerPixel(format, avifEffort);
  const auto = steps.some(
    (s) => (s.name === "thumbnail" || s.name === "format") && (s.params as { quality?: unknown }).quality === "auto",
  );
  const budget = steps.some((s) => s.name === "max-bytes");
  const encodes = (auto ? AUTO_QUALITY_ENCODES : 1) + (budget ? MAX_BYTES_ENCODES : 0);
  return encodes * once + (auto ? AUTO_QUALITY_ENCODES * SSIMULACRA2_NS_PER_PIXEL : 0);
}

/**
 * Decoding an overlay's original and scaling it to its layer, per pixel of that original: the
 * overlay step prices its drawing per pixel of the base, but reads its own original whole
 * (measured with one libvips thread: a 12 MP JPEG shrunk on load 6.6 ns, a PNG 4.7 ns; rounded up).
 */
export const OVERLAY_DECODE_NS_PER_PIXEL = 8;

/**
 * librsvg drawing one SVG element, whatever the pixels it covers (measured: 70 µs per 50x50
 * semi-transparent rect, in documents of 5,000 and 20,000 of them). A filter or a large fill
 * costs more, which the render's deadline bounds.
 */
export const SVG_NS_PER_ELEMENT = 70_000;

/** What the cost model reads of an overlay's original: its pixels, and its elements for an SVG. */
export interface OverlayFacts {
  pixels: number;
  svgElements?: number;
}

/** An overlay step as planned: its asset, scale and opacity, and the size of the image under it. */
interface PlannedOverlay {
  name: TransformationName;
  params: unknown;
  input: { width: number; height: number };
}

/**
 * CPU nanoseconds of the overlays' own originals: each distinct layer (asset, scale, opacity and
 * the size under it, the way overlay.ts keeps them) decodes its original whole, and an SVG
 * overlay draws every element each time. An overlay whose facts are unknown costs nothing here.
 */
export function overlayDecodeNs(
  steps: readonly PlannedOverlay[],
  overlays: ReadonlyMap<string, OverlayFacts>,
): { ns: number; layers: number; pixels: number } {
  const layers = new Set<string>();
  let ns = 0;
  let pixels = 0;
  for (const step of steps) {
    if (step.name !== "overlay") continue;
    const { asset, scale, opacity } = step.params as { asset: string; scale?: number; opacity?: number };
    const facts = overlays.get(asset);
    const layer = `${asset}:${scale}:${opacity}:${step.input.width}x${step.input.height}`;
    if (!facts || layers.has(layer)) continue;
    layers.add(layer);
    pixels += facts.pixels;
    ns += facts.pixels * OVERLAY_DECODE_NS_PER_PIXEL + svgDrawNs(facts.svgElements ?? 0);
  }
  return { ns, layers: layers.size, pixels };
}

/** CPU nanoseconds of drawing an SVG of `elements` elements (beside the pixels the steps process). */
export function svgDrawNs(elements: number): number {
  return elements * SVG_NS_PER_ELEMENT;
}
