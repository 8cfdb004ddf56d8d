import { inSpan, spanRecorder } from "@media-platform/observability";
import type { RenderCallOptions } from "./render";
import type { RenderStageSink } from "./render-stages";

/**
 * A render sent to a render process, as the span `render.process`: the stages the process reports
 * over IPC become its children (the process itself loads no tracing SDK). Stages are asked for only
 * when the caller traces the render.
 */
export function inRenderProcessSpan<T>(
  options: RenderCallOptions,
  render: (onStage: RenderStageSink | undefined) => Promise<T>,
): Promise<T> {
  if (!options.onStage) return render(undefined);
  return inSpan("render.process", undefined, () => render(spanRecorder()));
}
