import sharp from "sharp";
import { DEFAULT_ENCODER_QUALITY } from "@media-platform/contracts";
import type { RenderStageSink } from "./render-stages";
import type { StepContext } from "../types";
import { Ssimulacra2Reference } from "../../perceptual/ssimulacra2";
import { fromRaw, toRaw } from "../raw";
import type { RawImage } from "../types";
import { ByteBudgetError } from "../errors";

/**
 * Encodes that search: `quality=auto` (thumbnail, format) and the `max-bytes` step. Both start
 * from the unencoded result, materialised once, and re-encode it a bounded number of times.
 */

/** Formats whose encoder has a quality to choose. */
const LOSSY: ReadonlySet<string> = new Set(["jpeg", "webp", "avif"]);

/** The quality range quality=auto searches, and its largest number of trial encodes. */
export const AUTO_QUALITY_RANGE = { min: 30, max: 95 } as const;
export const AUTO_QUALITY_ENCODES = 4;

/**
 * The default SSIMULACRA2 target of quality=auto (MEDIA_AUTO_QUALITY_TARGET): "high quality" on
 * the metric's scale, and above the worst score a fixed quality 75 gives the benchmark's photos
 * and corpus, in fewer bytes than q75 (bench/results/auto-quality.md).
 */
export const DEFAULT_AUTO_QUALITY_TARGET = 70;

/**
 * Encodes max-bytes may add beyond the first: up to 3 at lower quality (lossy: a search down to
 * MAX_BYTES_QUALITY_FLOOR; PNG: one palette encode), then smaller sizes.
 */
export const MAX_BYTES_ENCODES = 6;
const MAX_BYTES_QUALITY_FLOOR = 40;
/** Never smaller than this on either side: a smaller result is no rendition of the image. */
const MAX_BYTES_MIN_SIDE = 16;

export type Encoder = (image: sharp.Sharp, output: StepContext["output"]) => sharp.Sharp;

export interface SearchOptions {
  encode: Encoder;
  /** MEDIA_AUTO_QUALITY_TARGET */
  autoQualityTarget: number;
  /** Applies the request's time budget to one pipeline (libvips timeout). */
  bounded: (image: sharp.Sharp) => sharp.Sharp;
  signal?: AbortSignal;
  /** Receives each trial encode (tracing). */
  onStage?: RenderStageSink;
}

export interface SearchedEncode {
  data: Buffer;
  width: number;
  height: number;
  /** The quality chosen (lossy formats), for the log and the bench. */
  quality?: number;
  /** Encodes made. */
  encodes: number;
}

/** True when the output needs a search instead of one encode. */
export const needsSearch = (output: StepContext["output"]): boolean =>
  output.quality === "auto" || output.maxBytes !== undefined;

/** Encodes `image` for `output`, choosing the quality (auto) and fitting the byte budget (max-bytes). */
export async function searchEncode(
  image: sharp.Sharp,
  output: StepContext["output"],
  options: SearchOptions,
): Promise<SearchedEncode> {
  // JPEG has no alpha: the encoder flattens onto black, so the reference is flattened the same way.
  const pixels = await toRaw(options.bounded(output.format === "jpeg" ? image.flatten() : image));
  let encodes = 0;
  const encodeAt = async (raw: RawImage, quality: number | undefined, palette = false): Promise<Buffer> => {
    options.signal?.throwIfAborted();
    encodes++;
    const encoder = options.encode(fromRaw(raw), { ...output, quality });
    const startMs = Date.now();
    const data = await options.bounded(palette ? encoder.png({ palette: true }) : encoder).toBuffer();
    options.onStage?.({
      name: "render.encode.trial",
      startMs,
      endMs: Date.now(),
      attributes: {
        "media.format": palette ? "png" : output.format,
        "media.quality": quality ?? -1,
        "media.bytes": data.length,
      },
    });
    return data;
  };
  const lossy = LOSSY.has(output.format);
  let quality = typeof output.quality === "number" ? output.quality : undefined;
  let data: Buffer;
  if (output.quality === "auto" && lossy) {
    const chosen = await autoQuality(pixels, options.autoQualityTarget, output.format, (q) => encodeAt(pixels, q));
    ({ data, quality } = chosen);
  } else {
    data = await encodeAt(pixels, quality);
  }
  const budget = output.maxBytes;
  if (budget === undefined || data.length <= budget) {
    return { data, width: pixels.width, height: pixels.height, quality: lossy ? quality : undefined, encodes };
  }
  const fitted = await fitBytes(
    pixels,
    { budget, format: output.format, quality: quality ?? defaultQuality(output.format), encoded: data.length },
    encodeAt,
  );
  return { ...fitted, encodes };
}

/** Where the search starts: the quality that usually lands near the default target. */
const AUTO_QUALITY_START: Readonly<Record<string, number>> = { jpeg: 75, webp: 75, avif: 55 };
/** Score points per quality step assumed until two encodes measure it (JPEG and WebP near 75). */
const ASSUMED_SLOPE = 0.5;

interface Trial {
  data: Buffer;
  quality: number;
  score: number;
}

/**
 * The lowest quality in AUTO_QUALITY_RANGE whose encode scores at least `target` against the
 * unencoded pixels, in AUTO_QUALITY_ENCODES encodes: a secant search (the score rises with the
 * quality): from a start per format, each next quality is interpolated between the closest
 * encodes below and above the target (or stepped by ASSUMED_SLOPE while all lie on one side),
 * kept inside the interval still open. When no encode reaches the target, the highest tried.
 */
async function autoQuality(
  pixels: RawImage,
  target: number,
  format: string,
  encodeAt: (quality: number) => Promise<Buffer>,
): Promise<Trial> {
  let lo = AUTO_QUALITY_RANGE.min;
  let hi = AUTO_QUALITY_RANGE.max;
  const reference = new Ssimulacra2Reference(pixels);
  let above: Trial | undefined;
  let below: Trial | undefined;
  let highest: Trial | undefined;
  let quality = AUTO_QUALITY_START[format] ?? 75;
  for (let i = 0; i < AUTO_QUALITY_ENCODES && lo <= hi; i++) {
    const data = await encodeAt(quality);
    const score = reference.score(withChannels(await toRaw(sharp(data)), pixels.channels));
    const trial = { data, quality, score };
    if (!highest || quality > highest.quality) highest = trial;
    if (score >= target) {
      above = trial;
      hi = quality - 1;
    } else {
      below = trial;
      lo = quality + 1;
    }
    let next: number;
    if (above && below) {
      const slope = (above.score - below.score) / (above.quality - below.quality);
      next = slope > 0 ? Math.ceil(below.quality + (target - below.score) / slope) : (lo + hi) / 2;
    } else if (above) next = Math.floor(above.quality - (above.score - target) / ASSUMED_SLOPE);
    else next = Math.ceil(below!.quality + (target - below!.score) / ASSUMED_SLOPE);
    quality = Math.round(Math.min(hi, Math.max(lo, next)));
  }
  return above ?? highest!;
}

/** Decoded pixels with the reference's band count (a JPEG loses the alpha the reference had). */
function withChannels(image: RawImage, channels: 3 | 4): RawImage {
  if (image.channels === channels) return image;
  const out = Buffer.alloc(image.width * image.height * channels, 255);
  for (let i = 0, o = 0; o < out.length; i += image.channels, o += channels) {
    out[o] = image.data[i]!;
    out[o + 1] = image.data[i + 1]!;
    out[o + 2] = image.data[i + 2]!;
  }
  return { ...image, data: out, channels };
}

function defaultQuality(format: string): number {
  return format in DEFAULT_ENCODER_QUALITY
    ? DEFAULT_ENCODER_QUALITY[format as keyof typeof DEFAULT_ENCODER_QUALITY]
    : DEFAULT_ENCODER_QUALITY.jpeg;
}

/**
 * A result within `budget` bytes: first lower quality (lossy: the floor, then bisection between
 * it and the quality used; PNG: a palette encode), then the image scaled down by the square root
 * of the byte ratio (bytes grow about with pixels), at the floor quality, in at most
 * MAX_BYTES_ENCODES encodes. Throws ByteBudgetError when none fits.
 */
async function fitBytes(
  pixels: RawImage,
  /** The byte budget, the output format, the quality used and the size of that first encode. */
  search: { budget: number; format: string; quality: number; encoded: number },
  encodeAt: (raw: RawImage, quality: number | undefined, palette?: boolean) => Promise<Buffer>,
): Promise<Omit<SearchedEncode, "encodes">> {
  const { budget, format, quality, encoded } = search;
  const lossy = LOSSY.has(format);
  const palette = format === "png";
  const floor = lossy ? Math.max(1, Math.min(MAX_BYTES_QUALITY_FLOOR, quality - 1)) : undefined;
  let left = MAX_BYTES_ENCODES;
  let smallest = encoded;
  if (lossy || palette) {
    left--;
    const data = await encodeAt(pixels, floor, palette);
    smallest = Math.min(smallest, data.length);
    if (data.length <= budget) {
      // The floor fits: the highest quality below the one used that still fits, in 2 more encodes.
      let fitting = { data, quality: floor };
      let lo = floor! + 1;
      let hi = quality - 1;
      for (let i = 0; lossy && i < 2 && lo <= hi; i++) {
        left--;
        const probe = Math.ceil((lo + hi) / 2);
        const candidate = await encodeAt(pixels, probe);
        if (candidate.length <= budget) {
          fitting = { data: candidate, quality: probe };
          lo = probe + 1;
        } else hi = probe - 1;
      }
      return { ...fitting, quality: lossy ? fitting.quality : undefined, width: pixels.width, height: pixels.height };
    }
  }
  let scale = 1;
  let bytes = smallest;
  while (left-- > 0) {
    // Bytes follow pixels roughly; aim a little under the budget.
    scale *= Math.min(0.9, Math.sqrt((budget * 0.9) / bytes));
    const width = Math.round(pixels.width * scale);
    const height = Math.round(pixels.height * scale);
    if (width < MAX_BYTES_MIN_SIDE || height < MAX_BYTES_MIN_SIDE) break;
    const smaller = await toRaw(fromRaw(pixels).resize(width, height, { fit: "fill" }));
    const data = await encodeAt(smaller, floor, palette);
    smallest = Math.min(smallest, data.length);
    if (data.length <= budget) return { data, width, height, quality: floor };
    bytes = data.length;
  }
  throw new ByteBudgetError(budget, smallest);
}
