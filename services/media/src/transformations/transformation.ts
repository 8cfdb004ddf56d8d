import type sharp from "sharp";
import type {
  AssetFormat,
  MediaLimits,
  ResolvedParams,
  TransformationName,
  transformationSpecs,
} from "@media-platform/contracts";
import type { RawImage } from "../pipeline/raw";

/** Renditions keep the stored format. */
export type OutputFormat = AssetFormat;

/** A detected face, in pixels of the image handed to the detector. */
export interface FaceBox {
  x: number;
  y: number;
  width: number;
  height: number;
  score: number;
}

export interface FaceDetector {
  detect(image: RawImage): Promise<FaceBox[]>;
}

/** Runs a named pixel kernel off the event loop (worker threads). */
export interface PixelWorkers {
  run<P>(kernel: string, image: RawImage, params: P): Promise<RawImage>;
}

export interface StepContext {
  /** The cache key (request path): seeds deterministic randomness such as add-noise. */
  cacheKey: string;
  /** Position of this step in the URL, 0-based. */
  stepIndex: number;
  /** Size of the image entering this step, after EXIF orientation. */
  width: number;
  height: number;
  hasAlpha: boolean;
  /** Encoder settings; a step may set quality (thumbnail). */
  output: { format: OutputFormat; quality?: number; effort?: number };
  limits: MediaLimits;
  pixels: PixelWorkers;
  faces: FaceDetector;
}

/**
 * One processing step. `apply` receives a pipeline whose pending operations it may extend
 * and returns the pipeline for the next step; the runner materialises between steps, so a
 * step never has to reason about sharp's internal operation order across steps.
 */
export interface Transformation<N extends TransformationName = TransformationName> {
  name: N;
  /** The parameter table from packages/contracts (the single definition of the rules). */
  params: (typeof transformationSpecs)[N]["params"];
  apply(image: sharp.Sharp, params: ResolvedParams<N>, ctx: StepContext): Promise<sharp.Sharp>;
}

export const defineTransformation = <N extends TransformationName>(t: Transformation<N>): Transformation<N> => t;

/**
 * The parameters are valid but cannot apply to this image (e.g. a crop region outside it,
 * an output above the pixel cap): the service answers 400 naming `path`.
 */
export class TransformationInputError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(message);
    this.name = "TransformationInputError";
  }
}

const FORMATS_WITH_ALPHA: ReadonlySet<OutputFormat> = new Set(["png", "webp", "avif", "gif", "tiff"]);

export const formatHasAlpha = (format: OutputFormat): boolean => FORMATS_WITH_ALPHA.has(format);

/** Refuses (400) an output larger than the deployment's pixel cap before any work is done. */
export function assertOutputPixels(path: string, width: number, height: number, limits: MediaLimits): void {
  if (width * height > limits.maxOutputPixels) {
    throw new TransformationInputError(
      path,
      `the output would be ${width} x ${height} = ${width * height} pixels, above the cap of ${limits.maxOutputPixels} (maxOutputPixels)`,
    );
  }
}
