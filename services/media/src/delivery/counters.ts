/**
 * Monotonic event counters of the media service. Plain numbers so the hot path pays one
 * increment; a metrics endpoint wraps them with prom-client, e.g.
 *
 *   for (const [name, help] of Object.entries(counterHelp)) {
 *     new Counter({ name: `media_${name}_total`, help, collect() { this.reset(); this.inc(counters.get(name)); } });
 *   }
 */
export const counterHelp = {
  hits_memory: "Responses answered from the in-process LRU (hot path or Express)",
  hits_redis: "Results found in Redis (filled into the in-process LRU)",
  hits_shared: "Requests that joined an in-flight transformation of the same URL (single-flight followers)",
  hits_peer: "Results another replica computed while this one waited for its Redis lock",
  lock_waits: "Times this replica found another replica's Redis lock on a URL and waited for its result",
  misses: "Responses answered X-Cache: MISS",
  transformations: "Transformations run (blob read + render)",
  not_modified: "304 responses",
  redis_errors: "Failed Redis commands and connection errors",
  rejected_queue_full: "Requests refused with 503 because the transformation queue was full",
  timeouts: "Requests that hit MEDIA_REQUEST_TIMEOUT_MS",
  storage_errors: "Blob store failures answered with 503",
  client_errors: "4xx problem responses",
  server_errors: "5xx problem responses other than the above",
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

  snapshot(): Readonly<Record<CounterName, number>> {
    return { ...this.values };
  }
}
