import type { Logger, Metrics } from "@media-platform/observability";
import type { MediaLimits } from "@media-platform/contracts";
import { defaultMediaLimits } from "@media-platform/contracts";
import { render } from "../../src/render/pipeline/render";
import type { RenderFn } from "../../src/render/pipeline/render";
import { createMediaServer, type MediaServer, type MediaServerOptions } from "../../src/server";
import { MemoryBlobStore } from "./memory-store";

/**
 * The real pipeline (pipeline/render.ts) with stand-ins for the pixel workers and face
 * detector: the delivery tests use geometric steps (thumbnail, crop, fit), which need neither.
 */
export function pipelineRender(limits: MediaLimits = defaultMediaLimits, limitInputPixels = 100_000_000): RenderFn {
  const deps = {
    limits,
    limitInputPixels,
    pixels: {
      run: async (kernel: string) => {
        throw new Error(`delivery tests do not run pixel kernels (${kernel})`);
      },
    },
    faces: { detect: async () => [] },
  };
  return (input, options) => render(input, deps, options);
}

export interface CountingRender {
  render: RenderFn;
  /** Cache keys rendered, in call order. */
  calls: string[];
}

/** Wraps a render function and records every call: "one transformation" is `calls.length === 1`. */
export function countingRender(inner: RenderFn = pipelineRender()): CountingRender {
  const calls: string[] = [];
  return {
    calls,
    render: (input, options) => {
      calls.push(input.cacheKey);
      return inner(input, options);
    },
  };
}

/**
 * A render that blocks until the test calls release(): lets a test hold a transformation in
 * flight deterministically (no sleeps, no timing thresholds).
 */
export function gatedRender(inner: RenderFn = pipelineRender()): CountingRender & {
  release(): void;
  /** Resolves once `n` renders have started. */
  started(n?: number): Promise<void>;
} {
  const calls: string[] = [];
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const waiters: Array<{ n: number; resolve: () => void }> = [];
  return {
    calls,
    render: async (input, options) => {
      calls.push(input.cacheKey);
      for (const w of waiters.filter((w) => calls.length >= w.n)) w.resolve();
      await gate;
      return inner(input, options);
    },
    release: () => open(),
    started: (n = 1) =>
      calls.length >= n ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ n, resolve })),
  };
}

/**
 * Current value of a metric on the server's registry: the sum of the samples whose labels include
 * `labels` (counters and gauges; for a histogram pass e.g. `<name>_count` samples via metricName).
 */
export async function metricValue(
  media: { metrics: Pick<Metrics, "registry"> },
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const metric = media.metrics.registry.getSingleMetric(name);
  if (!metric) throw new Error(`no metric ${name}`);
  const { values } = await metric.get();
  return values
    .filter((v) => Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want))
    .reduce((sum, v) => sum + v.value, 0);
}

/** Requests that joined another request's transformation (media_singleflight_joins_total). */
export const singleFlightJoins = (media: { metrics: Pick<Metrics, "registry"> }) =>
  metricValue(media, "media_singleflight_joins_total");

export interface TestMedia extends MediaServer {
  store: MemoryBlobStore;
  url: string;
}

/** A listening in-process media server over a memory blob store (127.0.0.1, free port). */
export async function startTestMedia(
  options: Partial<MediaServerOptions> & {
    render?: RenderFn;
    store?: MemoryBlobStore;
    logger?: Logger;
    isDraining?: () => boolean;
  } = {},
): Promise<TestMedia> {
  const store = options.store ?? new MemoryBlobStore();
  const { render: renderFn, store: _store, logger, isDraining, ...serverOptions } = options;
  const media = createMediaServer({
    store,
    render: renderFn ?? pipelineRender(),
    options: serverOptions,
    logger,
    isDraining,
  });
  const url = await media.listen(0, "127.0.0.1");
  return Object.assign(media, { store, url });
}
