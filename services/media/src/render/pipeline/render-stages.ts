/**
 * Stages of one render (read, decode, each step, encode, each `quality=auto` trial encode) reported
 * with their wall-clock start and end, for tracing. The render may run in a render process whose
 * spans the service records (it sends the stages over IPC), so the pipeline reports plain facts,
 * never spans. Without a sink (tracing off) nothing is measured.
 */
export interface RenderStage {
  name: string;
  /** Epoch milliseconds. */
  startMs: number;
  endMs: number;
  attributes?: Record<string, string | number | boolean>;
}

export type RenderStageSink = (stage: RenderStage) => void;

/** Awaits `work` and reports it as `name`, with `attributes` (or those computed from the result). */
export async function timedStage<T>(
  sink: RenderStageSink | undefined,
  name: string,
  work: () => Promise<T>,
  attributes?: (result: T) => RenderStage["attributes"],
): Promise<T> {
  if (!sink) return work();
  const startMs = Date.now();
  const result = await work();
  sink({ name, startMs, endMs: Date.now(), attributes: attributes?.(result) });
  return result;
}
