/**
 * `pnpm bench tracing-instructions`: what tracing costs a memory-tier HIT of the media service
 * (production bundle), counted in instructions by valgrind's callgrind. Time per request on a
 * shared machine moves by 10-25% from one process to the next; the instructions a process runs
 * for the same requests move by a few percent, so this is the figure that tells small costs apart.
 * Each setting runs in one process under callgrind with instrumentation off; after 15,000 HITs
 * (every function optimized by then) it is switched on for 2,000 HITs from 4 keep-alive
 * connections, then off, and the counts are read per thread: the JavaScript thread, and all the
 * others together (the export thread, V8's compiler and garbage collector helpers). Needs valgrind
 * (Debian: apt-get install valgrind); BENCH_TRACING_NODES as in `pnpm bench tracing`.
 */
import { execFileSync, spawnSync } from "node:child_process";
import http from "node:http";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { benchMediaEnv, buildMediaBundle, freePort, serviceNode, serviceNodeVersion, startProcess, table } from "./harness";
import { assetId } from "./media-cases";
import { Originals } from "./originals";
import { perTracingNode, photo, startSink } from "./tracing";

const ROOT = path.resolve(__dirname, "..");
const WARM_HITS = 15_000;
const COUNTED_HITS = Number(process.env.BENCH_INSTRUCTION_HITS ?? 2000);
const CONNECTIONS = 4;

interface Setting {
  name: string;
  exporter?: Record<string, string>;
  nodeArgs?: string[];
}

const SETTINGS: Setting[] = [
  { name: "off" },
  { name: "off + AsyncLocalStorage", nodeArgs: ["-r", path.join(ROOT, "bench/tracing-context.cjs")] },
  {
    name: "1% sampled",
    exporter: { OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.01" },
  },
  { name: "100% sampled", exporter: { OTEL_TRACES_SAMPLER: "parentbased_always_on" } },
];

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
 * `count` GETs of `url` over `connections` keep-alive connections, one after another on each; with
 * `onlyHits`, anything but a 200 HIT fails (the warm-up's first request renders).
 */
async function hits(url: string, count: number, connections: number, onlyHits: boolean): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  let left = count;
  const one = () =>
    new Promise<void>((resolve, reject) => {
      http
        .get(url, { agent }, (res) => {
          if (res.statusCode !== 200 || (onlyHits && res.headers["x-cache"] !== "HIT")) {
            reject(new Error(`${url}: ${res.statusCode} ${String(res.headers["x-cache"])}, expected a 200 HIT`));
          }
          res.resume();
          res.on("end", resolve);
        })
        .on("error", reject);
    });
  try {
    await Promise.all(
      Array.from({ length: connections }, async () => {
        while (left-- > 0) await one();
      }),
    );
  } finally {
    agent.destroy();
  }
}

/** The instructions per HIT of one setting: the JavaScript thread's and the other threads'. */
async function countSetting(
  setting: Setting,
  root: string,
  sinkUrl: string,
  hitPath: string,
  out: string,
): Promise<{ main: number; others: number }> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const prefix = path.join(out, `cg-${port}`);
  const exporter = setting.exporter
    ? { OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl, OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf", ...setting.exporter }
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
    await hits(`${base}${hitPath}`, 1, 1, false);
    await hits(`${base}${hitPath}`, WARM_HITS, CONNECTIONS, true);
    execFileSync("callgrind_control", ["--instr=on", pid], { stdio: "ignore", env: { ...process.env, ...valgrindEnv() } });
    await hits(`${base}${hitPath}`, COUNTED_HITS, CONNECTIONS, true);
    execFileSync("callgrind_control", ["--instr=off", pid], { stdio: "ignore", env: { ...process.env, ...valgrindEnv() } });
    execFileSync("callgrind_control", ["--dump", pid], { stdio: "ignore", env: { ...process.env, ...valgrindEnv() } });
    const dump = new RegExp(`^${path.basename(prefix)}\\.${pid}\\.1-\\d+$`);
    const files = readdirSync(out)
      .filter((name) => dump.test(name))
      .map((name) => ({ name, text: readFileSync(path.join(out, name), "utf8") }));
    const totals = dumpTotals(files);
    const main = totals.get(1);
    if (main === undefined) throw new Error(`${setting.name}: no callgrind dump of the main thread in ${out}`);
    let others = 0;
    for (const [thread, count] of totals) if (thread !== 1) others += count;
    return { main: main / COUNTED_HITS, others: others / COUNTED_HITS };
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
  try {
    const hitPath = `/resize:width=300/${assetId(originals.reserve(photo, 1), photo)}.jpg`;
    const counted: { setting: string; main: number; others: number }[] = [];
    for (const setting of SETTINGS) {
      counted.push({ setting: setting.name, ...(await countSetting(setting, root, sink.url, hitPath, root)) });
    }
    const off = counted[0]!;
    const k = (n: number) => `${(n / 1000).toFixed(1)}k`;
    return [
      `Media service (bundle, Node ${serviceNodeVersion()}), ${photo.name} original, \`resize:width=300\`, memory-tier HITs: ` +
        `instructions per HIT counted by valgrind's callgrind over ${COUNTED_HITS} HITs (${CONNECTIONS} keep-alive connections) after ${WARM_HITS} to warm up, one process per setting. ` +
        "`main`: the JavaScript thread, which answers every request; `other threads`: the export thread and V8's compiler and garbage collector helpers. OTLP http/protobuf to a sink in the bench process.",
      "",
      table(
        ["tracing", "main thread / HIT", "main vs off", "other threads / HIT", "all threads vs off"],
        counted.map((c) => [
          c.setting,
          k(c.main),
          `+${(((c.main - off.main) / off.main) * 100).toFixed(1)}%`.replace("+-", "-"),
          k(c.others),
          `+${(((c.main + c.others - off.main - off.others) / (off.main + off.others)) * 100).toFixed(1)}%`.replace("+-", "-"),
        ]),
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
