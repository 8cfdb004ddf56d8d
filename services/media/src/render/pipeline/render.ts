import sharp from "sharp";
import {
  DEFAULT_ENCODER_QUALITY,
  formatOfMimeType,
  resolveParams,
  type FocalPoint,
  type GivenParams,
  type ResolvedParams,
  type MediaLimits,
  originalHeaderFields,
  renditionFormatOf,
  type OriginalHeader,
  type TransformationName,
  type TransformationStep,
} from "@media-platform/contracts";
import { keepFocalPointWhenSameSize } from "../transformations/transformation";
import type { FaceDetector, OutputFormat, PixelWorkers, StepContext } from "../types";
import {
  ByteBudgetError,
  ImagePixelLimitError,
  TransformationInputError,
  UndecodableImageError,
  undecodableOriginal,
  unsupportedOriginal,
} from "../errors";
import { isConvertible, type AutoFormat } from "../../negotiation";
import { planRender, type PlannedStep, type RenderPlan } from "./plan";
import { OriginalSource, type OriginalReader } from "./original";
import { fromRaw, toRaw } from "../raw";
import type { RawImage } from "../types";
import { selectedFrame } from "../transformations/frame";
import { transformations } from "../transformations";
import { carriesGainMap, keepingGainMap } from "./gain-map";
import { DEFAULT_AUTO_QUALITY_TARGET, needsSearch, searchEncode } from "./encode-search";
import { svgDrawing, svgElementCount } from "./svg-density";
import { withTimeout } from "../deadline";
import { selectedPage } from "../transformations/page";
import { drawPdfPage } from "./pdf-page";
import { PDF_DRAW_NS_PER_PIXEL, type OverlayFacts } from "./cost";
import type { Size } from "../types";
import type { DecodedImages } from "./decoded-images";
import { sharedFirstStep } from "./shared-decode";
import { decodeStage, encodeStage, planAttributes, stepStage } from "./render-stage-facts";
import { timedStage, type RenderStageSink } from "./render-stages";

export interface RenderDeps {
  pixels: PixelWorkers;
  faces: FaceDetector;
  limits: MediaLimits;
  /** sharp's decompression-bomb guard: originals above this many pixels are refused. */
  limitInputPixels: number;
  /**
   * AVIF encoder effort (0-9, MEDIA_AVIF_EFFORT) of every AVIF output: a stored AVIF, a
   * `format:type=avif` step and a negotiated AVIF alike; unset = sharp's default.
   */
  avifEffort?: number;
  /**
   * Animations with more frames than this are refused before decoding when they would stay
   * animated (MEDIA_MAX_ANIMATION_FRAMES); default DEFAULT_MAX_ANIMATION_FRAMES.
   */
  maxAnimationFrames?: number;
  /** SSIMULACRA2 score quality=auto reaches (MEDIA_AUTO_QUALITY_TARGET); default DEFAULT_AUTO_QUALITY_TARGET. */
  autoQualityTarget?: number;
  /** Decodes shared between renditions of one original (MEDIA_DECODED_CACHE_BYTES); none = each decodes its own. */
  decoded?: DecodedImages;
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
  /** Originals of the assets the overlay steps draw, by asset id (delivery reads them). */
  overlays?: ReadonlyMap<string, Buffer>;
  /** `<assetId>|<local generation>`: renditions with the same key may share a decode (shared-decode.ts). */
  decodedKey?: string;
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
  /** Receives the render's stages with their times, for tracing (render-stages.ts); unset = not measured. */
  onStage?: RenderStageSink;
}

export interface Rendition {
  data: Buffer;
  contentType: string;
  width: number;
  height: number;
}

/** The stored format's, but PNG for an SVG original (a pixel transformation has no SVG result). */
export function outputFormatFor(contentType: string): OutputFormat {
  const format = formatOfMimeType(contentType);
  if (!format) throw new UndecodableImageError(unsupportedOriginal(contentType));
  return renditionFormatOf(format);
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
  if (/exceeds pixel limit/i.test(err.message))
    return new ImagePixelLimitError(limitInputPixels, undefined, undefined, { cause: err });
  if (DECODE_ERROR.test(err.message))
    return new UndecodableImageError(undecodableOriginal(err.message.split("\n", 1)[0]!), { cause: err });
  return err;
}

/** The overlay originals' header facts the cost model prices (their pixels; an SVG's elements). */
async function overlayFacts(
  overlays: ReadonlyMap<string, Buffer>,
  limitInputPixels: number,
): Promise<Map<string, OverlayFacts>> {
  const facts = new Map<string, OverlayFacts>();
  for (const [id, bytes] of overlays) {
    const meta = await sharp(bytes, { limitInputPixels, failOn: "error" }).metadata();
    facts.set(id, {
      pixels: (meta.width ?? 0) * (meta.height ?? 0),
      svgElements: meta.format === "svg" ? svgElementCount(bytes) : undefined,
    });
  }
  return facts;
}

/**
 * Decodes the original (EXIF orientation applied), applies the steps left to right and encodes
 * in the original's format, sRGB, metadata stripped. An animation is processed frame by frame
 * and stays animated, or gives one frame (see the Animations section below).
 * Errors: UndecodableImageError (unsupported or corrupt) / ImagePixelLimitError for a
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
  const { signal, onStep, onStage } = options;
  const deadline = options.deadline;
  const format = outputFormatFor(input.contentType);
  const sharpOptions: sharp.SharpOptions = {
    limitInputPixels: deps.limitInputPixels,
    failOn: "error",
    autoOrient: true,
  };
  const source = new OriginalSource(input.original);
  let release: (() => void) | undefined;
  try {
    const pdf = formatOfMimeType(input.contentType) === "pdf";
    // libvips reads no PDF: its page count and page 1's size are the facts management stored.
    if (pdf && !input.header) {
      throw new UndecodableImageError(
        undecodableOriginal("a PDF renders from the header facts stored with it, and it has none"),
      );
    }
    // The header only: sizes, bands, colour space. No pixel is decoded before the plan passes.
    // Stored with the blob at upload when present (no second header parse), else read here.
    const meta = input.header ?? headerOf(await source.metadata(sharpOptions));
    // Every image but a PDF has one page: page:index=2 of a photo is a 400 here.
    const pageIndex = selectedPage(input.steps, pdf ? meta.pages : 1);
    const framing = framingOf(meta, input.steps, format, deps);
    let oriented = framing.oriented;
    const animation = framing.animation;
    if (animation.page !== undefined) sharpOptions.page = animation.page;
    // Negotiated format: still JPEG/PNG only; GIFs and anything animated keep their format.
    const convert = input.convertTo && isConvertible(input.contentType) && meta.pages === 1;
    const svg = formatOfMimeType(input.contentType) === "svg";
    // The cost model prices the encoder the render will use (ctx.output below) and every frame.
    const planOutput = {
      format: convert ? input.convertTo!.format : format,
      avifEffort: (convert ? input.convertTo!.avifEffort : undefined) ?? deps.avifEffort,
      frames: animation.frames,
      // A PDF page is drawn before the steps: its pixels cost as drawn (pipeline/cost.ts).
      drawNsPerPixel: pdf ? PDF_DRAW_NS_PER_PIXEL : undefined,
      // What the decode holds (held-pixels.ts): a still JPEG or WebP shrinks on load.
      decode: {
        shrinksOnLoad: meta.pages === 1 && (format === "jpeg" || format === "webp") ? format : undefined,
        srgb: meta.space === "srgb" && meta.depth === "uchar" && meta.channels >= 3,
        focalPoint: input.focalPoint !== undefined,
      },
      // An SVG (sanitised, at most a few MB) costs by its elements; overlays by their own originals.
      svgElements: svg ? svgElementCount(await source.all()) : undefined,
      overlays: input.overlays?.size ? await overlayFacts(input.overlays, deps.limitInputPixels) : undefined,
    };
    let plan = planRender(input.steps, oriented, deps.limits, planOutput);
    // An SVG or a PDF page is drawn at the scale its sizing step needs (svg-density.ts): the
    // steps start from that size.
    const drawnAt = (intrinsic: Size, planned: typeof plan) =>
      svgDrawing(input.steps, planned, intrinsic, deps.limitInputPixels, (size) =>
        planRender(input.steps, size, deps.limits, planOutput),
      );
    if (svg || pdf) {
      const drawing = drawnAt(oriented, plan);
      ({ plan, size: oriented } = drawing);
      if (!pdf) sharpOptions.density = drawing.density;
    }
    signal?.throwIfAborted();
    release = await options.admit?.(plan);
    signal?.throwIfAborted();
    const bytes = await timedStage(onStage, "render.read", () => source.all(), planAttributes(plan, oriented));
    let drawnPage: RawImage | undefined;
    if (pdf) {
      const page1 = { width: meta.orientedWidth, height: meta.orientedHeight };
      const drawing = await drawPdfPage(
        bytes,
        pageIndex,
        (page) => {
          // Another page than page 1 may have another size: planned again from it (the limits
          // hold for it as for page 1; admission counted page 1's plan).
          if (page.width !== page1.width || page.height !== page1.height) {
            ({ plan, size: oriented } = drawnAt(page, planRender(input.steps, page, deps.limits, planOutput)));
          }
          return oriented;
        },
        signal,
      );
      drawnPage = drawing.image;
    }
    const ctx: StepContext = {
      cacheKey: input.cacheKey,
      stepIndex: 0,
      width: oriented.width,
      height: oriented.height,
      hasAlpha: meta.hasAlpha,
      output: {
        format: convert ? input.convertTo!.format : format,
        effort: (convert ? input.convertTo!.avifEffort : undefined) ?? deps.avifEffort,
      },
      limits: deps.limits,
      pixels: deps.pixels,
      faces: deps.faces,
      signal,
      focalPoint: input.focalPoint,
      overlays: input.overlays,
      limitInputPixels: deps.limitInputPixels,
      deadline,
    };
    if (animation.frames > 1) return await renderAnimation({ bytes, sharpOptions }, plan, ctx, deadline, options);
    // A drawn PDF page is opaque (drawn on white): its alpha band goes.
    const original = drawnPage ? fromRaw(drawnPage).removeAlpha() : sharp(bytes, sharpOptions);
    if (drawnPage) ctx.hasAlpha = false;
    const srgb = drawnPage !== undefined || (meta.space === "srgb" && meta.depth === "uchar" && meta.channels >= 3);
    const originalGainMap = format === "jpeg" && carriesGainMap(bytes);
    const decodeStart = performance.now();
    const first = await sharedFirstStep({
      decoded: deps.decoded,
      // An SVG or PDF page is drawn at the size each rendition needs: one drawing cannot serve every size.
      key: sharpOptions.density === undefined && !pdf ? input.decodedKey : undefined,
      plan,
      header: meta,
      srgb,
      still: meta.pages === 1 && animation.page === undefined,
      shrinksOnLoad: format === "jpeg" || format === "webp" ? format : undefined,
      gainMap: originalGainMap,
      bytes,
      sharpOptions,
      ctx,
    });
    onStage?.(decodeStage(decodeStart));
    let current: Pixels = { pipeline: original, srgb };
    // A request has at least one step (the URL grammar); `original` only stands in until the first ends.
    let result: RawImage | sharp.Sharp = original;
    let stepStart = 0;
    for (const [index, step] of plan.steps.entries()) {
      signal?.throwIfAborted();
      stepStart = performance.now();
      ctx.stepIndex = index;
      ctx.keptRegion = undefined;
      result = index === 0 && first ? first : await runStep(step, current, ctx, deadline);
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
        onStage?.(stepStage(step.name, stepStart, raw));
      }
    }
    signal?.throwIfAborted();
    const last: sharp.Sharp = isRaw(result) ? fromRaw(result) : result;
    // A JPEG with an HDR gain map keeps it in JPEG output when the steps ran on the original's
    // pipeline (sharp transforms the map with the image); steps between raw pixels drop it.
    const gainMap = ctx.output.format === "jpeg" && !isRaw(result) && originalGainMap;
    // quality=auto and max-bytes re-encode the materialised result (pipeline/encode-search.ts).
    const encodeStart = performance.now();
    const { data, info } = needsSearch(ctx.output)
      ? await searchEncode(last, ctx.output, {
          encode,
          autoQualityTarget: deps.autoQualityTarget ?? DEFAULT_AUTO_QUALITY_TARGET,
          bounded: (image) => withTimeout(image, deadline),
          signal,
          onStage,
        }).then(({ data, width, height }) => ({ data, info: { width, height } }))
      : await withTimeout(encode(gainMap ? keepingGainMap(last) : last, ctx.output), deadline).toBuffer({
          resolveWithObject: true,
        });
    const lastStep = plan.steps.at(-1);
    if (lastStep) onStep?.(lastStep.name, (performance.now() - stepStart) / 1000);
    onStage?.(encodeStage(ctx.output, encodeStart, data.length, info));
    return { data, contentType: `image/${ctx.output.format}`, width: info.width, height: info.height };
  } finally {
    release?.();
    await source.close();
  }
}

/** The facts of a rendition known before rendering (GET /info). */
/**
 * Renders one request: decode the original, apply the steps, encode. The service injects
 * this module's render with the real pixel workers and face detector; tests inject their own.
 */
export type RenderFn = (input: RenderInput, options: RenderCallOptions) => Promise<Rendition>;

export interface RenderCallOptions {
  /** Aborted when the request times out or every client waiting for it has gone. */
  signal: AbortSignal;
  deadline: number;
  /** Called after each step with its name and duration (media_transformation_duration_seconds). */
  onStep?: (transformation: string, seconds: number) => void;
  /** Admission by planned work (MEDIA_MAX_INFLIGHT_PIXELS), before any pixel is decoded. */
  admit?: RenderOptions["admit"];
  /** Receives the render's stages (tracing); unset = not measured. */
  onStage?: RenderStageSink;
}

export interface PlannedRendition {
  width: number;
  height: number;
  format: OutputFormat;
  /** The result stays an animation (frames > 1). */
  animated: boolean;
  frames: number;
  /** The planner's estimate of the render's CPU milliseconds. */
  workCost: number;
}

/**
 * What render() would produce for `input`, from the original's header and the URL alone, through
 * the same checks (pixel caps, work budget, animation rules): nothing is decoded. max-bytes may
 * still make the result smaller than planned.
 */
export function planRendition(
  input: Pick<RenderInput, "contentType" | "steps" | "convertTo"> & { header: OriginalHeader },
  deps: Pick<RenderDeps, "limits" | "limitInputPixels" | "avifEffort" | "maxAnimationFrames">,
): PlannedRendition {
  const stored = outputFormatFor(input.contentType);
  const meta = input.header;
  const { oriented, animation } = framingOf(meta, input.steps, stored, deps);
  const convert = input.convertTo && isConvertible(input.contentType) && meta.pages === 1;
  const base = convert ? input.convertTo!.format : stored;
  const plan = planRender(input.steps, oriented, deps.limits, {
    format: base,
    avifEffort: (convert ? input.convertTo!.avifEffort : undefined) ?? deps.avifEffort,
    frames: animation.frames,
  });
  const size = plan.steps.at(-1)?.output ?? oriented;
  return {
    width: size.width,
    height: size.height,
    format: requestedFormat(input.steps, base),
    animated: animation.frames > 1,
    frames: animation.frames,
    workCost: plan.workCost,
  };
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

function encode(image: sharp.Sharp, output: StepContext["output"]): sharp.Sharp {
  // "auto" is chosen by searchEncode, which calls this with a number.
  const quality = typeof output.quality === "number" ? output.quality : undefined;
  switch (output.format) {
    case "jpeg":
      return image.jpeg({ quality: quality ?? DEFAULT_ENCODER_QUALITY.jpeg, mozjpeg: false });
    case "webp":
      return image.webp({ quality: quality ?? DEFAULT_ENCODER_QUALITY.webp });
    case "avif":
      // 4:2:0 like the web's other AVIF encoders: about 1.6x faster to encode than sharp's 4:4:4.
      return image.avif({
        quality: quality ?? DEFAULT_ENCODER_QUALITY.avif,
        effort: output.effort,
        chromaSubsampling: "4:2:0",
      });
    case "png":
      return image.png();
    case "gif":
      return image.gif();
    case "tiff":
      return image.tiff({ compression: "lzw" });
  }
}

// ---------------------------------------------------------------------------------------------
// Animations (GIF and WebP originals of several frames)
//
// The rule: an animation stays animated, in the output format, when that format can carry one
// (GIF, WebP) and every step applies frame by frame; each frame then runs through the same steps
// as a still, on its own pixels (no kernel reads across a frame border), and the frames are
// encoded again with the original's delays and loop count. Otherwise the render is a still: the
// frame a `frame` step selects, or else the first frame (the poster): for AVIF/JPEG/PNG output
// and for steps that choose their region from the pixels (avatar, crop with attention/entropy).
// ---------------------------------------------------------------------------------------------

/** MEDIA_MAX_ANIMATION_FRAMES' default (see config.ts). */
export const DEFAULT_MAX_ANIMATION_FRAMES = 256;

const ANIMATED_FORMATS: ReadonlySet<OutputFormat> = new Set(["gif", "webp"]);

interface AnimationChoice {
  /** Frames every step processes: the frame count when the result stays animated, else 1. */
  frames: number;
  /** The one frame to decode for a still (sharp's `page`); undefined = the first. */
  page?: number;
}

const STILL: AnimationChoice = { frames: 1 };

/** The output format after the request's `format` steps (it applies at encoding; the last wins). */
function requestedFormat(steps: readonly TransformationStep[], stored: OutputFormat): OutputFormat {
  let format = stored;
  for (const step of steps) if (step.name === "format") format = step.params.type ?? format;
  return format;
}

function isPosterOnly<N extends TransformationName>(step: TransformationStep & { name: N }): boolean {
  const t = transformations[step.name] as { posterOnly?: (params: ResolvedParams<N>) => boolean };
  return t.posterOnly?.(resolveParams(step.name, step.params as GivenParams<N>)) ?? false;
}

/**
 * The displayed size of an original and whether its render stays animated, from its header and
 * the URL alone (refused here above LIMIT_INPUT_PIXELS). Only an original of several frames, or
 * a frame step, looks further than the size: no work for a still.
 */
function framingOf(
  meta: OriginalHeader,
  steps: readonly TransformationStep[],
  stored: OutputFormat,
  deps: Pick<RenderDeps, "maxAnimationFrames" | "limitInputPixels">,
): { oriented: { width: number; height: number }; animation: AnimationChoice } {
  const oriented = { width: meta.orientedWidth, height: meta.orientedHeight };
  if (oriented.width * oriented.height > deps.limitInputPixels) {
    throw new ImagePixelLimitError(deps.limitInputPixels, oriented);
  }
  const animation =
    meta.pages > 1 || steps.some((step) => step.name === "frame")
      ? animationOf(meta.pages, oriented, steps, stored, deps)
      : STILL;
  return { oriented, animation };
}

/**
 * Whether a render of an original of `pages` frames stays animated, from the header and the
 * URL alone: the frame index and the frame cap are refused here, before any decoding.
 */
function animationOf(
  headerPages: number,
  frame: { width: number; height: number },
  steps: readonly TransformationStep[],
  stored: OutputFormat,
  deps: Pick<RenderDeps, "maxAnimationFrames" | "limitInputPixels">,
): AnimationChoice {
  // Frames are GIF's and WebP's, which share one canvas size; the pages of a TIFF or HEIF may
  // differ in size from the first (which the plan is made from), so those render as stills.
  const pages = ANIMATED_FORMATS.has(stored) ? headerPages : 1;
  const page = selectedFrame(steps, pages);
  if (page !== undefined) return { frames: 1, page };
  if (pages === 1 || !ANIMATED_FORMATS.has(requestedFormat(steps, stored)) || steps.some(isPosterOnly)) return STILL;
  const max = deps.maxAnimationFrames ?? DEFAULT_MAX_ANIMATION_FRAMES;
  if (pages > max) {
    throw new TransformationInputError(
      "MEDIA_MAX_ANIMATION_FRAMES",
      `the original is an animation of ${pages} frames, above the cap of ${max} frames (MEDIA_MAX_ANIMATION_FRAMES); a frame:index step renders one frame`,
    );
  }
  // sharp's decompression-bomb guard holds for the whole strip of frames it decodes.
  if (pages * frame.width * frame.height > deps.limitInputPixels) {
    throw new ImagePixelLimitError(deps.limitInputPixels, { width: frame.width, height: frame.height * pages });
  }
  return { frames: pages };
}

/** Every frame of the original through the planned steps, encoded as an animation. */
async function renderAnimation(
  original: { bytes: Buffer; sharpOptions: sharp.SharpOptions },
  plan: RenderPlan,
  ctx: StepContext,
  deadline: number | undefined,
  options: RenderOptions,
): Promise<Rendition> {
  const { signal, onStep } = options;
  const seconds = plan.steps.map(() => 0);
  let start = performance.now();
  // sharp holds limitInputPixels to the whole strip: animationOf checked it against the frames.
  const decoder = sharp(original.bytes, { ...original.sharpOptions, pages: -1 });
  // Delays and loop count are not among the stored header facts: read here, on this path only.
  const header = await decoder.metadata();
  const strip = await toRaw(withTimeout(decoder, deadline));
  const pages = header.pages ?? 1;
  const frameHeight = strip.height / pages;
  if (!Number.isInteger(frameHeight)) {
    throw new UndecodableImageError(
      undecodableOriginal(`${pages} frames do not divide the image height ${strip.height}`),
    );
  }
  seconds[0]! += (performance.now() - start) / 1000;
  const frameBytes = strip.width * frameHeight * strip.channels;
  const frames: RawImage[] = [];
  let output = ctx.output;
  for (let index = 0; index < pages; index++) {
    signal?.throwIfAborted();
    const frame: RawImage = {
      data: strip.data.subarray(index * frameBytes, (index + 1) * frameBytes),
      width: strip.width,
      height: frameHeight,
      channels: strip.channels,
    };
    // Each frame starts from the same context (focal point, encoder settings a step may set).
    const frameCtx: StepContext = { ...ctx, output: { ...ctx.output } };
    frames.push(await renderFrame(frame, plan, frameCtx, { deadline, signal }, seconds));
    if (index === 0) output = frameCtx.output;
  }
  signal?.throwIfAborted();
  start = performance.now();
  const { width, height } = frames[0]!;
  if (frames.some((f) => f.width !== width || f.height !== height)) {
    throw new Error("animation frames came out of the steps in different sizes");
  }
  const channels = frames.some((f) => f.channels === 4) ? 4 : 3;
  const data = Buffer.concat(await Promise.all(frames.map((f) => withChannels(f, channels))));
  const animated = sharp(data, { raw: { width, height: height * pages, channels, pageHeight: height } });
  const timing = { loop: header.loop ?? 0, delay: header.delay?.slice(0, pages) };
  const encoded = await withTimeout(encodeAnimation(animated, output, timing), deadline).toBuffer();
  // An animation is not searched again: over its budget it answers as no fit.
  if (output.maxBytes !== undefined && encoded.length > output.maxBytes) {
    throw new ByteBudgetError(output.maxBytes, encoded.length);
  }
  seconds[seconds.length - 1]! += (performance.now() - start) / 1000;
  plan.steps.forEach((step, index) => onStep?.(step.name, seconds[index]!));
  return { data: encoded, contentType: `image/${output.format}`, width, height };
}

/** One frame through the planned steps, as pixels; each step's time is added to `seconds`. */
async function renderFrame(
  frame: RawImage,
  plan: RenderPlan,
  ctx: StepContext,
  run: { deadline: number | undefined; signal: AbortSignal | undefined },
  seconds: number[],
): Promise<RawImage> {
  const { deadline, signal } = run;
  let current: Pixels = { raw: frame };
  for (const [index, step] of plan.steps.entries()) {
    signal?.throwIfAborted();
    const start = performance.now();
    ctx.stepIndex = index;
    ctx.keptRegion = undefined;
    const result: RawImage | sharp.Sharp = await runStep(step, current, ctx, deadline);
    if (ctx.focalPoint) ctx.focalPoint = focalPointAfter(step, ctx.focalPoint, ctx);
    const raw: RawImage = isRaw(result) ? result : await toRaw(withTimeout(result, deadline));
    ctx.width = raw.width;
    ctx.height = raw.height;
    ctx.hasAlpha = raw.channels === 4;
    current = { raw };
    seconds[index]! += (performance.now() - start) / 1000;
  }
  return current.raw;
}

/** The frame's pixels with `channels` bands (an opaque alpha added where a frame has none). */
async function withChannels(frame: RawImage, channels: 3 | 4): Promise<Buffer> {
  if (frame.channels === channels) return frame.data;
  return fromRaw(frame).ensureAlpha().raw().toBuffer();
}

function encodeAnimation(
  image: sharp.Sharp,
  output: StepContext["output"],
  timing: { loop: number; delay: number[] | undefined },
): sharp.Sharp {
  // Duplicate frames kept: the result has the original's frames and delays, one for one.
  if (output.format === "gif") return image.gif({ ...timing, keepDuplicateFrames: true });
  // quality=auto and max-bytes search stills only: an animation keeps the default quality.
  const quality = typeof output.quality === "number" ? output.quality : 80;
  return image.webp({ quality, ...timing });
}
