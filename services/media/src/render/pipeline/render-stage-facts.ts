// The attributes of a render's stages (render-stages.ts): pixel counts and the cost estimate.
import type { Size } from "../types";
import type { RenderPlan } from "./plan";
import type { RenderStage } from "./render-stages";

/** Epoch milliseconds of a `performance.now()` reading taken earlier. */
const epochOf = (performanceMs: number): number => Date.now() - (performance.now() - performanceMs);

/** The plan's facts, on the read stage (the first one after admission). */
export const planAttributes = (plan: RenderPlan, size: Size) => (): RenderStage["attributes"] => ({
  "media.original.pixels": size.width * size.height,
  "media.work.pixels": plan.workPixels,
  "media.work.cost_ms": Math.round(plan.workCost * 1000) / 1000,
  "media.steps": plan.steps.length,
});

export const decodeStage = (startPerformanceMs: number): RenderStage => ({
  name: "render.decode",
  startMs: epochOf(startPerformanceMs),
  endMs: Date.now(),
});

export function stepStage(name: string, startPerformanceMs: number, output: Size): RenderStage {
  return {
    name: `render.step ${name}`,
    startMs: epochOf(startPerformanceMs),
    endMs: Date.now(),
    attributes: { "media.transformation": name, "media.output.pixels": output.width * output.height },
  };
}

export function encodeStage(
  output: { format: string; quality?: number | "auto" },
  startPerformanceMs: number,
  bytes: number,
  size: Size,
): RenderStage {
  return {
    name: "render.encode",
    startMs: epochOf(startPerformanceMs),
    endMs: Date.now(),
    attributes: {
      "media.format": output.format,
      "media.quality": String(output.quality ?? "default"),
      "media.output.pixels": size.width * size.height,
      "media.bytes": bytes,
    },
  };
}
