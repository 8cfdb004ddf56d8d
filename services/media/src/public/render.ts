/**
 * The public surface of `@media-platform/media/render`: the render pipeline as a library (a
 * parsed media path and an original in, the encoded rendition out), with the pixel workers and
 * the face detector it runs on, and the perceptual metric the quality search uses. The benches
 * and the documentation scripts rely on these names only; everything else under src/ is
 * internal.
 */
export {
  render,
  planRendition,
  type RenderDeps,
  type RenderInput,
  type RenderOptions,
  type Rendition,
  type PlannedRendition,
} from "../render/pipeline/render";
export { DEFAULT_AUTO_QUALITY_TARGET } from "../render/pipeline/encode-search";
export { createPixelWorkers, type PixelWorkerPool } from "../render/pixels/pool";
export { createFaceDetector, type ManagedFaceDetector } from "../faces";
export { toRaw } from "../render/raw";
export { ssimulacra2, Ssimulacra2Reference } from "../perceptual/ssimulacra2";
export type { RawImage } from "../render/types";
export { ByteBudgetError } from "../render/errors";
