import type { IncomingMessage, ServerResponse } from "node:http";
import { Router } from "express";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import { FastCounter, FastCounterSeries, FastHistogram, FastHistogramSeries } from "./fastMetrics";

/** Route label for requests no Express route matched (404s, static files, errors before routing). */
export const ROUTE_UNMATCHED = "unmatched";
/** Route label for requests answered by a bare node:http hot path (media cache hits). */
export const ROUTE_HOT_PATH = "hot_path";

export const HTTP_DURATION_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
];
export const TRANSFORMATION_DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** 1 KiB .. 64 MiB, x4 steps. */
export const UPLOAD_BYTES_BUCKETS = [1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];

const KNOWN_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

export type CacheTier = "memory" | "redis";
export type CacheResult = "hit" | "miss";
export type Dependency = "database" | "storage" | "redis" | (string & {});

export interface MetricsOptions {
  /** Added as the `service` label to every series of this registry. */
  service: string;
  /** Node.js process metrics (CPU, memory, event loop lag, GC, handles). Default true. */
  defaultMetrics?: boolean;
  /** Override the HTTP latency buckets (seconds). */
  httpBuckets?: readonly number[];
}

export interface Metrics {
  readonly service: string;
  /** This service's own registry (never prom-client's global one). */
  readonly registry: Registry;
  /** `http_request_duration_seconds{route,method,status_code}`. */
  readonly httpDuration: FastHistogram<"route" | "method" | "status_code">;
  /**
   * Records one request. `route` must be a pattern or a fixed label ({@link ROUTE_HOT_PATH},
   * {@link ROUTE_UNMATCHED}), never a raw URL. Allocation-free after the first call per label set.
   */
  observeHttp(route: string, method: string | undefined, status: number, seconds: number): void;

  // Domain metrics: each is registered on first access, so a service exposes only what it uses.
  // Touch the ones you use at start-up (e.g. destructure them) so they are scraped from zero.

  /** `upload_size_bytes` histogram; its `_sum` is the total bytes uploaded. (management) */
  readonly uploadBytes: Histogram;
  observeUpload(bytes: number): void;
  /** `media_cache_lookups_total{tier,result}`; all four series exist from the first access. */
  readonly cacheLookups: FastCounter<"tier" | "result">;
  /** Allocation-free; safe on the hot path. */
  cacheLookup(tier: CacheTier, result: CacheResult): void;
  /** `media_transformation_duration_seconds{transformation}` (label = transformation name, e.g. "thumbnail"). */
  readonly transformationDuration: Histogram<"transformation">;
  observeTransformation(name: string, seconds: number): void;
  /** Starts a timer; call the result when the transformation finished; returns the seconds elapsed. */
  startTransformationTimer(name: string): () => number;
  /** `media_singleflight_joins_total`: requests that waited for another request's transformation. */
  readonly singleFlightJoins: Counter;
  /** `media_transform_queue_depth`: transformations waiting for a worker. */
  readonly queueDepth: Gauge;
  /** Makes `queueDepth` read `source()` at every scrape instead of being set by hand. */
  trackQueueDepth(source: () => number): void;
  /** `media_transform_queue_rejections_total`: 503s because the queue was full. */
  readonly queueRejections: Counter;
  /** `dependency_errors_total{dependency}` (redis, storage, database, ...). */
  readonly dependencyErrors: Counter<"dependency">;
  dependencyError(dependency: Dependency): void;
}

function lazy<T>(create: () => T): () => T {
  let value: T | undefined;
  return () => (value ??= create());
}

export function createMetrics(options: MetricsOptions): Metrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service: options.service });
  if (options.defaultMetrics !== false) collectDefaultMetrics({ register: registry });

  const httpDuration = new FastHistogram(
    "http_request_duration_seconds",
    "HTTP request latency by route pattern, method and status",
    ["route", "method", "status_code"] as const,
    options.httpBuckets ?? HTTP_DURATION_BUCKETS,
    registry,
  );
  // route -> method -> status -> series: Map/array lookups only, no key strings built per request.
  const httpSeries = new Map<string, Map<string, (FastHistogramSeries | undefined)[]>>();
  const observeHttp = (route: string, method: string | undefined, status: number, seconds: number): void => {
    const m = method !== undefined && KNOWN_METHODS.has(method) ? method : "OTHER";
    let byMethod = httpSeries.get(route);
    if (!byMethod) httpSeries.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(m);
    if (!byStatus) byMethod.set(m, (byStatus = []));
    const code = Number.isInteger(status) && status >= 100 && status <= 599 ? status : 0;
    let series = byStatus[code];
    if (!series) series = byStatus[code] = httpDuration.child(route, m, code === 0 ? "unknown" : String(code));
    series.observe(seconds);
  };

  const uploadBytes = lazy(
    () =>
      new Histogram({
        name: "upload_size_bytes",
        help: "Size of accepted uploads in bytes (_sum = total bytes uploaded)",
        buckets: UPLOAD_BYTES_BUCKETS,
        registers: [registry],
      }),
  );

  const cache = lazy(() => {
    const counter = new FastCounter(
      "media_cache_lookups_total",
      "Media result cache lookups by tier and result",
      ["tier", "result"] as const,
      registry,
    );
    const s = (t: CacheTier, r: CacheResult): FastCounterSeries => counter.child(t, r);
    const series: Record<CacheTier, Record<CacheResult, FastCounterSeries>> = {
      memory: { hit: s("memory", "hit"), miss: s("memory", "miss") },
      redis: { hit: s("redis", "hit"), miss: s("redis", "miss") },
    };
    return { counter, series };
  });

  const transformationDuration = lazy(
    () =>
      new Histogram({
        name: "media_transformation_duration_seconds",
        help: "Duration of one transformation step by transformation name",
        labelNames: ["transformation"] as const,
        buckets: TRANSFORMATION_DURATION_BUCKETS,
        registers: [registry],
      }),
  );

  const singleFlightJoins = lazy(
    () =>
      new Counter({
        name: "media_singleflight_joins_total",
        help: "Requests that joined an in-flight transformation instead of starting one",
        registers: [registry],
      }),
  );

  let queueDepthSource: (() => number) | undefined;
  const queueDepth = lazy(
    () =>
      new Gauge({
        name: "media_transform_queue_depth",
        help: "Transformations waiting for a worker",
        registers: [registry],
        collect() {
          if (queueDepthSource) this.set(queueDepthSource());
        },
      }),
  );

  const queueRejections = lazy(
    () =>
      new Counter({
        name: "media_transform_queue_rejections_total",
        help: "Requests rejected (503) because the transformation queue was full",
        registers: [registry],
      }),
  );

  const dependencyErrors = lazy(
    () =>
      new Counter({
        name: "dependency_errors_total",
        help: "Errors talking to a dependency (redis, storage, database)",
        labelNames: ["dependency"] as const,
        registers: [registry],
      }),
  );

  return {
    service: options.service,
    registry,
    httpDuration,
    observeHttp,
    get uploadBytes() {
      return uploadBytes();
    },
    observeUpload: (bytes) => uploadBytes().observe(bytes),
    get cacheLookups() {
      return cache().counter;
    },
    cacheLookup: (tier, result) => {
      const byTier = cache().series[tier];
      if (byTier) byTier[result].inc();
      else cache().counter.child(tier, result).inc();
    },
    get transformationDuration() {
      return transformationDuration();
    },
    observeTransformation: (name, seconds) => transformationDuration().observe({ transformation: name }, seconds),
    startTransformationTimer: (name) => {
      const start = performance.now();
      return () => {
        const seconds = (performance.now() - start) / 1000;
        transformationDuration().observe({ transformation: name }, seconds);
        return seconds;
      };
    },
    get singleFlightJoins() {
      return singleFlightJoins();
    },
    get queueDepth() {
      return queueDepth();
    },
    trackQueueDepth: (source) => {
      queueDepthSource = source;
      queueDepth();
    },
    get queueRejections() {
      return queueRejections();
    },
    get dependencyErrors() {
      return dependencyErrors();
    },
    dependencyError: (dependency) => dependencyErrors().inc({ dependency }),
  };
}

/** GET handler usable from Express or a bare node:http server. */
export function metricsHandler(metrics: Pick<Metrics, "registry">) {
  return async (_req: IncomingMessage, res: ServerResponse): Promise<void> => {
    try {
      const body = await metrics.registry.metrics();
      res.statusCode = 200;
      res.setHeader("Content-Type", metrics.registry.contentType);
      res.setHeader("Cache-Control", "no-store");
      res.end(body);
    } catch {
      res.statusCode = 500;
      res.setHeader("Content-Type", "text/plain; charset=utf-8");
      res.setHeader("Cache-Control", "no-store");
      res.end("metrics collection failed\n");
    }
  };
}

/** Router serving `GET /metrics` (Prometheus text format, `text/plain; version=0.0.4`). */
export function metricsRouter(metrics: Pick<Metrics, "registry">, options: { path?: string } = {}): Router {
  const router = Router();
  const handler = metricsHandler(metrics);
  router.get(options.path ?? "/metrics", (req, res) => handler(req, res));
  return router;
}
