import sharp from "sharp";
import { formatOfMimeType, resolveParams, type MediaLimits, type TransformationStep } from "@media-platform/contracts";
import { transformations } from "../transformations";
import {
  TransformationInputError,
  type FaceDetector,
  type OutputFormat,
  type PixelWorkers,
  type StepContext,
} from "../transformations/transformation";
import { InputPixelLimitError, UndecodableOriginalError, UnsupportedOriginalError } from "../delivery/errors";
import { isConvertible, type AutoFormat } from "../negotiation";
import { fromRaw, toRaw } from "./raw";

export { InputPixelLimitError, UndecodableOriginalError, UnsupportedOriginalError };

export interface RenderDeps {
  pixels: PixelWorkers;
  faces: FaceDetector;
  limits: MediaLimits;
  /** sharp's decompression-bomb guard: originals above this many pixels are refused. */
  limitInputPixels: number;
}

/** Negotiated output (MEDIA_AUTO_FORMAT): applies to still JPEG/PNG originals only. */
export interface ConvertTo {
  format: AutoFormat;
  /** AVIF encoder effort (0-9); unset = sharp's default. */
  avifEffort?: number;
}

export interface RenderInput {
  original: Buffer;
  /** Encode a still JPEG/PNG original in this format instead of its own (format negotiation). */
  convertTo?: ConvertTo;
  /** Content type of the stored original: the output keeps this format. */
  contentType: string;
  steps: TransformationStep[];
  cacheKey: string;
}

export interface RenderOptions {
  /** Aborted when the request's time budget runs out: the render stops at the next step boundary. */
  signal?: AbortSignal;
  /** Epoch ms by which libvips work is cancelled (sharp's timeout, whole seconds, rounded up). */
  deadline?: number;
  /**
   * Called once per step that completed, with the step's transformation name and its duration in
   * seconds. sharp is lazy, so a step's time is its own work up to its materialised output: the
   * first step includes decoding the original, the last one encoding the result.
   */
  onStep?: (transformation: string, seconds: number) => void;
}

export interface Rendition {
  data: Buffer;
  contentType: string;
  width: number;
  height: number;
}

export function outputFormatFor(contentType: string): OutputFormat {
  const format = formatOfMimeType(contentType);
  if (!format) throw new UnsupportedOriginalError(contentType);
  return format;
}

/**
 * Process-wide sharp settings, called once at start-up. libvips' operation cache only helps
 * when the same operation repeats on the same input; results here are cached by the service
 * instead, so the libvips cache would only hold memory.
 */
export function configureSharp(options: { cache?: boolean; threads?: number } = {}): void {
  sharp.cache(options.cache ?? false);
  if (options.threads !== undefined && options.threads > 0) sharp.concurrency(options.threads);
}

// libvips reports a bad original with these message shapes (seen: "Input file has corrupt
// header: ...", "Input buffer contains unsupported image format", "VipsJpeg: premature end ...").
const DECODE_ERROR =
  /^Input (file|buffer|image)\b|\bVips(Jpeg|Png|Spng|Gif|Tiff|Webp|Heif|ForeignLoad\w*)\b|\b(jpeg|png|gif|tiff|webp|heif)load\b|corrupt|premature end|truncated|unsupported image format/i;

function mapSharpError(err: unknown, limitInputPixels: number): unknown {
  if (!(err instanceof Error) || err instanceof TransformationInputError) return err;
  if (/exceeds pixel limit/i.test(err.message)) return new InputPixelLimitError(limitInputPixels, { cause: err });
  if (DECODE_ERROR.test(err.message))
    return new UndecodableOriginalError(err.message.split("\n", 1)[0]!, { cause: err });
  return err;
}

function withTimeout(image: sharp.Sharp, deadline: number | undefined): sharp.Sharp {
  if (deadline === undefined) return image;
  const seconds = Math.max(1, Math.ceil((deadline - Date.now()) / 1000));
  return image.timeout({ seconds });
}

function checkOutputPixels(width: number, height: number, limits: MediaLimits, path: string): void {
  if (width * height > limits.maxOutputPixels) {
    throw new TransformationInputError(
      path,
      `the result would be ${width}x${height} = ${width * height} pixels, above the cap of ${limits.maxOutputPixels} pixels (MEDIA_MAX_OUTPUT_PIXELS)`,
    );
  }
}

/**
 * Decodes the original (EXIF orientation applied, first frame of animations), applies the
 * steps left to right and encodes in the original's format, sRGB, metadata stripped.
 * Errors: UnsupportedOriginalError / UndecodableOriginalError / InputPixelLimitError for a
 * bad original, TransformationInputError for parameters that cannot apply to this image,
 * the signal's reason when aborted.
 */
export async function render(input: RenderInput, deps: RenderDeps, options: RenderOptions = {}): Promise<Rendition> {
  try {
    return await renderUnmapped(input, deps, options);
  } catch (err) {
    throw mapSharpError(err, deps.limitInputPixels);
  }
}

async function renderUnmapped(input: RenderInput, deps: RenderDeps, options: RenderOptions): Promise<Rendition> {
  const { signal, deadline, onStep } = options;
  const format = outputFormatFor(input.contentType);
  let image = sharp(input.original, { limitInputPixels: deps.limitInputPixels, failOn: "error", autoOrient: true });
  const meta = await image.metadata();
  const oriented = meta.autoOrient ?? { width: meta.width, height: meta.height };
  // Negotiated format: still JPEG/PNG only; GIFs and anything animated keep their format.
  const convert = input.convertTo && isConvertible(input.contentType) && (meta.pages ?? 1) === 1;
  const ctx: StepContext = {
    cacheKey: input.cacheKey,
    stepIndex: 0,
    width: oriented.width,
    height: oriented.height,
    hasAlpha: meta.hasAlpha,
    output: convert ? { format: input.convertTo!.format, effort: input.convertTo!.avifEffort } : { format },
    limits: deps.limits,
    pixels: deps.pixels,
    faces: deps.faces,
  };
  let stepStart = 0;
  for (const [index, step] of input.steps.entries()) {
    signal?.throwIfAborted();
    stepStart = performance.now();
    const transformation = transformations[step.name] as (typeof transformations)[typeof step.name];
    const params = resolveParams(step.name, step.params as never);
    ctx.stepIndex = index;
    image = await (transformation.apply as (i: sharp.Sharp, p: unknown, c: StepContext) => Promise<sharp.Sharp>)(
      image,
      params,
      ctx,
    );
    if (index < input.steps.length - 1) {
      signal?.throwIfAborted();
      // Materialise so the next step starts from pixels, whatever order sharp would use.
      const raw = await toRaw(withTimeout(image, deadline));
      checkOutputPixels(raw.width, raw.height, deps.limits, step.name);
      ctx.width = raw.width;
      ctx.height = raw.height;
      ctx.hasAlpha = raw.channels === 4;
      image = fromRaw(raw);
      onStep?.(step.name, (performance.now() - stepStart) / 1000);
    }
  }
  signal?.throwIfAborted();
  const { data, info } = await withTimeout(encode(image, ctx.output), deadline).toBuffer({ resolveWithObject: true });
  const last = input.steps.at(-1);
  if (last) onStep?.(last.name, (performance.now() - stepStart) / 1000);
  checkOutputPixels(info.width, info.height, deps.limits, last?.name ?? "path");
  return { data, contentType: `image/${ctx.output.format}`, width: info.width, height: info.height };
}

function encode(image: sharp.Sharp, output: StepContext["output"]): sharp.Sharp {
  const quality = output.quality;
  switch (output.format) {
    case "jpeg":
      return image.jpeg({ quality: quality ?? 82, mozjpeg: false });
    case "webp":
      return image.webp({ quality: quality ?? 80 });
    case "avif":
      return image.avif({ quality: quality ?? 55, effort: output.effort });
    case "png":
      return image.png();
    case "gif":
      return image.gif();
    case "tiff":
      return image.tiff({ compression: "lzw" });
  }
}
