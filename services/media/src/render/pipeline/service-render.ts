import type { CloseHook } from "@media-platform/observability";
import { createFaceDetector } from "../../faces";
import { createPixelWorkers } from "../pixels/pool";
import { DecodedImages } from "./decoded-images";
import { isolatingRender, RenderProcessPool } from "./killable-render";
import { configureSharp, type RenderDeps, type RenderFn } from "./render";

/** The settings the production render is made from (MediaConfig's fields of the same names). */
export interface ServiceRenderSettings extends Pick<RenderDeps, "limits" | "limitInputPixels" | "autoQualityTarget"> {
  avifEffort: number;
  maxAnimationFrames: number;
  /** libvips threads per image (MEDIA_VIPS_CONCURRENCY). */
  vipsConcurrency: number;
  /** Pixel worker threads (MEDIA_WORKERS); 0 = the pool's default. */
  workers: number;
  requestTimeoutMs: number;
  /** MEDIA_DECODED_CACHE_BYTES; 0 = no shared decodes. */
  decodedCacheBytes: number;
  /** Render processes for costly renders (MEDIA_RENDER_PROCESSES). */
  renderProcesses: number;
  /** Planned cost (ms) from which a render runs in a render process (MEDIA_ISOLATED_RENDER_COST). */
  isolatedRenderCost: number;
}

export interface ServiceRender {
  render: RenderFn;
  /** The shared decodes, dropped by a purge; undefined when off. */
  decoded: DecodedImages | undefined;
  /** Render processes, pixel workers, face detector: closed after the server, in this order. */
  closeHooks: CloseHook[];
}

/**
 * The production render: the pipeline with real pixel worker threads and face detector in this
 * process, costly renders in killable render processes (killable-render.ts). startMedia loads
 * this module only when no render is injected, so in-process tests never start workers.
 */
export function createServiceRender(settings: ServiceRenderSettings): ServiceRender {
  configureSharp({ concurrency: settings.vipsConcurrency });
  const pixels = createPixelWorkers({
    size: settings.workers > 0 ? settings.workers : undefined,
    taskTimeoutMs: settings.requestTimeoutMs,
  });
  const faces = createFaceDetector();
  const decoded = settings.decodedCacheBytes > 0 ? new DecodedImages(settings.decodedCacheBytes) : undefined;
  const renderDeps: RenderDeps = {
    decoded,
    pixels,
    faces,
    limits: settings.limits,
    limitInputPixels: settings.limitInputPixels,
    avifEffort: settings.avifEffort,
    maxAnimationFrames: settings.maxAnimationFrames,
    autoQualityTarget: settings.autoQualityTarget,
  };
  const renderProcesses = new RenderProcessPool(settings.renderProcesses, {
    limits: settings.limits,
    limitInputPixels: settings.limitInputPixels,
    avifEffort: settings.avifEffort,
    maxAnimationFrames: settings.maxAnimationFrames,
    vipsConcurrency: settings.vipsConcurrency,
    pixelWorkers: 1,
    requestTimeoutMs: settings.requestTimeoutMs,
  });
  return {
    render: isolatingRender(renderDeps, renderProcesses, settings.isolatedRenderCost),
    decoded,
    closeHooks: [
      { name: "render processes", close: () => renderProcesses.close() },
      { name: "pixel workers", close: () => pixels.close() },
      { name: "face detector", close: () => faces.close() },
    ],
  };
}
