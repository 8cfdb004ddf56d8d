/** What the service and its render processes (render-process.ts) send each other over IPC. */
import type { MediaLimits } from "@media-platform/contracts";
import type { RenderInput, Rendition } from "./render";
import type { RenderStage } from "./render-stages";

/** The settings a render process starts with: the service's own, sent once over IPC. */
export interface RenderProcessSettings {
  limits: MediaLimits;
  limitInputPixels: number;
  avifEffort: number;
  maxAnimationFrames: number;
  vipsConcurrency: number;
  /** Pixel worker threads of this process. */
  pixelWorkers: number;
  requestTimeoutMs: number;
}

/** One render sent to a render process: the input with the whole original as bytes. */
export interface RenderProcessRequest {
  id: number;
  input: Omit<RenderInput, "original">;
  original: Uint8Array;
  deadline: number | undefined;
  /** Send the render's stages back (the service is tracing it). */
  stages?: boolean;
}

/** What a render process answers: ready once, then per render its steps and its result or error. */
export type RenderProcessReply =
  | { ready: true }
  | { id: number; step: { transformation: string; seconds: number } }
  | { id: number; stage: RenderStage }
  | { id: number; rendition: Rendition }
  | { id: number; error: { name: string; message: string; [field: string]: unknown } };
