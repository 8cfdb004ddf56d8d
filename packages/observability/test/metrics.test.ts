import http from "node:http";
import express from "express";
import request from "supertest";
import {
  applyRequestId,
  createLogger,
  createMetrics,
  metricsRouter,
  recordRawRequest,
  requestContext,
  ROUTE_HOT_PATH,
  registerSourceMetric,
} from "../src";

/** `name{a="1",b="2"}` with the labels sorted, so lookups do not depend on exposition order. */
function canonical(series: string): string {
  const brace = series.indexOf("{");
  if (brace === -1) return series;
  const pairs = series.slice(brace + 1, -1).match(/[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*"/g) ?? [];
  return `${series.slice(0, brace)}{${pairs.sort().join(",")}}`;
}

/** Parses Prometheus text into canonical `name{labels}` -> value. */
function parse(text: string): { get(series: string): number | undefined } {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const i = line.lastIndexOf(" ");
    out.set(canonical(line.slice(0, i)), Number(line.slice(i + 1)));
  }
  return { get: (series) => out.get(canonical(series)) };
}

function appWithMetrics(service = "management") {
  const metrics = createMetrics({ service, defaultMetrics: false });
  const app = express();
  app.use(requestContext({ logger: createLogger({ service, level: "silent" }), metrics }));
  app.use(metricsRouter(metrics));
  const v1 = express.Router();
  v1.get("/assets/:id", (_req, res) => {
    res.json({ ok: true });
  });
  v1.get("/assets/:id/missing", (_req, res) => {
    res.status(404).json({ ok: false });
  });
  app.use("/v1", v1);
  return { app, metrics };
}

describe("/metrics", () => {
  it("serves the Prometheus text format with the latency histogram labelled by route pattern and status", async () => {
    const { app } = appWithMetrics();
    await request(app).get("/v1/assets/6f1c1b1e-1111-4111-8111-111111111111").expect(200);
    await request(app).get("/v1/assets/6f1c1b1e-2222-4222-8222-222222222222").expect(200);
    await request(app).get("/v1/assets/x/missing").expect(404);
    await request(app).get("/nope/6f1c1b1e-3333").expect(404);
    const res = await request(app).get("/metrics").expect(200);
    expect(res.headers["content-type"]).toBe("text/plain; version=0.0.4; charset=utf-8");
    expect(res.text).toContain("# TYPE http_request_duration_seconds histogram");
    const m = parse(res.text);
    const labels = (route: string, status: number) =>
      `route="${route}",method="GET",status_code="${status}",service="management"`;
    expect(m.get(`http_request_duration_seconds_count{${labels("/v1/assets/:id", 200)}}`)).toBe(2);
    expect(m.get(`http_request_duration_seconds_count{${labels("/v1/assets/:id/missing", 404)}}`)).toBe(1);
    expect(m.get(`http_request_duration_seconds_count{${labels("unmatched", 404)}}`)).toBe(1);
    expect(m.get(`http_request_duration_seconds_bucket{${labels("/v1/assets/:id", 200)},le="+Inf"}`)).toBe(2);
    expect(m.get(`http_request_duration_seconds_sum{${labels("/v1/assets/:id", 200)}}`)).toBeGreaterThan(0);
    // Raw URLs never become label values.
    expect(res.text).not.toContain("6f1c1b1e");
  });

  it("keeps buckets cumulative and counts +Inf", () => {
    const metrics = createMetrics({ service: "s", defaultMetrics: false, httpBuckets: [0.1, 1] });
    metrics.observeHttp("/r", "GET", 200, 0.05);
    metrics.observeHttp("/r", "GET", 200, 0.5);
    metrics.observeHttp("/r", "GET", 200, 5);
    return metrics.registry.metrics().then((text) => {
      const m = parse(text);
      const l = 'route="/r",method="GET",status_code="200",service="s"';
      expect(m.get(`http_request_duration_seconds_bucket{${l},le="0.1"}`)).toBe(1);
      expect(m.get(`http_request_duration_seconds_bucket{${l},le="1"}`)).toBe(2);
      expect(m.get(`http_request_duration_seconds_bucket{${l},le="+Inf"}`)).toBe(3);
      expect(m.get(`http_request_duration_seconds_sum{${l}}`)).toBeCloseTo(5.55);
    });
  });

  it("folds unknown methods and out-of-range statuses into fixed labels", async () => {
    const metrics = createMetrics({ service: "s", defaultMetrics: false });
    metrics.observeHttp("/r", "PROPFIND", 200, 0.01);
    metrics.observeHttp("/r", undefined, 1000, 0.01);
    const text = await metrics.registry.metrics();
    expect(text).toContain('route="/r",method="OTHER",status_code="200"');
    expect(text).toContain('route="/r",method="OTHER",status_code="unknown"');
    expect(text).not.toContain("PROPFIND");
  });

  it("records bare node:http hot-path requests under a fixed route label with the request id set", async () => {
    const metrics = createMetrics({ service: "media", defaultMetrics: false });
    const server = http.createServer((req, res) => {
      const start = performance.now();
      const id = applyRequestId(req, res);
      res.writeHead(200, { "Content-Type": "text/plain" });
      res.end(id);
      recordRawRequest(metrics, ROUTE_HOT_PATH, req, res, start);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const r1 = await request(server).get("/thumbnail/a.jpg?sig=x").set("X-Request-Id", "edge-7").expect(200);
      expect(r1.headers["x-request-id"]).toBe("edge-7");
      expect(r1.text).toBe("edge-7");
      const r2 = await request(server).get("/thumbnail/b.jpg").set("X-Request-Id", "bad id").expect(200);
      expect(r2.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);
      await request(server).head("/thumbnail/b.jpg").expect(200);
    } finally {
      await new Promise((r) => server.close(r));
    }
    const m = parse(await metrics.registry.metrics());
    expect(
      m.get('http_request_duration_seconds_count{route="hot_path",method="GET",status_code="200",service="media"}'),
    ).toBe(2);
    expect(
      m.get('http_request_duration_seconds_count{route="hot_path",method="HEAD",status_code="200",service="media"}'),
    ).toBe(1);
  });

  it("keeps the hot-path id when a request falls through to Express", async () => {
    const metrics = createMetrics({ service: "media", defaultMetrics: false });
    const app = express();
    app.use(requestContext({ logger: createLogger({ service: "media", level: "silent" }), metrics }));
    app.get("/{*rest}", (req, res) => {
      res.send(req.requestId);
    });
    let hotId = "";
    const server = http.createServer((req, res) => {
      hotId = applyRequestId(req, res); // e.g. set before the cache lookup, then it was a miss
      app(req, res);
    });
    const res = await request(server).get("/x/y.jpg").expect(200);
    expect(res.headers["x-request-id"]).toBe(hotId);
    expect(res.text).toBe(hotId);
  });

  it("has dependency errors (from zero for the listed dependencies) and no service's own series", async () => {
    const metrics = createMetrics({ service: "media", defaultMetrics: false, dependencies: ["storage"] });
    let m = parse(await metrics.registry.metrics());
    expect(m.get('dependency_errors_total{dependency="storage",service="media"}')).toBe(0);
    expect(m.get('dependency_errors_total{dependency="redis",service="media"}')).toBeUndefined();
    metrics.dependencyError("redis");
    metrics.dependencyError("redis");
    metrics.dependencyError("storage");
    const text = await metrics.registry.metrics();
    m = parse(text);
    expect(m.get('dependency_errors_total{dependency="redis",service="media"}')).toBe(2);
    expect(m.get('dependency_errors_total{dependency="storage",service="media"}')).toBe(1);
    // Each service's own series live in its src/metrics.ts, not here.
    expect(text).not.toMatch(/^(media_|upload_size_bytes|webhook_|cache_purge_)/m);
    expect(metrics).not.toHaveProperty("cacheLookup");
    expect(metrics).not.toHaveProperty("observeUpload");
  });

  it("gives each service its own registry (both in one process) with default process metrics", async () => {
    const a = createMetrics({ service: "management" });
    const b = createMetrics({ service: "media" });
    a.observeHttp("/v1/assets", "GET", 200, 0.01);
    b.dependencyError("redis");
    const [ta, tb] = await Promise.all([a.registry.metrics(), b.registry.metrics()]);
    expect(ta).toContain('service="management"');
    expect(ta).not.toContain('service="media"');
    expect(ta).not.toContain("dependency_errors_total");
    expect(tb).not.toContain('route="/v1/assets"');
    expect(ta).toContain("process_cpu_user_seconds_total");
    expect(tb).toContain("nodejs_heap_size_used_bytes");
  });
});

describe("registerSourceMetric", () => {
  it("reads existing plain-number counters at scrape time", async () => {
    const metrics = createMetrics({ service: "media", defaultMetrics: false });
    const counters = { timeouts: 0, hits: { memory: 0, redis: 0 } };
    registerSourceMetric(metrics.registry, {
      name: "media_timeouts_total",
      help: "Requests that hit the timeout",
      type: "counter",
      read: () => counters.timeouts,
    });
    registerSourceMetric(metrics.registry, {
      name: "media_hits_total",
      help: "Hits by tier",
      type: "counter",
      read: () => Object.entries(counters.hits).map(([tier, value]) => ({ labels: { tier }, value })),
    });
    counters.timeouts = 2;
    counters.hits.memory = 5;
    const text = await metrics.registry.metrics();
    expect(text).toContain("# TYPE media_timeouts_total counter");
    const m = parse(text);
    expect(m.get('media_timeouts_total{service="media"}')).toBe(2);
    expect(m.get('media_hits_total{service="media",tier="memory"}')).toBe(5);
    expect(m.get('media_hits_total{service="media",tier="redis"}')).toBe(0);
  });
});
