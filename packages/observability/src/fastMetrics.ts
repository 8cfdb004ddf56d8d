// Minimal counter/histogram for hot paths, registered on a prom-client Registry like any metric.
//
// prom-client's Counter/Histogram validate and hash the label set on every inc()/observe(), even on a
// child from labels(): ~600 ns and several allocations each (measured here), a noticeable share of a
// ~15 µs cache-hit response. These keep one mutable series object per label combination; the caller
// resolves the series once (or through a cached lookup) and updating it is a few arithmetic ops.
// Exposition goes through the registry (get() returns prom-client's metric object shape), so default
// labels, escaping and the text format stay prom-client's.
import type { Metric, Registry } from "prom-client";

type Labels = Record<string, string>;

interface ValueEntry {
  value: number;
  labels: Record<string, string | number>;
  metricName?: string;
  /** OpenMetrics exemplar (printed only in the OpenMetrics exposition). */
  exemplar?: Exemplar;
}

/** The last traced observation of a bucket: its trace labels, value and time (seconds). */
export interface Exemplar {
  labelSet: Record<string, string>;
  value: number;
  timestamp: number;
}

/** The series of one label combination, created on first use and kept (shared by both kinds). */
function seriesFor<S>(
  series: Map<string, S>,
  metric: { name: string; labelNames: readonly string[] },
  values: string[],
  create: (labels: Labels) => S,
): S {
  const key = values.join("\u0000");
  let s = series.get(key);
  if (!s) {
    if (values.length !== metric.labelNames.length)
      throw new Error(`${metric.name}: expected ${metric.labelNames.length} label values`);
    const labels: Labels = {};
    metric.labelNames.forEach((n, i) => (labels[n] = values[i]!));
    s = create(labels);
    series.set(key, s);
  }
  return s;
}

export class FastCounterSeries {
  value = 0;
  constructor(readonly labels: Labels) {}
  inc(by = 1): void {
    this.value += by;
  }
}

export class FastCounter<L extends string = string> {
  readonly type = "counter";
  readonly aggregator = "sum";
  private readonly series = new Map<string, FastCounterSeries>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly L[],
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Metric);
  }

  /** The series for these label values (create once, keep the reference, call inc()). */
  child(...values: string[]): FastCounterSeries {
    return seriesFor(this.series, this, values, (labels) => new FastCounterSeries(labels));
  }

  /** Total across all series (tests, debugging). */
  total(): number {
    let t = 0;
    for (const s of this.series.values()) t += s.value;
    return t;
  }

  get(): { name: string; help: string; type: string; aggregator: string; values: ValueEntry[] } {
    const values: ValueEntry[] = [];
    for (const s of this.series.values()) values.push({ value: s.value, labels: { ...s.labels } });
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    for (const s of this.series.values()) s.value = 0;
  }
}

export class FastHistogramSeries {
  /** Non-cumulative counts per bucket; the last slot is +Inf. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  constructor(
    readonly labels: Labels,
    private readonly bounds: Float64Array,
  ) {
    this.counts = new Float64Array(bounds.length + 1);
  }
  observe(v: number): void {
    this.record(this.bucketOf(v), v);
  }
  private bucketOf(v: number): number {
    const b = this.bounds;
    let i = 0;
    while (i < b.length && v > b[i]) i++;
    return i;
  }
  private record(i: number, v: number): void {
    this.counts[i]++;
    this.sum += v;
    this.count++;
  }
  /** Per bucket, the last observation made inside a sampled trace (allocated on the first one). */
  exemplars: (Exemplar | undefined)[] | undefined;
  /**
   * Per bucket, the last observation of a span known by its id words ({@link EXEMPLAR_SLOT}
   * numbers: set, trace id, span id, value, epoch ms), newer than `exemplars` when set: the ids
   * become hex only when exposed, so a sampled request formats nothing.
   */
  private idExemplars: Float64Array | undefined;
  /** observe(), remembering `labelSet` (trace_id, span_id) as the bucket's exemplar. */
  observeWithExemplar(v: number, labelSet: Record<string, string>): void {
    const i = this.bucketOf(v);
    this.record(i, v);
    (this.exemplars ??= [])[i] = { labelSet, value: v, timestamp: Date.now() / 1000 };
    if (this.idExemplars) this.idExemplars[i * EXEMPLAR_SLOT] = 0;
  }
  /** observe(), remembering a span's ids (trace id: 4 words, span id: 2, from `ids[0..5]`) as the bucket's exemplar. */
  observeWithExemplarIds(v: number, ids: Uint32Array): void {
    const i = this.bucketOf(v);
    this.record(i, v);
    const slots = (this.idExemplars ??= new Float64Array(this.counts.length * EXEMPLAR_SLOT));
    const at = i * EXEMPLAR_SLOT;
    slots[at] = 1;
    slots[at + 1] = ids[0]!;
    slots[at + 2] = ids[1]!;
    slots[at + 3] = ids[2]!;
    slots[at + 4] = ids[3]!;
    slots[at + 5] = ids[4]!;
    slots[at + 6] = ids[5]!;
    slots[at + 7] = v;
    slots[at + 8] = Date.now();
  }
  /** The exemplar of bucket `i`, if any. */
  exemplarOf(i: number): Exemplar | undefined {
    const slots = this.idExemplars;
    const at = i * EXEMPLAR_SLOT;
    if (!slots || slots[at] !== 1) return this.exemplars?.[i];
    const hex = (from: number, count: number) => {
      let out = "";
      for (let k = 0; k < count; k++) out += slots[at + from + k]!.toString(16).padStart(8, "0");
      return out;
    };
    return {
      labelSet: { trace_id: hex(1, 4), span_id: hex(5, 2) },
      value: slots[at + 7]!,
      timestamp: slots[at + 8]! / 1000,
    };
  }
}

/** Numbers per bucket in FastHistogramSeries' id exemplars. */
const EXEMPLAR_SLOT = 9;

export class FastHistogram<L extends string = string> {
  readonly type = "histogram";
  readonly aggregator = "sum";
  readonly bounds: Float64Array;
  private readonly series = new Map<string, FastHistogramSeries>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly L[],
    buckets: readonly number[],
    registry: Registry,
  ) {
    this.bounds = Float64Array.from([...buckets].sort((a, b) => a - b));
    registry.registerMetric(this as unknown as Metric);
  }

  child(...values: string[]): FastHistogramSeries {
    return seriesFor(this.series, this, values, (labels) => new FastHistogramSeries(labels, this.bounds));
  }

  get(): { name: string; help: string; type: string; aggregator: string; values: ValueEntry[] } {
    const values: ValueEntry[] = [];
    const bucket = `${this.name}_bucket`;
    for (const s of this.series.values()) {
      let acc = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        acc += s.counts[i];
        values.push({
          metricName: bucket,
          labels: { ...s.labels, le: this.bounds[i] },
          value: acc,
          exemplar: s.exemplarOf(i),
        });
      }
      values.push({
        metricName: bucket,
        labels: { ...s.labels, le: "+Inf" },
        value: s.count,
        exemplar: s.exemplarOf(this.bounds.length),
      });
      values.push({ metricName: `${this.name}_sum`, labels: { ...s.labels }, value: s.sum });
      values.push({ metricName: `${this.name}_count`, labels: { ...s.labels }, value: s.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    for (const s of this.series.values()) {
      s.counts.fill(0);
      s.sum = 0;
      s.count = 0;
    }
  }
}

export interface SourceSample {
  labels: Record<string, string>;
  value: number;
}

export interface SourceMetricOptions {
  name: string;
  help: string;
  /** "counter" requires a source that never decreases (e.g. plain-number event counters). */
  type: "counter" | "gauge";
  /** Read at every scrape: one number, or one sample per label set. */
  read: () => number | readonly SourceSample[];
}

/**
 * Exposes values the service already keeps (plain-number counters, queue lengths) without touching
 * them per event: `read()` runs at scrape time. Returns the registered metric.
 */
export function registerSourceMetric(registry: Registry, options: SourceMetricOptions) {
  const metric = {
    name: options.name,
    help: options.help,
    type: options.type,
    aggregator: options.type === "counter" ? "sum" : "first",
    get() {
      const v = options.read();
      const values =
        typeof v === "number"
          ? [{ value: v, labels: {} }]
          : v.map((s) => ({ value: s.value, labels: { ...s.labels } }));
      return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
    },
    reset() {},
  };
  registry.registerMetric(metric as unknown as Metric);
  return metric;
}
