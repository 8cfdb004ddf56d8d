/**
 * `pnpm bench tracing`: what OpenTelemetry tracing costs the media service (production bundle):
 * HIT and MISS throughput with tracing off (no exporter configured), at 100% sampling and at 1%
 * sampling (parentbased_traceidratio 0.01), exporting http/protobuf to a sink that answers every
 * export (in this process). Load from `wrk` in its own process; the three services run side by
 * side and are measured in alternation, median of BENCH_RUNS runs, ratios against "off" of the
 * same run.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import sharp from "sharp";
import {
  benchMediaEnv,
  findWrk,
  freePort,
  median,
  processCpuMs,
  ratio,
  runWrk,
  startMediaService,
  table,
  type WrkResult,
} from "./harness";
import { assetId, type BenchImage } from "./media-cases";
import { Originals } from "./originals";

const ROOT = path.resolve(__dirname, "..");
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);

const photo: BenchImage = {
  name: "1 MP JPEG",
  tag: 6,
  format: "jpeg",
  extension: "jpg",
  width: 1200,
  height: 800,
  make: () =>
    sharp(path.join(ROOT, "fixtures/images/rocket.jpg"))
      .resize(1200, 800, { fit: "fill" })
      .jpeg({ quality: 85 })
      .toBuffer(),
};

const SETTINGS: { name: string; env: Record<string, string> }[] = [
  { name: "off", env: {} },
  { name: "100% sampled", env: { OTEL_TRACES_SAMPLER: "parentbased_always_on" } },
  { name: "1% sampled", env: { OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.01" } },
];

/** An OTLP endpoint that accepts and drops every export, counting the bytes. */
async function startSink() {
  let bytes = 0;
  const server = http.createServer((req, res) => {
    req.on("data", (c: Buffer) => (bytes += c.length));
    req.on("end", () => res.writeHead(200, { "Content-Type": "application/x-protobuf" }).end());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bytes: () => bytes,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

export async function benchTracing(): Promise<string> {
  const wrk = findWrk();
  if (!wrk) throw new Error("wrk is not installed (Debian: apt-get install wrk)");
  const root = mkdtempSync(path.join(os.tmpdir(), "bench-tracing-"));
  const originals = new Originals(root);
  await originals.add(photo);
  const sink = await startSink();
  const services: { name: string; base: string; pid: number | undefined; stop: () => Promise<void> }[] = [];
  try {
    for (const setting of SETTINGS) {
      const port = await freePort();
      const base = `http://127.0.0.1:${port}`;
      const exporter =
        setting.name === "off"
          ? {}
          : { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf", ...setting.env };
      const started = await startMediaService(
        { ...benchMediaEnv(root), MEDIA_PORT: String(port), ...exporter },
        `${base}/healthz`,
      );
      services.push({ name: setting.name, base, pid: started.pid, stop: started.stop });
    }
    const hitId = assetId(originals.reserve(photo, 1), photo);
    const loadBefore = os.loadavg()[0]!;
    type Cell = { rps: number[]; cpuUs: number[] };
    const results = new Map<string, { hit: Cell; miss: Cell }>();
    for (const s of services) results.set(s.name, { hit: { rps: [], cpuUs: [] }, miss: { rps: [], cpuUs: [] } });
    // CPU microseconds of the service (all threads) per request: steadier than req/s on a shared machine.
    const measured = async (pid: number | undefined, load: () => Promise<WrkResult>) => {
      const before = processCpuMs(pid) ?? NaN;
      const result = await load();
      return { result, cpuUs: (((processCpuMs(pid) ?? NaN) - before) * 1000) / Math.max(1, result.requests) };
    };
    for (let run = -1; run < RUNS; run++) {
      for (const s of services) {
        const seconds = run < 0 ? 2 : SECONDS;
        const hit = await measured(s.pid, () =>
          runWrk({ wrk, url: `${s.base}/resize:width=300/${hitId}.jpg`, connections: 16, seconds }),
        );
        const first = originals.reserve(photo, 20_000);
        const miss = await measured(s.pid, () =>
          runWrk({
            wrk,
            url: s.base,
            connections: 2,
            seconds,
            script: path.join(ROOT, "bench/miss.lua"),
            scriptArgs: ["/resize:width=300/", String(first), `${assetId(first, photo).slice(8)}.jpg`],
          }),
        );
        for (const [cell, { result: r }] of [
          ["HIT", hit],
          ["MISS", miss],
        ] as const) {
          if (r.failed > 0 || r.socketErrors > 0) {
            throw new Error(
              `${s.name} ${cell}: ${r.failed} failed, ${r.socketErrors} socket errors${r.firstError ? `: ${r.firstError}` : ""}`,
            );
          }
        }
        if (run >= 0) {
          const r = results.get(s.name)!;
          r.hit.rps.push(hit.result.rps);
          r.hit.cpuUs.push(hit.cpuUs);
          r.miss.rps.push(miss.result.rps);
          r.miss.cpuUs.push(miss.cpuUs);
        }
      }
    }
    const off = results.get("off")!;
    const loadAfter = os.loadavg()[0]!;
    return [
      `Media service (bundle), ${photo.name} original, \`resize:width=300\`: HIT with 16 connections, MISS (a new asset id per request) with 2, median of ${RUNS} runs of ${SECONDS} s (wrk), the three settings measured in alternation. OTLP http/protobuf to a sink in the bench process (${(sink.bytes() / 1e6).toFixed(1)} MB received).`,
      "",
      table(
        [
          "tracing",
          "HIT req/s (runs)",
          "HIT vs off",
          "HIT CPU µs/req",
          "vs off",
          "MISS req/s (runs)",
          "MISS vs off",
          "MISS CPU ms/req",
          "vs off",
        ],
        SETTINGS.map(({ name }) => {
          const r = results.get(name)!;
          return [
            name,
            `${median(r.hit.rps).toFixed(0)} (${r.hit.rps.map((v) => v.toFixed(0)).join(" / ")})`,
            ratio(median(r.hit.rps), median(off.hit.rps)),
            median(r.hit.cpuUs).toFixed(1),
            ratio(median(r.hit.cpuUs), median(off.hit.cpuUs)),
            `${median(r.miss.rps).toFixed(1)} (${r.miss.rps.map((v) => v.toFixed(1)).join(" / ")})`,
            ratio(median(r.miss.rps), median(off.miss.rps)),
            (median(r.miss.cpuUs) / 1000).toFixed(2),
            ratio(median(r.miss.cpuUs), median(off.miss.cpuUs)),
          ];
        }),
      ),
      "",
      `Machine load (1-minute average) ${loadBefore.toFixed(1)} before, ${loadAfter.toFixed(1)} after, on ${os.cpus().length} cores.`,
      "",
      `Targets (req/s): 100% sampled MISS >= 0.97x off, HIT >= 0.90x off; 1% sampled HIT >= 0.97x off. CPU per request (all threads of the service, from /proc) is the steadier figure on a shared machine.`,
    ].join("\n");
  } finally {
    await Promise.all(services.map((s) => s.stop()));
    await sink.close();
    rmSync(root, { recursive: true, force: true });
  }
}
