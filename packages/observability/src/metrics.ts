import type { IncomingMessage, ServerResponse } from "node:http";
import { Router } from "express";
import { collectDefaultMetrics, Counter, Registry } from "prom-client";
import { FastHistogram, FastHistogramSeries } from "./fastMetrics";
import { exemplarLabels, type Span, type SpanIds } from "./tracing";
import { exposition } from "./openmetrics";

/** Route label for requests no Express route matched (404s, static files, errors before routing). */
export const ROUTE_UNMATCHED = "unmatched";
/** Route label for requests answered by a bare node:http hot path (media cache hits). */
export const ROUTE_HOT_PATH = "hot_path";

export const HTTP_DURATION_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
];

const KNOWN_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

export type Dependency = "database" | "storage" | "redis" | (string & {});

export interface MetricsOptions {
  /** Added as the `service` label to every series of this registry. */
  service: string;
  /** Node.js process metrics (CPU, memory, event loop lag, GC, handles). Default true. */
  defaultMetrics?: boolean;
  /** Override the HTTP latency buckets (seconds). */
  httpBuckets?: readonly number[];
  /** Dependencies whose `dependency_errors_total` series are shown from zero, before the first error. */
  dependencies?: readonly Dependency[];
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
  observeHttp(route: string, method: string | undefined, status: number, seconds: number, span?: Span | SpanIds): void;

  /**
   * `dependency_errors_total{dependency}` (redis, storage, database, ...). Service-specific series
   * live in the service's own `src/metrics.ts`, registered on `registry`.
   */
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
  const observeHttp = (
    route: string,
    method: string | undefined,
    status: number,
    seconds: number,
    span?: Span | SpanIds,
  ): void => {
    const m = method !== undefined && KNOWN_METHODS.has(method) ? method : "OTHER";
    let byMethod = httpSeries.get(route);
    if (!byMethod) httpSeries.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(m);
    if (!byStatus) byMethod.set(m, (byStatus = []));
    const code = Number.isInteger(status) && status >= 100 && status <= 599 ? status : 0;
    let series = byStatus[code];
    if (!series) series = byStatus[code] = httpDuration.child(route, m, code === 0 ? "unknown" : String(code));
    if (span === undefined) return series.observe(seconds);
    if (span instanceof Uint32Array) return series.observeWithExemplarIds(seconds, span);
    const exemplar = exemplarLabels(span);
    if (exemplar) series.observeWithExemplar(seconds, exemplar);
    else series.observe(seconds);
  };

  const dependencyErrors = lazy(
    () =>
      new Counter({
        name: "dependency_errors_total",
        help: "Errors talking to a dependency (redis, storage, database)",
        labelNames: ["dependency"] as const,
        registers: [registry],
      }),
  );

  for (const dependency of options.dependencies ?? []) dependencyErrors().inc({ dependency }, 0);

  return {
    service: options.service,
    registry,
    httpDuration,
    observeHttp,
    get dependencyErrors() {
      return dependencyErrors();
    },
    dependencyError: (dependency) => dependencyErrors().inc({ dependency }),
  };
}

/** GET handler usable from Express or a bare node:http server. */
export function metricsHandler(metrics: Pick<Metrics, "registry">) {
  const render = exposition(metrics.registry);
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    try {
      const { body, contentType } = await render(req.headers.accept);
      res.statusCode = 200;
      res.setHeader("Content-Type", contentType);
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
