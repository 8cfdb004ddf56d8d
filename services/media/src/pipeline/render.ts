import sharp from "sharp";
import {
  formatOfMimeType,
  type FocalPoint,
  type MediaLimits,
  originalHeaderFields,
  type OriginalHeader,
  type TransformationName,
  type TransformationStep,
} from "@media-platform/contracts";
import {
  keepFocalPointWhenSameSize,
  type FaceDetector,
  type OutputFormat,
  type PixelWorkers,
  type StepContext,
} from "../transformations/transformation";
import {
  InputPixelLimitError,
  TransformationInputError,
  UndecodableOriginalError,
  UnsupportedOriginalError,
} from "./errors";
import { isConvertible, type AutoFormat } from "../negotiation";
import { planRender, type PlannedStep, type RenderPlan } from "./plan";
import { OriginalSource, type OriginalReader } from "./original";
import { fromRaw, toRaw, type RawImage } from "./raw";
import { carriesGainMap, keepingGainMap } from "./gain-map";

export interface RenderDeps {
  pixels: PixelWorkers;
  faces: FaceDetector;
  limits: MediaLimits;
  /** sharp's decompression-bomb guard: originals above this many pixels are refused. */
  limitInputPixels: number;
  /** Encoder settings of this deployment: every output of a format uses them (see encoderOptions). */
  encoder?: EncoderSettings;
}

/** Deployment-wide encoder knobs (media config.ts). */
export interface EncoderSettings {
  /** AVIF encoder effort (0-9), MEDIA_AVIF_EFFORT; unset = sharp's default (4). */
  avifEffort?: number;
}

/** Negotiated output (MEDIA_AUTO_FORMAT): applies to still JPEG/PNG originals only. */
export interface ConvertTo {
  format: AutoFormat;
  /** AVIF encoder effort (0-9); unset = sharp's default. */
  avifEffort?: number;
}

export interface RenderInput {
  /**
   * The stored original: its bytes, or a stream of them or a reader of them (only the header is
   * read before the plan passes, so a refused request never reads a large original to the end).
   */
  original: Buffer | AsyncIterable<Buffer> | OriginalReader;
  /** Encode a still JPEG/PNG original in this format instead of its own (format negotiation). */
  convertTo?: ConvertTo;
  /**
   * The original's header facts stored with its blob (contracts' OriginalHeader, written at
   * upload); without them the pipeline reads the header from the bytes first.
   */
  header?: OriginalHeader;
  /** Content type of the stored original: the output keeps this format. */
  contentType: string;
  steps: TransformationStep[];
  cacheKey: string;
  /**
   * The asset's focal point (its attributes blob), in fractions of the original as displayed
   * (after EXIF orientation); delivery reads it only when a step uses it.
   */
  focalPoint?: FocalPoint;
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
  /**
   * Called once the plan is known (header read, sizes and work checked) and before any pixel is
   * decoded; resolves when the request may start its work and returns the release. The delivery
   * layer bounds the pixels in flight across requests with it.
   */
  admit?: (plan: RenderPlan) => Promise<() => void>;
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
 * instead, so the libvips cache would only hold memory. `concurrency` (threads per image, 0 =
 * one per core) is set explicitly: sharp's own default depends on the allocator (1 on glibc,
 * one per core with jemalloc), and the service parallelises across requests instead.
 */
export function configureSharp(options: { cache?: boolean; concurrency?: number } = {}): void {
  sharp.cache(options.cache ?? false);
  if (options.concurrency !== undefined) sharp.concurrency(options.concurrency);
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

/**
 * Planned work from which libvips itself is given the deadline. Its timeout works through
 * progress signals on every tile, which cost more CPU per render than the whole check is worth
 * on small work (measured 0.1-0.4 ms on a 256 px thumbnail of a 2.5 MP JPEG); such renders end in
 * tens of milliseconds anyway and the request's own deadline still answers 503 on time.
 */
const LIBVIPS_TIMEOUT_MIN_WORK_PIXELS = 32_000_000;

function withTimeout(image: sharp.Sharp, deadline: number | undefined): sharp.Sharp {
  if (deadline === undefined) return image;
  const seconds = Math.max(1, Math.ceil((deadline - Date.now()) / 1000));
  return image.timeout({ seconds });
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

/** The header facts of sharp metadata; sharp gives every one of them for a header it could read. */
const headerOf = (meta: sharp.Metadata) => originalHeaderFields(meta) as OriginalHeader;

/** What flows between steps: a pending sharp pipeline (the original, first) or decoded pixels. */
type Pixels = { pipeline: sharp.Sharp; srgb: boolean } | { raw: RawImage };

const isRaw = (value: RawImage | sharp.Sharp): value is RawImage => !(value instanceof sharp);

async function renderUnmapped(input: RenderInput, deps: RenderDeps, options: RenderOptions): Promise<Rendition> {
  const { signal, onStep } = options;
  let deadline = options.deadline;
  const format = outputFormatFor(input.contentType);
  const sharpOptions: sharp.SharpOptions = {
    limitInputPixels: deps.limitInputPixels,
    failOn: "error",
    autoOrient: true,
  };
  const source = new OriginalSource(input.original);
  let release: (() => void) | undefined;
  try {
    // The header only: sizes, bands, colour space. No pixel is decoded before the plan passes.
    // Stored with the blob at upload when present (no second header parse), else read here.
    const meta = input.header ?? headerOf(await source.metadata(sharpOptions));
    const oriented = { width: meta.orientedWidth, height: meta.orientedHeight };
    if (oriented.width * oriented.height > deps.limitInputPixels) throw new InputPixelLimitError(deps.limitInputPixels);
    const plan = planRender(input.steps, oriented, deps.limits);
    if (plan.workPixels < LIBVIPS_TIMEOUT_MIN_WORK_PIXELS) deadline = undefined;
    // Negotiated format: still JPEG/PNG only; GIFs and anything animated keep their format.
    const convert = input.convertTo && isConvertible(input.contentType) && meta.pages === 1;
    signal?.throwIfAborted();
    release = await options.admit?.(plan);
    signal?.throwIfAborted();
    const bytes = await source.all();
    const original = sharp(bytes, sharpOptions);
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
      signal,
      focalPoint: input.focalPoint,
    };
    const srgb = meta.space === "srgb" && meta.depth === "uchar" && meta.channels >= 3;
    let current: Pixels = { pipeline: original, srgb };
    // A request has at least one step (the URL grammar); `original` only stands in until the first ends.
    let result: RawImage | sharp.Sharp = original;
    let stepStart = 0;
    for (const [index, step] of plan.steps.entries()) {
      signal?.throwIfAborted();
      stepStart = performance.now();
      ctx.stepIndex = index;
      ctx.keptRegion = undefined;
      result = await runStep(step, current, ctx, deadline);
      // Into the coordinates of the next step's input.
      if (ctx.focalPoint) ctx.focalPoint = focalPointAfter(step, ctx.focalPoint, ctx);
      if (index < plan.steps.length - 1) {
        signal?.throwIfAborted();
        // Materialise so the next step starts from pixels, whatever order sharp would use.
        const raw: RawImage = isRaw(result) ? result : await toRaw(withTimeout(result, deadline));
        ctx.width = raw.width;
        ctx.height = raw.height;
        ctx.hasAlpha = raw.channels === 4;
        current = { raw };
        onStep?.(step.name, (performance.now() - stepStart) / 1000);
      }
    }
    signal?.throwIfAborted();
    const last: sharp.Sharp = isRaw(result) ? fromRaw(result) : result;
    // A JPEG with an HDR gain map keeps it in JPEG output when the steps ran on the original's
    // pipeline (sharp transforms the map with the image); steps between raw pixels drop it.
    const gainMap = ctx.output.format === "jpeg" && !isRaw(result) && format === "jpeg" && carriesGainMap(bytes);
    const encoded = encode(gainMap ? keepingGainMap(last) : last, ctx.output, deps.encoder);
    const { data, info } = await withTimeout(encoded, deadline).toBuffer({ resolveWithObject: true });
    const lastStep = plan.steps.at(-1);
    if (lastStep) onStep?.(lastStep.name, (performance.now() - stepStart) / 1000);
    return { data, contentType: `image/${ctx.output.format}`, width: info.width, height: info.height };
  } finally {
    release?.();
    await source.close();
  }
}

/** Where `point` (fractions of the step's input) lies in the step's output; see StepShape.mapFocalPoint. */
function focalPointAfter<N extends TransformationName>(
  step: PlannedStep<N>,
  point: FocalPoint,
  ctx: StepContext,
): FocalPoint | undefined {
  const t = step.transformation;
  return t.mapFocalPoint
    ? t.mapFocalPoint(point, step.input, step.output, step.params, ctx)
    : keepFocalPointWhenSameSize(point, step.input, step.output);
}

/** Hands a step the input it declared (encoded pipeline, 8-bit sRGB pipeline or raw pixels). */
async function runStep<N extends TransformationName>(
  step: PlannedStep<N>,
  current: Pixels,
  ctx: StepContext,
  deadline: number | undefined,
): Promise<RawImage | sharp.Sharp> {
  const t = step.transformation;
  switch (t.input) {
    case "raw":
      return t.apply(
        "raw" in current ? current.raw : await toRaw(withTimeout(current.pipeline, deadline)),
        step.params,
        ctx,
      );
    case "srgb":
      if ("raw" in current) return t.apply(fromRaw(current.raw), step.params, ctx);
      return t.apply(
        current.srgb ? current.pipeline : fromRaw(await toRaw(withTimeout(current.pipeline, deadline))),
        step.params,
        ctx,
      );
    case "encoded":
      return t.apply("raw" in current ? fromRaw(current.raw) : current.pipeline, step.params, ctx);
  }
}

function encode(image: sharp.Sharp, output: StepContext["output"], settings: EncoderSettings = {}): sharp.Sharp {
  const quality = output.quality;
  switch (output.format) {
    case "jpeg":
      return image.jpeg({ quality: quality ?? 82, mozjpeg: false });
    case "webp":
      return image.webp({ quality: quality ?? 80 });
    case "avif":
      return image.avif({ quality: quality ?? 55, effort: avifEffort(output, settings) });
    case "png":
      return image.png();
    case "gif":
      return image.gif();
    case "tiff":
      return image.tiff({ compression: "lzw" });
  }
}

/**
 * The one place that decides the AVIF encoder's effort: every AVIF output (a stored AVIF original,
 * `format:type=avif`, a negotiated AVIF) uses the deployment's setting, because sharp's default
 * effort costs seconds per full-size MISS.
 */
function avifEffort(output: StepContext["output"], settings: EncoderSettings): number | undefined {
  return settings.avifEffort ?? output.effort;
}
