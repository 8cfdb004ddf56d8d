import { spawnSync } from "node:child_process";
import path from "node:path";
import request from "supertest";
import express from "express";
import { createMetrics, metricsRouter, tracingConfigured, type Span } from "../src";

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

  it("the Prometheus text format stays as it was, also after an OpenMetrics scrape", async () => {
    const server = app();
    await request(server).get("/metrics").set("Accept", "application/openmetrics-text");
    const res = await request(server).get("/metrics");
    expect(res.headers["content-type"]).toBe("text/plain; version=0.0.4; charset=utf-8");
    expect(res.text).not.toContain("trace_id");
    expect(res.text).toContain('dependency_errors_total{dependency="redis",service="test"} 0');
  });
});
