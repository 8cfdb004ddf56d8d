import { spawnSync } from "node:child_process";
import path from "node:path";
import request from "supertest";
import express from "express";
import { createMetrics, metricsRouter, tracingConfigured, type Span } from "../src";
import { otlpHttpProtocol } from "../src/tracing/worker-exporter";

const PACKAGE = path.resolve(__dirname, "..");

/** Runs `code` in a fresh Node process (tsx) with `env`, from this package; returns its stdout lines. */
function inProcess(code: string, env: Record<string, string>): string[] {
  const run = spawnSync(process.execPath, ["--import", "tsx", "-e", code], {
    cwd: PACKAGE,
    env: { PATH: process.env.PATH ?? "", ...env },
    encoding: "utf8",
    timeout: 60_000,
  });
  if (run.status !== 0) throw new Error(`exit ${run.status}: ${run.stderr}`);
  return run.stdout.trim().split("\n");
}

describe("tracing settings", () => {
  it("is on with an OTLP endpoint, unless disabled or the traces exporter is none", () => {
    expect(tracingConfigured({})).toBe(false);
    expect(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: " " })).toBe(false);
    expect(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toBe(true);
    expect(tracingConfigured({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://c:4318/v1/traces" })).toBe(true);
    expect(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SDK_DISABLED: "true" })).toBe(false);
    expect(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_TRACES_EXPORTER: "none" })).toBe(
      false,
    );
  });

  it("sends OTLP over HTTP from the worker thread for http/protobuf (the default) and http/json, and leaves the rest to the SDK", () => {
    expect(otlpHttpProtocol({})).toBe("http/protobuf");
    expect(otlpHttpProtocol({ OTEL_TRACES_EXPORTER: "otlp", OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" })).toBe(
      "http/json",
    );
    expect(
      otlpHttpProtocol({
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/protobuf",
      }),
    ).toBe("http/protobuf");
    expect(otlpHttpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" })).toBeUndefined();
    expect(otlpHttpProtocol({ OTEL_TRACES_EXPORTER: "otlp,console" })).toBeUndefined();
    expect(otlpHttpProtocol({ OTEL_TRACES_EXPORTER: "zipkin" })).toBeUndefined();
  });
});

describe("tracing in a process", () => {
  const probe = `
    const o = require("./src");
    const on = o.startTracing("probe");
    const log = o.createLogger({ service: "probe" });
    o.inSpan("work", undefined, () => log.info("inside"));
    log.info("outside");
    const loaded = Object.keys(require.cache).some((k) => k.includes("@opentelemetry/sdk-node"));
    console.log(JSON.stringify({ on, loaded }));
    process.exit(0);
  `;

  it("off: loads no OpenTelemetry SDK, and log lines carry no trace ids", () => {
    const lines = inProcess(probe, {});
    expect(JSON.parse(lines.find((l) => l.includes('"loaded"'))!)).toEqual({ on: false, loaded: false });
    for (const line of lines) expect(JSON.parse(line)).not.toHaveProperty("trace_id");
  });

  it("OTEL_PROPAGATORS=b3: the context travels as a B3 header instead of traceparent", () => {
    const lines = inProcess(
      `const o = require("./src"); o.startTracing("probe");
       o.inSpan("work", undefined, () => console.log(JSON.stringify(Object.keys(o.traceCarrier()))));
       process.exit(0);`,
      { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9", OTEL_PROPAGATORS: "b3" },
    );
    expect(JSON.parse(lines.at(-1)!)).toEqual(["b3"]);
  });

  it("on: loads the SDK; a line logged inside a span carries its trace_id and span_id", () => {
    const lines = inProcess(probe, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9" });
    expect(JSON.parse(lines.find((l) => l.includes('"loaded"'))!)).toEqual({ on: true, loaded: true });
    const inside = JSON.parse(lines.find((l) => l.includes('"inside"'))!) as Record<string, string>;
    expect(inside.trace_id).toMatch(/^[0-9a-f]{32}$/);
    expect(inside.span_id).toMatch(/^[0-9a-f]{16}$/);
    expect(JSON.parse(lines.find((l) => l.includes('"outside"'))!)).not.toHaveProperty("trace_id");
  });

  // A node:http client request on the main thread makes the code it shares with the server's
  // responses polymorphic, so the spans are posted from a worker thread.
  it.each(["http/protobuf", "http/json"])(
    "%s: the spans reach the collector, posted from a worker thread, never by the main thread's HTTP client",
    (protocol) => {
      const lines = inProcess(
        `const http = require("node:http");
         const channels = require("node:diagnostics_channel");
         let clientRequests = 0;
         channels.subscribe("http.client.request.start", () => clientRequests++);
         const received = [];
         const collector = http.createServer((req, res) => {
           const chunks = [];
           req.on("data", (c) => chunks.push(c));
           req.on("end", () => {
             received.push({ path: req.url, type: req.headers["content-type"], body: Buffer.concat(chunks).toString("latin1") });
             res.writeHead(200).end();
           });
         });
         collector.listen(0, "127.0.0.1", async () => {
           process.env.OTEL_EXPORTER_OTLP_ENDPOINT = "http://127.0.0.1:" + collector.address().port;
           const o = require("./src");
           o.startTracing("probe");
           for (const name of ["first work", "second work"]) o.inSpan(name, { "work.kind": "probe" }, () => undefined);
           await o.stopTracing();
           console.log(JSON.stringify({ clientRequests, received }));
           process.exit(0);
         });`,
        { OTEL_EXPORTER_OTLP_PROTOCOL: protocol },
      );
      const { clientRequests, received } = JSON.parse(lines.at(-1)!) as {
        clientRequests: number;
        received: { path: string; type: string; body: string }[];
      };
      expect(clientRequests).toBe(0);
      expect(received.length).toBeGreaterThanOrEqual(1);
      for (const r of received) {
        expect(r.path).toBe("/v1/traces");
        expect(r.type).toBe(protocol === "http/json" ? "application/json" : "application/x-protobuf");
      }
      const bodies = received.map((r) => r.body).join("");
      for (const text of ["first work", "second work", "work.kind", "probe"]) expect(bodies).toContain(text);
      if (protocol === "http/json") {
        const names = received.flatMap((r) =>
          (
            JSON.parse(r.body) as { resourceSpans: { scopeSpans: { spans: { name: string }[] }[] }[] }
          ).resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans.map((s) => s.name))),
        );
        expect(names.sort()).toEqual(["first work", "second work"]);
      }
    },
  );
});

describe("exemplars", () => {
  const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
  const spanId = "00f067aa0ba902b7";
  const span = (flags: number) => ({ spanContext: () => ({ traceId, spanId, traceFlags: flags }) }) as unknown as Span;

  function app() {
    const metrics = createMetrics({ service: "test", defaultMetrics: false, dependencies: ["redis"] });
    metrics.observeHttp("/v1/assets/:id", "GET", 200, 0.003, span(1));
    metrics.observeHttp("/v1/assets/:id", "GET", 200, 0.2, span(0));
    return express().use(metricsRouter(metrics));
  }

  it("OpenMetrics, when asked for: the bucket of a sampled request carries its trace and span ids", async () => {
    const res = await request(app()).get("/metrics").set("Accept", "application/openmetrics-text; version=1.0.0");
    expect(res.headers["content-type"]).toMatch(/^application\/openmetrics-text/);
    const bucket = res.text
      .split("\n")
      .find((l) => l.startsWith("http_request_duration_seconds_bucket") && l.includes('le="0.005"'));
    expect(bucket).toMatch(
      new RegExp(`\\} 1 # \\{trace_id="${traceId}",span_id="${spanId}"\\} 0\\.003 \\d+(\\.\\d+)?$`),
    );
    // An unsampled request leaves no exemplar.
    const slow = res.text
      .split("\n")
      .find((l) => l.startsWith("http_request_duration_seconds_bucket") && l.includes('le="0.25"'));
    expect(slow).not.toContain("#");
    expect(res.text).toContain("dependency_errors_total{");
    expect(res.text.trimEnd().endsWith("# EOF")).toBe(true);
  });

  it("a journal span's ids (words) become the bucket's exemplar in hex, and the newer exemplar of a bucket wins", async () => {
    const metrics = createMetrics({ service: "test", defaultMetrics: false });
    // Trace id 4bf92f35 77b34da6 a3ce929d 0e0e4736, span id 00f067aa 0ba902b7, as journal words.
    const ids = Uint32Array.of(0x4bf92f35, 0x77b34da6, 0xa3ce929d, 0x0e0e4736, 0x00f067aa, 0x0ba902b7);
    metrics.observeHttp("hot_path", "GET", 200, 0.0004, ids);
    ids.fill(7); // the caller's array is reused for the next span: the exemplar keeps its own copy
    metrics.observeHttp("hot_path", "GET", 200, 0.02, span(1));
    metrics.observeHttp("hot_path", "GET", 200, 0.021, Uint32Array.of(1, 2, 3, 0xffffffff, 0, 9));
    const res = await request(express().use(metricsRouter(metrics)))
      .get("/metrics")
      .set("Accept", "application/openmetrics-text");
    const bucket = (le: string) =>
      res.text.split("\n").find((l) => l.startsWith("http_request_duration_seconds_bucket") && l.includes(`le="${le}"`));
    expect(bucket("0.0005")).toMatch(
      new RegExp(`\\} 1 # \\{trace_id="${traceId}",span_id="${spanId}"\\} 0\\.0004 \\d+(\\.\\d+)?$`),
    );
    expect(bucket("0.025")).toMatch(
      /\} 3 # \{trace_id="000000010000000200000003ffffffff",span_id="0000000000000009"\} 0\.021 \d+(\.\d+)?$/,
    );
    // An SDK span's exemplar after a journal span's in the same bucket replaces it.
    metrics.observeHttp("hot_path", "GET", 200, 0.022, span(1));
    const again = await request(express().use(metricsRouter(metrics)))
      .get("/metrics")
      .set("Accept", "application/openmetrics-text");
    expect(again.text).toContain(`# {trace_id="${traceId}",span_id="${spanId}"} 0.022 `);
    expect(again.text).not.toContain("000000010000000200000003ffffffff");
  });

  it("the Prometheus text format stays as it was, also after an OpenMetrics scrape", async () => {
    const server = app();
    await request(server).get("/metrics").set("Accept", "application/openmetrics-text");
    const res = await request(server).get("/metrics");
    expect(res.headers["content-type"]).toBe("text/plain; version=0.0.4; charset=utf-8");
    expect(res.text).not.toContain("trace_id");
    expect(res.text).toContain('dependency_errors_total{dependency="redis",service="test"} 0');
  });
});
