import type sharp from "sharp";
import type { FocalPoint, MediaLimits, ResolvedParams, TransformationName } from "@media-platform/contracts";
import type { OutputFormat, RawImage, Size, StepContext } from "../types";

interface StepShape<N extends TransformationName> {
  /**
   * The size this step produces from an input of `input`, computed from the original's header
   * before any pixel is decoded (the runner checks it against maxOutputPixels and the work
   * budget). Throws TransformationInputError when the step cannot apply at that size.
   */
  outputSize(input: Size, params: ResolvedParams<N>, limits: MediaLimits): Size;
  /**
   * True when this step, with these parameters, cannot apply frame by frame to an animation (it
   * chooses its region from the pixels, so frames would jump): the render then takes the first
   * frame only, as a still. Default false: the step applies to every frame.
   */
  posterOnly?(params: ResolvedParams<N>): boolean;
  /** The parameter a too-large output is blamed on (400 path `<name>.<param>`); default the step. */
  sizeParam?: string;
  /**
   * True when this step, with these parameters, looks at ctx.focalPoint: only then does delivery
   * read the asset's attributes blob (an ordinary request pays nothing). Default false.
   */
  usesFocalPoint?(params: ResolvedParams<N>): boolean;
  /**
   * Where a focal point (fractions of this step's `input`) lies in its `output`, or undefined when
   * the output no longer shows it. Default (keepFocalPointWhenSameSize): kept when the step keeps
   * the size (colour steps), dropped otherwise.
   */
  mapFocalPoint?(
    point: FocalPoint,
    input: Size,
    output: Size,
    params: ResolvedParams<N>,
    ctx: Pick<StepContext, "keptRegion" | "limits">,
  ): FocalPoint | undefined;
}

/**
 * A step that takes a sharp pipeline. "encoded": the pipeline as it stands (for the first step,
 * the encoded original, so libvips can shrink JPEG/WebP on load). "srgb": the runner guarantees
 * 8-bit sRGB with 3 or 4 bands (a grey or CMYK original is converted first).
 * `apply` may extend the pipeline and returns it; the runner materialises between steps, so a
 * step never reasons about sharp's operation order across steps.
 */
export interface PipelineStep<N extends TransformationName> extends StepShape<N> {
  input: "encoded" | "srgb";
  apply(image: sharp.Sharp, params: ResolvedParams<N>, ctx: StepContext): Promise<sharp.Sharp>;
}

/** A step that works on decoded 8-bit sRGB pixels (the runner materialises them). */
export interface RawStep<N extends TransformationName> extends StepShape<N> {
  input: "raw";
  apply(image: RawImage, params: ResolvedParams<N>, ctx: StepContext): Promise<RawImage | sharp.Sharp>;
}

/** One processing step, typed from its entry in the contracts' parameter table. */
export type Transformation<N extends TransformationName> = PipelineStep<N> | RawStep<N>;

/** Steps that keep the size of their input. */
export const sameSize = (input: Size): Size => ({ width: input.width, height: input.height });

/** The default of mapFocalPoint: a step that keeps the size keeps the point where it was. */
export const keepFocalPointWhenSameSize = (point: FocalPoint, input: Size, output: Size): FocalPoint | undefined =>
  input.width === output.width && input.height === output.height ? point : undefined;

const FORMATS_WITH_ALPHA: ReadonlySet<OutputFormat> = new Set(["png", "webp", "avif", "gif", "tiff"]);

export const formatHasAlpha = (format: OutputFormat): boolean => FORMATS_WITH_ALPHA.has(format);
