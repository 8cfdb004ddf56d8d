// The spans of a MISS that the delivery code opens (docs/tracing.md): the wait for a limiter slot,
// the render with its stages, the admission by planned work inside it. Each is one boolean test
// when tracing is off.
import { inSpan, recordSpan, spanRecorder, tracingActive } from "@media-platform/observability";
import type { RenderFn } from "../render/pipeline/render";

/** Call when the limiter's slot is granted: records the wait since this call as `media.limiter.wait`. */
export function renderQueued(): (() => void) | undefined {
  if (!tracingActive()) return undefined;
  const startMs = Date.now();
  return () => recordSpan("media.limiter.wait", startMs, Date.now());
}

/**
 * `render` as the span `media.render`: its stages (read, decode, steps, encode) become child spans,
 * and so does the admission by planned work (`media.admission`, with the plan's pixels and cost;
 * its length is the wait). `render` itself when tracing is off.
 */
export function tracedRender(render: RenderFn, key: string, bytesIn: number): RenderFn {
  if (!tracingActive()) return render;
  return (input, options) =>
    inSpan("media.render", { "media.key": key, "media.original.bytes": bytesIn }, () =>
      render(input, {
        ...options,
        onStage: spanRecorder(),
        admit:
          options.admit &&
          ((plan) =>
            inSpan(
              "media.admission",
              { "media.work.pixels": plan.workPixels, "media.work.cost_ms": Math.round(plan.workCost * 1000) / 1000 },
              () => options.admit!(plan),
            )),
      }),
    );
}
