/**
 * The render core's shared vocabulary: what the pipeline, the transformations, the pixel
 * workers and the face detector hand each other. Everything under render/ imports it; it imports
 * only the contracts and the pixel kernels' own image and parameter types (the kernels run in
 * worker threads and import nothing).
 */
import type { FocalPoint, MediaLimits, RasterFormat } from "@media-platform/contracts";
import type { KernelName, KernelParams } from "./pixels/kernels";
import type { RawImage } from "./pixels/kernels/kernel";

export type { RawImage };

/** Renditions keep the stored format (an SVG original renders as PNG: contracts' renditionFormatOf). */
export type OutputFormat = RasterFormat;

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

/** Runs a pixel kernel off the event loop (worker threads); typed by the kernel's name. */
export interface PixelWorkers {
  run<K extends KernelName>(
    kernel: K,
    image: RawImage,
    params: KernelParams<K>,
    signal?: AbortSignal,
  ): Promise<RawImage>;
}

export interface Size {
  width: number;
  height: number;
}

/** A rectangle of an image, in its pixels. */
export interface Region {
  left: number;
  top: number;
  width: number;
  height: number;
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
  /**
   * Encoder settings; a step may set quality (thumbnail, format: a number, or auto for the
   * perceptual search) and a byte budget (max-bytes).
   */
  output: { format: OutputFormat; quality?: number | "auto"; effort?: number; maxBytes?: number };
  limits: MediaLimits;
  pixels: PixelWorkers;
  faces: FaceDetector;
  /** Aborted when the request is cancelled or times out: pixel kernels stop with it. */
  signal?: AbortSignal;
  /**
   * The asset's focal point in fractions of the image entering this step (the asset's own is of
   * the oriented original; the runner maps it through the steps before). Absent when the asset
   * has none, no step of the request uses it, or an earlier step cropped it away.
   */
  focalPoint?: FocalPoint;
  /**
   * The region of its input a cropping step kept, set by its apply for its mapFocalPoint (crop:
   * with gravity=attention/entropy only the pixels tell which). Cleared before every step.
   */
  keptRegion?: Region;
  /** Originals of the assets the request's overlay steps draw, by asset id (read by delivery). */
  overlays?: ReadonlyMap<string, Buffer>;
  /** sharp's decompression-bomb guard, for originals a step decodes itself (an overlay). */
  limitInputPixels?: number;
  /** Epoch ms by which libvips work is cancelled (pipeline/deadline.ts), for pipelines a step starts itself. */
  deadline?: number;
}
