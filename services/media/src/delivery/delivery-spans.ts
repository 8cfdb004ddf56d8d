// The spans of a MISS that the delivery code opens (docs/tracing.md): the wait for a limiter slot,
// the admission by planned work, the render with its stages. Each is one boolean test when tracing
// is off.
import { inSpan, recordSpan, spanRecorder, tracingActive } from "@media-platform/observability";
import type { RenderPlan } from "../render/pipeline/plan";
import type { RenderStageSink } from "../render/pipeline/render-stages";

/** Call when the limiter's slot is granted: records the wait since this call as `media.limiter.wait`. */
export function renderQueued(): (() => void) | undefined {
  if (!tracingActive()) return undefined;
  const startMs = Date.now();
  return () => recordSpan("media.limiter.wait", startMs, Date.now());
}

/** The admission by planned work (MEDIA_MAX_INFLIGHT_PIXELS, client share), with the plan's size and cost. */
export function admissionSpan<T>(plan: RenderPlan, admit: () => Promise<T>): Promise<T> {
  return inSpan(
    "media.admission",
    { "media.work.pixels": plan.workPixels, "media.work.cost_ms": Math.round(plan.workCost * 1000) / 1000 },
    admit,
  );
}

/** The render of a MISS; its stages (read, decode, steps, encode) become child spans. */
export function renderSpan<T>(
  key: string,
  bytesIn: number,
  render: (onStage: RenderStageSink | undefined) => Promise<T>,
) {
  return inSpan("media.render", { "media.key": key, "media.original.bytes": bytesIn }, () => render(spanRecorder()));
}
