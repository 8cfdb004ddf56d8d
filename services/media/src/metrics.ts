import { Gauge } from "prom-client";
import {
  createMetrics,
  FastCounter,
  FastHistogram,
  type FastCounterSeries,
  type Metrics,
  type MetricsOptions,
} from "@media-platform/observability";

/**
 * Every series of the media service, created (and so scraped from zero) when the registry is.
 * The shared part (`http_request_duration_seconds`, `dependency_errors_total`, process metrics)
 * comes from @media-platform/observability; everything below is media's own.
 *
 * Each event is counted once, at one site:
 *   memory-tier lookup  media_cache_lookups_total{tier="memory"}  delivery/hot-path.ts (its HITs only:
 *                       a request it declines is looked up again by RenditionService.deliver, which
 *                       counts that lookup, hit or miss; so one count per request either way)
 *   Redis-tier lookup   media_cache_lookups_total{tier="redis"}   RenditionService, once per flight
 *   step duration       media_transformation_duration_seconds     RenditionService (render's onStep)
 *   single-flight join  media_singleflight_joins_total            RenditionService.deliver
 *   queue-full 503      media_transform_queue_rejections_total    app.ts error handler
 *   queue depth         media_transform_queue_depth               read from the limiter at scrape time
 *   the events below    media_<event>_total                       count(event), see mediaEventHelp
 *   eager renders       media_eager_renders_total{outcome}        eager/eager-renders.ts
 *   shared decodes      media_decoded_bytes, media_decoded_images read from pipeline/decoded-images.ts at scrape time
 *   Redis / blob store  dependency_errors_total{dependency}       RedisCache, RenditionService, originals
 *   304s, 4xx, 5xx      http_request_duration_seconds{status_code}
 */

export const TRANSFORMATION_DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export type CacheTier = "memory" | "redis";
export type EagerOutcome = "queued" | "done" | "failed";

/** What pipeline/decoded-images.ts shows at a scrape. */
export interface DecodedImagesView {
  heldBytes: number;
  peakBytes: number;
  budgetBytes: number;
  decodes: number;
  shared: number;
}
export type CacheResult = "hit" | "miss";

/** Events counted as `media_<name>_total` (no labels). */
export const counterHelp = {
  misses: "Responses answered X-Cache: MISS (the request ran the transformation)",
  transformations: "Transformations run (blob read + render)",
  hits_peer: "Results another replica computed while this one waited for its Redis lock",
  lock_waits: "Times this replica found another replica's Redis lock on a URL and waited for its result",
  timeouts: "Requests that hit MEDIA_REQUEST_TIMEOUT_MS",
} as const;

export type CounterName = keyof typeof counterHelp;

/** Read-only view of the event counters (tests, bench): the same numbers /metrics shows. */
export interface MediaCounters {
  get(name: CounterName): number;
}

export interface MediaMetrics extends Metrics {
  /** `media_cache_lookups_total{tier,result}`; all four series exist from the start. */
  readonly cacheLookups: FastCounter<"tier" | "result">;
  /** Allocation-free; safe on the hot path. */
  cacheLookup(tier: CacheTier, result: CacheResult): void;
  /** The pre-resolved series of one tier/result (the hot path keeps its memory-hit series). */
  cacheLookupSeries(tier: CacheTier, result: CacheResult): FastCounterSeries;
  /** `media_transformation_duration_seconds{transformation}` (label = step name, e.g. "thumbnail"). */
  readonly transformationDuration: FastHistogram<"transformation">;
  observeTransformation(name: string, seconds: number): void;
  /** `media_singleflight_joins_total`: requests that waited for another request's transformation. */
  singleFlightJoin(): void;
  /** `media_transform_queue_rejections_total`: 503s because the queue was full. */
  queueRejection(): void;
  /** Makes `media_transform_queue_depth` read `source()` at every scrape. */
  trackQueueDepth(source: () => number): void;
  /** `media_<event>_total`. */
  count(event: CounterName): void;
  /** Makes `media_decoded_bytes{kind}` (held, peak, budget) and `media_decoded_images{event}` read `source` at every scrape. */
  trackDecodedImages(source: DecodedImagesView): void;
  /** `media_eager_renders_total{outcome}`: eager preset renders queued, done and failed (eager/). */
  eagerRender(outcome: EagerOutcome): void;
  readonly counters: MediaCounters;
}

/** The media service's registry (label service="media") with all of its series. */
export function createMediaMetrics(options: Partial<Omit<MetricsOptions, "service">> = {}): MediaMetrics {
  const base = createMetrics({ ...options, service: "media" });
  const { registry } = base;

  const cacheLookups = new FastCounter(
    "media_cache_lookups_total",
    "Media result cache lookups by tier and result",
    ["tier", "result"] as const,
    registry,
  );
  const lookupSeries: Record<CacheTier, Record<CacheResult, FastCounterSeries>> = {
    memory: { hit: cacheLookups.child("memory", "hit"), miss: cacheLookups.child("memory", "miss") },
    redis: { hit: cacheLookups.child("redis", "hit"), miss: cacheLookups.child("redis", "miss") },
  };

  const transformationDuration = new FastHistogram(
    "media_transformation_duration_seconds",
    "Duration of one transformation step by transformation name",
    ["transformation"] as const,
    TRANSFORMATION_DURATION_BUCKETS,
    registry,
  );

  const singleFlightJoins = new FastCounter(
    "media_singleflight_joins_total",
    "Requests that joined an in-flight transformation instead of starting one",
    [],
    registry,
  ).child();

  let queueDepthSource: (() => number) | undefined;
  new Gauge({
    name: "media_transform_queue_depth",
    help: "Transformations waiting for a worker",
    registers: [registry],
    collect() {
      this.set(queueDepthSource ? queueDepthSource() : 0);
    },
  });

  const queueRejections = new FastCounter(
    "media_transform_queue_rejections_total",
    "Requests rejected (503) because the transformation queue was full",
    [],
    registry,
  ).child();

  const eagerRenders = new FastCounter(
    "media_eager_renders_total",
    "Eager preset renders (after an upload or replace) by outcome: queued, done, failed",
    ["outcome"] as const,
    registry,
  );
  const eagerSeries = {
    queued: eagerRenders.child("queued"),
    done: eagerRenders.child("done"),
    failed: eagerRenders.child("failed"),
  };

  let decodedSource: DecodedImagesView | undefined;
  new Gauge({
    name: "media_decoded_bytes",
    help: "Decoded originals shared between renditions (MEDIA_DECODED_CACHE_BYTES): bytes held now, the most held at once, the budget",
    labelNames: ["kind"],
    registers: [registry],
    collect() {
      this.set({ kind: "held" }, decodedSource?.heldBytes ?? 0);
      this.set({ kind: "peak" }, decodedSource?.peakBytes ?? 0);
      this.set({ kind: "budget" }, decodedSource?.budgetBytes ?? 0);
    },
  });
  new Gauge({
    name: "media_decoded_images",
    help: "Shared decodes since start: decodes run, and renditions that used another rendition's decode",
    labelNames: ["event"],
    registers: [registry],
    collect() {
      this.set({ event: "decode" }, decodedSource?.decodes ?? 0);
      this.set({ event: "shared" }, decodedSource?.shared ?? 0);
    },
  });

  const events = {} as Record<CounterName, FastCounterSeries>;
  for (const name of Object.keys(counterHelp) as CounterName[]) {
    events[name] = new FastCounter(`media_${name}_total`, counterHelp[name], [], registry).child();
  }

  return {
    ...base,
    cacheLookups,
    cacheLookup: (tier, result) => lookupSeries[tier][result].inc(),
    cacheLookupSeries: (tier, result) => lookupSeries[tier][result],
    transformationDuration,
    // FastHistogram keeps one series per name: no label object hashed per step.
    observeTransformation: (name, seconds) => transformationDuration.child(name).observe(seconds),
    singleFlightJoin: () => singleFlightJoins.inc(),
    queueRejection: () => queueRejections.inc(),
    trackQueueDepth: (source) => {
      queueDepthSource = source;
    },
    count: (event) => events[event].inc(),
    eagerRender: (outcome) => eagerSeries[outcome].inc(),
    trackDecodedImages: (source) => {
      decodedSource = source;
    },
    counters: { get: (name) => events[name].value },
  };
}
