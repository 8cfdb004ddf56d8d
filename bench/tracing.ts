/**
 * `pnpm bench tracing`: what OpenTelemetry tracing costs the media service (production bundle):
 * HIT and MISS throughput with tracing off (no exporter configured), at 100% sampling and at 1%
 * sampling (parentbased_traceidratio 0.01), exporting http/protobuf to a sink that answers every
 * export (in this process). Load from `wrk` in its own process; the three services run side by
 * side and are measured in alternation, median of BENCH_RUNS runs, ratios against "off" of the
 * same run. Several processes per setting (BENCH_TRACING_PROCESSES); BENCH_NODE runs the service
 * under another Node binary; BENCH_TRACING_DIAGNOSE=1 adds settings that each take one part away.
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
  serviceNodeVersion,
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

/** The original every tracing bench serves (a 1 MP JPEG). */
export const photo: BenchImage = {
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

const PROCESSES = Math.max(1, Number(process.env.BENCH_TRACING_PROCESSES ?? 3));

interface Setting {
  name: string;
  /** OTLP exporter settings; undefined: tracing off. */
  exporter?: Record<string, string>;
  nodeArgs?: string[];
}

const ONE_PERCENT = { OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.01" };

const SETTINGS: Setting[] = [
  { name: "off" },
  { name: "off + AsyncLocalStorage", nodeArgs: ["-r", path.join(ROOT, "bench/tracing-context.cjs")] },
  { name: "100% sampled", exporter: { OTEL_TRACES_SAMPLER: "parentbased_always_on" } },
  { name: "1% sampled", exporter: ONE_PERCENT },
  // BENCH_TRACING_DIAGNOSE=1: settings that take one part away, to tell where a cost comes from.
  ...(process.env.BENCH_TRACING_DIAGNOSE === "1"
    ? [
        // The SDK and its instrumentations loaded, no span ever sampled or exported.
        { name: "SDK loaded, always_off", exporter: { OTEL_TRACES_SAMPLER: "always_off" } },
        // 1% of spans made and buffered, never exported within a run (no serialization, no requests).
        {
          name: "1% sampled, no export",
          exporter: {
            ...ONE_PERCENT,
            OTEL_BSP_SCHEDULE_DELAY: "1000000000",
            OTEL_BSP_MAX_QUEUE_SIZE: "100000000",
            OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "100000000",
          },
        },
        // A second group of processes with tracing off: how far apart two identical settings measure.
        { name: "off, second group" },
      ]
    : []),
];

/** An OTLP endpoint that accepts and drops every export, counting the bytes. */
export async function startSink() {
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

/**
 * `BENCH_TRACING_NODES` (a comma-separated list of Node binaries): the whole measurement once per
 * binary, one after the other; unset: once, under BENCH_NODE or the bench's own Node.
 */
export function benchTracing(): Promise<string> {
  return perTracingNode(measureTracing);
}

/** `measure` once per Node binary of BENCH_TRACING_NODES (as BENCH_NODE), the parts joined. */
export async function perTracingNode(measure: () => Promise<string>): Promise<string> {
  const nodes = (process.env.BENCH_TRACING_NODES ?? "")
    .split(",")
    .map((node) => node.trim())
    .filter(Boolean);
  if (nodes.length === 0) return measure();
  const saved = process.env.BENCH_NODE;
  const parts: string[] = [];
  try {
    for (const node of nodes) {
      process.env.BENCH_NODE = node;
      parts.push(await measure());
    }
  } finally {
    if (saved === undefined) delete process.env.BENCH_NODE;
    else process.env.BENCH_NODE = saved;
  }
  return parts.join("\n\n");
}

async function measureTracing(): Promise<string> {
  const wrk = findWrk();
  if (!wrk) throw new Error("wrk is not installed (Debian: apt-get install wrk)");
  const root = mkdtempSync(path.join(os.tmpdir(), "bench-tracing-"));
  const originals = new Originals(root);
  await originals.add(photo);
  const sink = await startSink();
  const services: { setting: string; base: string; pid: number | undefined; stop: () => Promise<void> }[] = [];
  try {
    // Several processes per setting: one process's HIT cost is a draw (bench/README.md), so a
    // setting's figure is the median over its processes of each one's median.
    for (let i = 0; i < PROCESSES; i++) {
      for (const setting of SETTINGS) {
        const port = await freePort();
        const base = `http://127.0.0.1:${port}`;
        const exporter = setting.exporter
          ? { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf", ...setting.exporter }
          : {};
        const started = await startMediaService(
          { ...benchMediaEnv(root), MEDIA_PORT: String(port), ...exporter },
          `${base}/healthz`,
          setting.nodeArgs,
        );
        services.push({ setting: setting.name, base, pid: started.pid, stop: started.stop });
      }
    }
    const hitId = assetId(originals.reserve(photo, 1), photo);
    const loadBefore = os.loadavg()[0]!;
    type Cell = { rps: number[]; cpuUs: number[] };
    const results = services.map(() => ({ hit: { rps: [], cpuUs: [] } as Cell, miss: { rps: [], cpuUs: [] } as Cell }));
    // CPU microseconds of the service (all threads) per request: steadier than req/s on a shared machine.
    const measured = async (pid: number | undefined, load: () => Promise<WrkResult>) => {
      const before = processCpuMs(pid) ?? NaN;
      const result = await load();
      return { result, cpuUs: (((processCpuMs(pid) ?? NaN) - before) * 1000) / Math.max(1, result.requests) };
    };
    for (let run = -1; run < RUNS; run++) {
      // The order turns each run, so no process always follows the same one.
      const order = services.map((_, i) => (i + Math.max(0, run) * SETTINGS.length) % services.length);
      for (const index of order) {
        const s = services[index]!;
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
              `${s.setting} ${cell}: ${r.failed} failed, ${r.socketErrors} socket errors${r.firstError ? `: ${r.firstError}` : ""}`,
            );
          }
        }
        if (run >= 0) {
          const r = results[index]!;
          r.hit.rps.push(hit.result.rps);
          r.hit.cpuUs.push(hit.cpuUs);
          r.miss.rps.push(miss.result.rps);
          r.miss.cpuUs.push(miss.cpuUs);
        }
      }
    }
    const loadAfter = os.loadavg()[0]!;
    /** Per setting and figure: each process's median over the runs, and the median over the processes. */
    const figure = (setting: string, pick: (r: (typeof results)[number]) => number[]) => {
      const perProcess = services.flatMap((s, i) => (s.setting === setting ? [median(pick(results[i]!))] : []));
      return { value: median(perProcess), perProcess };
    };
    const figures = new Map(
      SETTINGS.map(({ name }) => [
        name,
        {
          hitRps: figure(name, (r) => r.hit.rps),
          hitCpu: figure(name, (r) => r.hit.cpuUs),
          missRps: figure(name, (r) => r.miss.rps),
          missCpu: figure(name, (r) => r.miss.cpuUs),
        },
      ]),
    );
    const off = figures.get("off")!;
    const each = (values: number[], digits: number) => values.map((v) => v.toFixed(digits)).join(" / ");
    const targets: [string, string, number, number, "rps" | "cpu"][] = [
      ["100% sampled", "MISS", 0.97, 1 / 1.03, "rps"],
      ["100% sampled", "HIT", 0.9, 1 / 1.1, "rps"],
      ["1% sampled", "HIT", 0.97, 1 / 1.03, "rps"],
    ];
    const verdicts = targets.map(([name, cell, minRps, minCpu]) => {
      const f = figures.get(name)!;
      const rps = (cell === "HIT" ? f.hitRps : f.missRps).value / (cell === "HIT" ? off.hitRps : off.missRps).value;
      const cpu = (cell === "HIT" ? off.hitCpu : off.missCpu).value / (cell === "HIT" ? f.hitCpu : f.missCpu).value;
      return [
        `${name} ${cell}`,
        `>= ${minRps.toFixed(2)}x off`,
        `${rps.toFixed(2)}x`,
        `${cpu.toFixed(2)}x`,
        rps >= minRps && cpu >= minCpu ? "MET" : rps >= minRps || cpu >= minCpu ? "one of two" : "NOT MET",
      ];
    });
    return [
      `Media service (bundle, Node ${serviceNodeVersion()}), ${photo.name} original, \`resize:width=300\`: HIT with 16 connections, MISS (a new asset id per request) with 2. ` +
        `${PROCESSES} service processes per setting, all running side by side; every process measured in each of ${RUNS} runs of ${SECONDS} s (wrk), in an order that turns each run. ` +
        "A setting's figure is the median over its processes of each process's median (each process's median in brackets): one process's cost per request is a draw, 10-25% apart from the next on this machine. " +
        `OTLP http/protobuf to a sink in the bench process (${(sink.bytes() / 1e6).toFixed(1)} MB received). ` +
        "`off + AsyncLocalStorage`: tracing off, with one AsyncLocalStorage in use (`bench/tracing-context.cjs`), as OpenTelemetry's context manager's is: Node's context propagation alone.",
      "",
      table(
        [
          "tracing",
          "HIT req/s (each process)",
          "HIT vs off",
          "HIT CPU µs/req (each process)",
          "off / this, per CPU",
          "MISS req/s (each process)",
          "MISS vs off",
          "MISS CPU ms/req (each process)",
          "off / this, per CPU",
        ],
        SETTINGS.map(({ name }) => {
          const f = figures.get(name)!;
          return [
            name,
            `${f.hitRps.value.toFixed(0)} (${each(f.hitRps.perProcess, 0)})`,
            ratio(f.hitRps.value, off.hitRps.value),
            `${f.hitCpu.value.toFixed(1)} (${each(f.hitCpu.perProcess, 1)})`,
            ratio(off.hitCpu.value, f.hitCpu.value),
            `${f.missRps.value.toFixed(1)} (${each(f.missRps.perProcess, 1)})`,
            ratio(f.missRps.value, off.missRps.value),
            `${(f.missCpu.value / 1000).toFixed(2)} (${f.missCpu.perProcess.map((v) => (v / 1000).toFixed(2)).join(" / ")})`,
            ratio(off.missCpu.value, f.missCpu.value),
          ];
        }),
      ),
      "",
      `Machine load (1-minute average) ${loadBefore.toFixed(1)} before, ${loadAfter.toFixed(1)} after, on ${os.cpus().length} cores.`,
      "",
      "Targets: throughput against off (req/s), with the same ratio per CPU second beside it (the steadier figure on a shared machine); MET when both reach the minimum.",
      "",
      table(["target", "minimum", "req/s vs off", "per CPU second vs off", "verdict"], verdicts),
    ].join("\n");
  } finally {
    await Promise.all(services.map((s) => s.stop()));
    await sink.close();
    rmSync(root, { recursive: true, force: true });
  }
}
