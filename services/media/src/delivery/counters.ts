import { registerSourceMetric, type Metrics } from "@media-platform/observability";

/**
 * Media-specific event counters that the shared metrics do not already cover, as plain numbers
 * (one increment per event) exposed at scrape time as `media_<name>_total` (registerSourceMetric).
 *
 * Everything else is counted once, in the shared metrics, at the site where it happens:
 *   cache lookups by tier/result  media_cache_lookups_total{tier,result}   (metrics.cacheLookup)
 *   single-flight followers       media_singleflight_joins_total           (metrics.singleFlightJoins)
 *   queue-full 503s               media_transform_queue_rejections_total   (metrics.queueRejections)
 *   Redis / blob store failures   dependency_errors_total{dependency}      (metrics.dependencyError)
 *   304s, 4xx, 5xx                http_request_duration_seconds{status_code}
 */
export const counterHelp = {
  misses: "Responses answered X-Cache: MISS (the request ran the transformation)",
  transformations: "Transformations run (blob read + render)",
  hits_peer: "Results another replica computed while this one waited for its Redis lock",
  lock_waits: "Times this replica found another replica's Redis lock on a URL and waited for its result",
  timeouts: "Requests that hit MEDIA_REQUEST_TIMEOUT_MS",
} as const;

export type CounterName = keyof typeof counterHelp;

export class MediaCounters {
  private readonly values: Record<CounterName, number>;

  constructor() {
    this.values = Object.fromEntries(Object.keys(counterHelp).map((k) => [k, 0])) as Record<CounterName, number>;
  }

  inc(name: CounterName, by = 1): void {
    this.values[name] += by;
  }

  get(name: CounterName): number {
    return this.values[name];
  }

  /** Registers every counter on the service's registry as `media_<name>_total`, read at scrape time. */
  register(metrics: Pick<Metrics, "registry">): void {
    for (const name of Object.keys(counterHelp) as CounterName[]) {
      registerSourceMetric(metrics.registry, {
        name: `media_${name}_total`,
        help: counterHelp[name],
        type: "counter",
        read: () => this.values[name],
      });
    }
  }
}
