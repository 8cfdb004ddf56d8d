import { counterHelp, createMediaMetrics } from "../src/metrics";

/** Prometheus text -> `name{labels sorted}` -> value. */
function parse(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels = (m[2] ?? "").match(/\w+="(?:[^"\\]|\\.)*"/g) ?? [];
    out.set(`${m[1]}{${labels.sort().join(",")}}`, Number(m[3]));
  }
  return out;
}

describe("media metrics (src/metrics.ts)", () => {
  it("registers every media series from zero, next to the shared HTTP and dependency series", async () => {
    const metrics = createMediaMetrics({ defaultMetrics: false });
    const m = parse(await metrics.registry.metrics());
    for (const tier of ["memory", "redis"])
      for (const result of ["hit", "miss"])
        expect(m.get(`media_cache_lookups_total{result="${result}",service="media",tier="${tier}"}`)).toBe(0);
    expect(m.get('media_singleflight_joins_total{service="media"}')).toBe(0);
    expect(m.get('media_transform_queue_depth{service="media"}')).toBe(0);
    expect(m.get('media_transform_queue_rejections_total{service="media"}')).toBe(0);
    for (const name of Object.keys(counterHelp)) expect(m.get(`media_${name}_total{service="media"}`)).toBe(0);
  });

  it("counts each call once, under the same names and labels as before the split", async () => {
    const metrics = createMediaMetrics({ defaultMetrics: false });
    metrics.cacheLookup("memory", "hit");
    metrics.cacheLookupSeries("memory", "hit").inc();
    metrics.cacheLookup("memory", "miss");
    metrics.cacheLookup("redis", "miss");
    metrics.observeTransformation("thumbnail", 0.2);
    metrics.observeTransformation("clahe", 0.01);
    for (let i = 0; i < 3; i++) metrics.singleFlightJoin();
    let waiting = 4;
    metrics.trackQueueDepth(() => waiting);
    metrics.queueRejection();
    metrics.count("misses");
    metrics.count("transformations");
    metrics.count("transformations");
    metrics.dependencyError("storage");

    let m = parse(await metrics.registry.metrics());
    const expected: Record<string, number> = {
      'media_cache_lookups_total{result="hit",service="media",tier="memory"}': 2,
      'media_cache_lookups_total{result="miss",service="media",tier="memory"}': 1,
      'media_cache_lookups_total{result="hit",service="media",tier="redis"}': 0,
      'media_cache_lookups_total{result="miss",service="media",tier="redis"}': 1,
      'media_transformation_duration_seconds_count{service="media",transformation="thumbnail"}': 1,
      'media_transformation_duration_seconds_sum{service="media",transformation="thumbnail"}': 0.2,
      'media_transformation_duration_seconds_count{service="media",transformation="clahe"}': 1,
      'media_singleflight_joins_total{service="media"}': 3,
      'media_transform_queue_depth{service="media"}': 4,
      'media_transform_queue_rejections_total{service="media"}': 1,
      'media_misses_total{service="media"}': 1,
      'media_transformations_total{service="media"}': 2,
      'dependency_errors_total{dependency="storage",service="media"}': 1,
    };
    expect(Object.fromEntries(Object.keys(expected).map((series) => [series, m.get(series)]))).toEqual(expected);
    // The read view shows the same numbers as /metrics.
    expect([metrics.counters.get("misses"), metrics.counters.get("transformations")]).toEqual([1, 2]);

    waiting = 0; // the gauge reads its source at scrape time
    m = parse(await metrics.registry.metrics());
    expect(m.get('media_transform_queue_depth{service="media"}')).toBe(0);
  });

  it("exposes the counters as Prometheus counters with their help text", async () => {
    const text = await createMediaMetrics({ defaultMetrics: false }).registry.metrics();
    expect(text).toContain("# TYPE media_cache_lookups_total counter");
    expect(text).toContain("# TYPE media_singleflight_joins_total counter");
    expect(text).toContain("# TYPE media_transform_queue_rejections_total counter");
    expect(text).toContain(`# HELP media_misses_total ${counterHelp.misses}`);
    expect(text).toContain("# TYPE media_misses_total counter");
    expect(text).toContain("# TYPE media_transform_queue_depth gauge");
    expect(text).toContain("# TYPE media_transformation_duration_seconds histogram");
  });
});
