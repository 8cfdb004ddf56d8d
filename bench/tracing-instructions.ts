/**
 * `pnpm bench tracing-instructions`: what tracing costs a memory-tier HIT and a MISS of the media
 * service (production bundle), counted in instructions by valgrind's callgrind. Time per request
 * on a shared machine moves by 10-25% from one process to the next; the instructions a process
 * runs for the same requests move by a few percent, so this is the figure that tells small costs
 * apart. Each setting runs in one process under callgrind with instrumentation off; after 15,000
 * HITs (every function optimized by then) it is switched on for 2,048 HITs from 4 keep-alive
 * connections, then off, and the counts are read per thread: the JavaScript thread, and all the
 * others together (the export thread, libvips' threads, V8's compiler and garbage collector
 * helpers). Then the same process renders 300 MISSes to warm up and 64 counted ones (a new asset id
 * each, 2 connections). Three processes per setting (BENCH_INSTRUCTION_PROCESSES), medians: a
 * MISS's count moves by a few percent from one process to the next. Needs valgrind (Debian: apt-get install valgrind); BENCH_TRACING_NODES as
 * in `pnpm bench tracing`.
 */
import { execFileSync, spawnSync } from "node:child_process";
import http from "node:http";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  benchMediaEnv,
  buildMediaBundle,
  freePort,
  median,
  serviceNode,
  serviceNodeVersion,
  startProcess,
  table,
} from "./harness";
import { assetId } from "./media-cases";
import { Originals } from "./originals";
import { perTracingNode, photo, startSink } from "./tracing";

const ROOT = path.resolve(__dirname, "..");
const WARM_HITS = 15_000;
const COUNTED_HITS = Number(process.env.BENCH_INSTRUCTION_HITS ?? 2048);
const CONNECTIONS = 4;
const WARM_MISSES = Number(process.env.BENCH_INSTRUCTION_WARM_MISSES ?? 300);
const COUNTED_MISSES = Number(process.env.BENCH_INSTRUCTION_MISSES ?? 64);
const MISS_CONNECTIONS = 2;
/** Processes per setting (BENCH_INSTRUCTION_PROCESSES): a MISS's count moves by a few percent from one to the next. */
const PROCESSES = Math.max(1, Number(process.env.BENCH_INSTRUCTION_PROCESSES ?? 3));

interface Setting {
  name: string;
  exporter?: Record<string, string>;
  nodeArgs?: string[];
}

const ALL_SETTINGS: Setting[] = [
  { name: "off" },
  { name: "off + AsyncLocalStorage", nodeArgs: ["-r", path.join(ROOT, "bench/tracing-context.cjs")] },
  {
    name: "1% sampled",
    exporter: { OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.01" },
  },
  { name: "100% sampled", exporter: { OTEL_TRACES_SAMPLER: "parentbased_always_on" } },
  // BENCH_TRACING_DIAGNOSE=1: settings that take one part away, as in `pnpm bench tracing`.
  ...(process.env.BENCH_TRACING_DIAGNOSE === "1"
    ? [
        // The SDK and its instrumentations loaded, no span ever sampled.
        { name: "SDK loaded, always_off", exporter: { OTEL_TRACES_SAMPLER: "always_off" } },
        // Every span made and buffered, none exported while counted (no serialization, no requests).
        {
          name: "100% sampled, no export",
          exporter: {
            OTEL_TRACES_SAMPLER: "parentbased_always_on",
            OTEL_BSP_SCHEDULE_DELAY: "1000000000",
            OTEL_BSP_MAX_QUEUE_SIZE: "100000000",
            OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "100000000",
          },
        },
      ]
    : []),
];
/** BENCH_INSTRUCTION_SETTINGS (names separated by "|", e.g. "off|100% sampled") narrows the settings; the first is the base. */
const SETTINGS = ALL_SETTINGS.filter((s) =>
  (process.env.BENCH_INSTRUCTION_SETTINGS ?? "").trim()
    ? process.env
        .BENCH_INSTRUCTION_SETTINGS!.split("|")
        .map((n) => n.trim())
        .includes(s.name)
    : true,
);

/** Instructions per thread of one callgrind dump: `thread: N` and `totals: N` of each file. */
export function dumpTotals(files: { name: string; text: string }[]): Map<number, number> {
  const totals = new Map<number, number>();
  for (const { text } of files) {
    const thread = /^thread: (\d+)$/m.exec(text);
    const count = /^totals: (\d+)$/m.exec(text);
    if (thread && count) totals.set(Number(thread[1]), (totals.get(Number(thread[1])) ?? 0) + Number(count[1]));
  }
  return totals;
}

/**
 * `count` GETs over `connections` keep-alive connections, one after another on each, of `url(i)`
 * for i = 0, 1, ...; anything but a 200 with X-Cache `expect` fails (none: any 200).
 */
async function gets(
  url: (i: number) => string,
  count: number,
  connections: number,
  expect?: "HIT" | "MISS",
): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  let next = 0;
  const one = (target: string) =>
    new Promise<void>((resolve, reject) => {
      http
        .get(target, { agent }, (res) => {
          if (res.statusCode !== 200 || (expect && res.headers["x-cache"] !== expect)) {
            reject(
              new Error(`${target}: ${res.statusCode} ${String(res.headers["x-cache"])}, expected a 200 ${expect}`),
            );
          }
          res.resume();
          res.on("end", resolve);
        })
        .on("error", reject);
    });
  try {
    await Promise.all(
      Array.from({ length: connections }, async () => {
        while (next < count) await one(url(next++));
      }),
    );
  } finally {
    agent.destroy();
  }
}

/** Instructions of the main thread and of all the others in a callgrind dump, each per request. */
interface Counted {
  main: number;
  others: number;
}

/** The instructions per HIT and per MISS of one setting: the JavaScript thread's and the other threads'. */
async function countSetting(
  setting: Setting,
  root: string,
  sinkUrl: string,
  hitPath: string,
  missPath: (i: number) => string,
  out: string,
): Promise<{ hit: Counted; miss: Counted }> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const prefix = path.join(out, `cg-${port}`);
  // Batches leave full (512 spans), as they do under load: callgrind slows the process about 50
  // times, and a batch sent by the clock (OTEL_BSP_SCHEDULE_DELAY) would carry 50 times fewer
  // spans than at full speed, each paying a whole export. 2,048 HITs and 64 MISSes of 8 spans each
  // then fill whole batches: each counted request pays its exact share of the exports.
  const exporter = setting.exporter
    ? {
        OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
        OTEL_BSP_SCHEDULE_DELAY: "1000000000",
        ...setting.exporter,
      }
    : {};
  const service = await startProcess(
    "services/media/dist/index.js",
    { ...benchMediaEnv(root), MEDIA_PORT: String(port), ...exporter, ...valgrindEnv() },
    `${base}/healthz`,
    [],
    {
      file: "valgrind",
      args: [
        "--tool=callgrind",
        "--instr-atstart=no",
        "--separate-threads=yes",
        // V8 writes code at run time: valgrind must see every write to it.
        "--smc-check=all-non-file",
        `--callgrind-out-file=${prefix}.%p`,
        serviceNode(),
        ...(setting.nodeArgs ?? []),
        buildMediaBundle(),
      ],
    },
  );
  try {
    const pid = String(service.pid);
    const control = (arg: string) =>
      execFileSync("callgrind_control", [arg, pid], { stdio: "ignore", env: { ...process.env, ...valgrindEnv() } });
    // Counts the requests of `load`, read from callgrind's dump number `dump`, per request.
    const counted = async (dump: number, requests: number, load: () => Promise<void>): Promise<Counted> => {
      control("--instr=on");
      await load();
      control("--instr=off");
      control("--dump");
      const name = new RegExp(`^${path.basename(prefix)}\\.${pid}\\.${dump}-\\d+$`);
      const files = readdirSync(out)
        .filter((file) => name.test(file))
        .map((file) => ({ name: file, text: readFileSync(path.join(out, file), "utf8") }));
      const totals = dumpTotals(files);
      const main = totals.get(1);
      if (main === undefined) throw new Error(`${setting.name}: no callgrind dump of the main thread in ${out}`);
      let others = 0;
      for (const [thread, count] of totals) if (thread !== 1) others += count;
      return { main: main / requests, others: others / requests };
    };
    await gets(() => `${base}${hitPath}`, 1, 1);
    await gets(() => `${base}${hitPath}`, WARM_HITS, CONNECTIONS, "HIT");
    const hit = await counted(1, COUNTED_HITS, () => gets(() => `${base}${hitPath}`, COUNTED_HITS, CONNECTIONS, "HIT"));
    await gets((i) => `${base}${missPath(i)}`, WARM_MISSES, MISS_CONNECTIONS, "MISS");
    const miss = await counted(2, COUNTED_MISSES, () =>
      gets((i) => `${base}${missPath(WARM_MISSES + i)}`, COUNTED_MISSES, MISS_CONNECTIONS, "MISS"),
    );
    return { hit, miss };
  } finally {
    await service.stop();
  }
}

/** vgdb (callgrind_control) finds the process by a file named after the user and host. */
function valgrindEnv(): Record<string, string> {
  return {
    USER: process.env.USER ?? "bench",
    LOGNAME: process.env.LOGNAME ?? process.env.USER ?? "bench",
    HOST: process.env.HOST ?? "localhost",
  };
}

async function measureInstructions(): Promise<string> {
  if (spawnSync("valgrind", ["--version"]).status !== 0) {
    throw new Error("valgrind is not installed (Debian: apt-get install valgrind)");
  }
  // Under callgrind the service starts about 50 times slower.
  process.env.BENCH_READY_SECONDS ??= "300";
  const root = mkdtempSync(path.join(os.tmpdir(), "bench-tracing-instructions-"));
  const originals = new Originals(root);
  await originals.add(photo);
  const sink = await startSink();
  const k = (n: number) => (n >= 1e6 ? `${(n / 1e6).toFixed(2)}M` : `${(n / 1000).toFixed(1)}k`);
  try {
    const hitPath = `/resize:width=300/${assetId(originals.reserve(photo, 1), photo)}.jpg`;
    const counted: { setting: string; hit: Counted; miss: Counted; each: string[] }[] = [];
    for (const setting of SETTINGS) {
      const runs: { hit: Counted; miss: Counted }[] = [];
      for (let p = 0; p < PROCESSES; p++) {
        // New asset ids for each process: every MISS renders.
        const first = originals.reserve(photo, WARM_MISSES + COUNTED_MISSES);
        const missPath = (i: number) => `/resize:width=300/${assetId(first + i, photo)}.jpg`;
        runs.push(await countSetting(setting, root, sink.url, hitPath, missPath, root));
      }
      const middle = (request: "hit" | "miss", thread: keyof Counted) => median(runs.map((r) => r[request][thread]));
      counted.push({
        setting: setting.name,
        hit: { main: middle("hit", "main"), others: middle("hit", "others") },
        miss: { main: middle("miss", "main"), others: middle("miss", "others") },
        each: runs.map((r) => `${k(r.miss.main + r.miss.others)}`),
      });
    }
    const off = counted[0]!;
    const versus = (n: number, base: number) => `+${(((n - base) / base) * 100).toFixed(1)}%`.replace("+-", "-");
    const rows = (request: "hit" | "miss") =>
      counted.map((c) => [
        c.setting,
        k(c[request].main),
        versus(c[request].main, off[request].main),
        k(c[request].others),
        versus(c[request].main + c[request].others, off[request].main + off[request].others),
        ...(request === "miss" && PROCESSES > 1 ? [c.each.join(" / ")] : []),
      ]);
    return [
      `Media service (bundle, Node ${serviceNodeVersion()}), ${photo.name} original, \`resize:width=300\`, instructions counted by valgrind's callgrind, ${PROCESSES === 1 ? "one process per setting" : `median of ${PROCESSES} processes per setting (each thread's count the median of its own)`}. ` +
        `HIT: memory-tier HITs, ${COUNTED_HITS} counted (${CONNECTIONS} keep-alive connections) after ${WARM_HITS} to warm up. ` +
        `MISS: a new asset id per request, ${COUNTED_MISSES} counted (${MISS_CONNECTIONS} connections) after ${WARM_MISSES} to warm up. ` +
        "`main`: the JavaScript thread, which answers every request; `other threads`: the export thread, libvips' threads and V8's compiler and garbage collector helpers. OTLP http/protobuf to a sink in the bench process.",
      "",
      table(["tracing", "main thread / HIT", "main vs off", "other threads / HIT", "all threads vs off"], rows("hit")),
      "",
      table(
        [
          "tracing",
          "main thread / MISS",
          "main vs off",
          "other threads / MISS",
          "all threads vs off",
          ...(PROCESSES > 1 ? ["all threads / MISS, each process"] : []),
        ],
        rows("miss"),
      ),
    ].join("\n");
  } finally {
    await sink.close();
    rmSync(root, { recursive: true, force: true });
  }
}

export function benchTracingInstructions(): Promise<string> {
  return perTracingNode(measureInstructions);
}
