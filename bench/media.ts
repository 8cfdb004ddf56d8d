/**
 * Media benchmarks: throughput (req/s) measured from outside by `wrk` in its own process, every
 * figure next to a reference measured in the same run, interleaved cell by cell, reported as a ratio.
 *
 *  - MISS (every request a fresh asset id, bytes hard-linked): the media service vs raw sharp
 *    (same calls, file read per operation, same libvips cache setting, in its own process) and
 *    IPX 3 over HTTP on the same files, at 2 and 8 connections / operations in flight.
 *  - HIT (memory tier) at 8 / 32 / 128 connections vs a bare node:http server sending the same
 *    bytes and headers, and nginx serving the file (ceiling) when installed.
 *  - 304 revalidations (If-None-Match) vs the bare server doing the same.
 *  - Redis-tier hit (memory tier off) vs a bare node:http server doing one Redis GET per request,
 *    when redis-server is installed (a private instance on a free port).
 * See bench/README.md for the settings (BENCH_* variables) and how to read the tables.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import sharp from "sharp";
import {
  benchMediaEnv,
  findWrk,
  freePort,
  median,
  processCpuMs,
  threadGroupCpuMs,
  threadGroupDelta,
  type ThreadGroupCpu,
  ratio,
  runWrk,
  startMediaService,
  startProcess,
  table,
  type WrkResult,
} from "./harness";
import { assetId, benchImages, benchSteps, type BenchImage, type BenchStep } from "./media-cases";
import { Originals } from "./originals";
import {
  calibrationProblem,
  judge,
  LOAD_BOUND_FACTOR,
  MEDIA_TARGETS,
  TARGET_HEADER,
  TARGET_RULES,
  targetRows,
  unmeasured,
  type Judgement,
  type Measurement,
  type Target,
} from "./targets";

const ROOT = path.resolve(__dirname, "..");
const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const MISS_SECONDS = num("BENCH_MISS_SECONDS", 4);
const HIT_SECONDS = num("BENCH_SECONDS", 3);
/**
 * MISS cells: three runs each, the order of the four systems reversed every other run, medians.
 * With one run the references are measured before the service in every cell, and the HTTP
 * floor (raw sharp's own work behind node:http) moves 0.83-1.22x against raw sharp from one cell
 * to the next on a shared VM: the machine's drift, not the systems, decides single cells.
 */
const REPEAT = Math.max(1, num("BENCH_REPEAT", 3));
/**
 * HIT, 304 and Redis-tier cells: short and noisy on a shared VM (one service process in one state
 * measured 24-38 µs of CPU per HIT over eight consecutive 5 s runs), so seven alternated runs by
 * default, each shorter.
 */
const HIT_REPEAT = Math.max(1, num("BENCH_HIT_REPEAT", 7));
/**
 * Service processes (and as many bare ones) per HIT cell: a process's HIT cost is a draw, so one
 * process pair says little about the next (README, Media performance).
 */
const HIT_PROCESSES = Math.max(1, num("BENCH_HIT_PROCESSES", 4));
/** Runs per process pair in each HIT cell (alternated; the pair's figure is their median). */
const HIT_PAIR_REPEAT = Math.max(1, num("BENCH_HIT_PAIR_REPEAT", 3));
const list = (name: string) =>
  process.env[name]
    ?.split(",")
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
const PARTS = list("BENCH_MEDIA_PARTS") ?? ["miss", "hit", "redis"];
const IMAGE_FILTER = list("BENCH_MEDIA_IMAGES");
const STEP_FILTER = list("BENCH_MEDIA_STEPS");
const MISS_CONNECTIONS = [2, 8];
/**
 * Seconds of MISS load per image, step and connection count that each HTTP system (service,
 * floor, IPX) serves before the first measured MISS cell (0: none). A fresh service process
 * spends its first minutes of MISS traffic compiling: traced with --trace-opt in the bench's
 * order, TurboFan's background compilations took 0.2-4 ms of CPU per request through the 12 MP
 * cells (renderUnmapped alone 120-190 ms per compilation, several times over as new steps
 * deoptimised it) and still 0-0.3 ms in the 2.5 MP cells, on the same two cores that render. A
 * CDN origin runs for days; what the cells should measure is its steady state, so every system
 * gets the same mixed warm-up. Raw sharp runs in a fresh process per cell with its own
 * three-operation warm-up (its JavaScript is a few functions). 4 s, not 2 (6,090 service MISSes
 * on a slow AMD VM; 2 s gave 4,460 on a faster Intel one): compilation is counted in calls, not
 * seconds, and functions called once per MISS are first optimised only after thousands of
 * MISSes. Traced at 120 req/s (2.5 MP thumbnails, 2 connections), TurboFan still finished 2-8
 * first optimisations a second between 60 and 75 s of load (createAbortSignal, runStep,
 * OriginalSource), and V8's helper threads used 0.40 ms of CPU per MISS after one 4 s warm-up
 * round against 0.04-0.07 ms after six or eight (the floor: 0.02-0.06), by when the service
 * measured 0.98-1.04x of the floor.
 */
const MISS_WARMUP_SECONDS = Math.max(0, num("BENCH_MISS_WARMUP_SECONDS", 4));
const HIT_CONNECTIONS = [8, 32, 128];
/**
 * HIT cells load connections that are already open (bench/open-connections.lua), as a CDN's
 * keep-alive pool is: the first request on each connection waits this long. The cost of opening
 * them under load is measured on its own (the "connections opened under load" table).
 */
const HIT_OPEN_MS = Math.max(0, num("BENCH_HIT_OPEN_MS", 1000));
const REDIS_CONNECTIONS = [8, 32];

interface Proc {
  stop(): Promise<void>;
  pid?: number;
}

export async function benchMedia(): Promise<string> {
  const wrk = findWrk();
  if (!wrk) {
    const msg =
      "SKIPPED: `wrk` is not installed. The media bench measures from a separate load process; " +
      "install it (Debian/Ubuntu: `apt-get install wrk`, macOS: `brew install wrk`) or set WRK=/path/to/wrk.";
    process.stderr.write(`${msg}\n`);
    return msg;
  }
  const dir = mkdtempSync(path.join(tmpdir(), "bench-media-"));
  const started: Proc[] = [];
  try {
    return await measure(wrk, dir, started);
  } finally {
    for (const p of started.reverse()) await p.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function fetchOk(url: string, headers: Record<string, string> = {}): Promise<Response> {
  const res = await fetch(url, { headers });
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  return res;
}

async function readMisses(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const m = /^media_misses_total(?:\{[^}]*\})? (\d+)/m.exec(text);
  if (!m) throw new Error("media_misses_total not found on /metrics");
  return Number(m[1]);
}

/** The systems a MISS cell measures: raw sharp in its own process, the others over HTTP. */
type MissSystem = "service" | "sharp" | "floor" | "ipx";
type HttpMissSystem = Exclude<MissSystem, "sharp">;
const HTTP_MISS_SYSTEMS: readonly HttpMissSystem[] = ["service", "floor", "ipx"];
/** The order of the systems in a MISS row's columns and log line. */
const COLUMN_ORDER: readonly MissSystem[] = ["service", "sharp", "floor", "ipx"];
/** One list per system (a cell's runs). */
const perMissSystem = <T>(): Record<MissSystem, T[]> => ({ service: [], sharp: [], floor: [], ipx: [] });

/** The line bench/sharp-reference.ts prints (threads: per operation by thread group; absent off Linux). */
interface SharpReferenceResult {
  rps: number;
  /** 99th percentile of the operations' times (ms). */
  p99Ms?: number;
  threads?: ThreadGroupCpu;
}

function runSharpReference(job: object): Promise<SharpReferenceResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "bench/sharp-reference.ts")], {
      cwd: ROOT,
      env: { ...process.env, BENCH_SHARP_JOB: JSON.stringify(job) },
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.once("error", reject);
    child.once("exit", (code) => {
      if (code !== 0) return reject(new Error(`sharp reference exited with ${code}`));
      resolve(JSON.parse(out.trim().split("\n").at(-1)!) as SharpReferenceResult);
    });
  });
}

/**
 * Waits until a server finished the requests still in flight when wrk stopped (its CPU time stops
 * growing), so a slow system's leftover work never runs into the next system's cell. At most 60 s.
 */
async function waitIdle(pid: number | undefined): Promise<void> {
  let last = processCpuMs(pid);
  if (last === undefined) return;
  for (const deadline = Date.now() + 60_000; Date.now() < deadline;) {
    await new Promise((r) => setTimeout(r, 250));
    const now = processCpuMs(pid)!;
    if (now - last <= 10) return;
    last = now;
  }
}

function checkWrk(label: string, r: WrkResult, allowNone = false, allowFailed = false): WrkResult {
  if ((r.failed > 0 && !allowFailed) || r.socketErrors > 0)
    throw new Error(
      `${label}: ${r.failed} error responses, ${r.socketErrors} socket errors (of ${r.requests})` +
        (r.firstError ? `; first: ${r.firstError}` : ""),
    );
  if (r.requests === 0 && !allowNone) throw new Error(`${label}: no request completed`);
  return r;
}

/**
 * Fresh ids for `seconds` of MISS load at c connections on work guessed at `rate` req/s.
 * Generous: a fast reference or a quieter moment can beat the guess several times over.
 */
const freshIds = (rate: number, seconds: number, c: number) => Math.ceil(Math.max(rate, 100) * 6 * seconds) + c + 16;

/** Where MISS load for one system goes: every request `<prefix><fresh id><suffix>` on `url`. */
interface MissTarget {
  url: string;
  prefix: string;
  suffix: string;
}

/**
 * `seconds` of MISS load at c connections (bench/miss.lua), every request a fresh id of `image`
 * from `need` ids reserved for it. A run that used them all asked for ids nobody linked (404s):
 * that is refused before the error responses are, so the message says what to raise. Error
 * answers (a 429, a 503) fail the run, except with `countFailed`: a measured cell counts them.
 */
async function missLoad(
  wrk: string,
  originals: Originals,
  options: {
    label: string;
    target: MissTarget;
    image: BenchImage;
    connections: number;
    seconds: number;
    need: number;
    countFailed?: boolean;
  },
): Promise<WrkResult> {
  const { label, target, connections, need } = options;
  const first = originals.reserve(options.image, need);
  const res = await runWrk({
    wrk,
    url: target.url,
    connections,
    seconds: options.seconds,
    script: path.join(ROOT, "bench/miss.lua"),
    scriptArgs: [target.prefix, String(first), target.suffix],
  });
  if (res.requests + connections >= need) throw new Error(`${label}: ran out of fresh ids (${need}); raise the guess`);
  return checkWrk(label, res, true, options.countFailed);
}

/** Answers per second that were 2xx (wrk's rate counts every answer). */
const okRate = (r: WrkResult) => (r.requests > 0 ? (r.rps * (r.requests - r.failed)) / r.requests : 0);

const fmt = (v: number) => (v >= 1000 ? `${(v / 1000).toFixed(1)}k` : v.toFixed(v >= 100 ? 0 : 1));
const loadNote = () => {
  const l = spawnSync("cat", ["/proc/loadavg"], { encoding: "utf8" }).stdout?.split(" ").slice(0, 3).join(" ");
  return l ? `load average ${l}` : "";
};

async function measure(wrk: string, dir: string, started: Proc[]): Promise<string> {
  const out: string[] = [];
  const log = (line: string) => process.stderr.write(`[bench media] ${line}\n`);
  const originals = new Originals(dir);
  const images = benchImages.filter((i) => !IMAGE_FILTER || IMAGE_FILTER.some((f) => i.name.toLowerCase().includes(f)));
  const steps = benchSteps.filter((s) => !STEP_FILTER || STEP_FILTER.some((f) => s.name.toLowerCase().includes(f)));
  for (const image of benchImages) await originals.add(image);

  const judgements: Judgement[] = [];
  const serviceEnv = benchMediaEnv(dir);
  const nodeArgs = process.env.BENCH_MEDIA_NODE_ARGS?.split(" ").filter(Boolean) ?? [];
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const media = await startMediaService({ ...serviceEnv, MEDIA_PORT: String(port) }, `${base}/healthz`, nodeArgs);
  started.push(media);

  out.push(
    `Load: \`wrk -t1\` in its own process; MISS cells ${MISS_SECONDS} s, HIT cells ${HIT_SECONDS} s, ` +
      `${REPEAT} run(s) per MISS cell and ${HIT_REPEAT} per HIT/304/Redis cell (median), references measured interleaved with the service cell by cell. ` +
      `Service: the production bundle (\`pnpm build media\`, plain node). ` +
      `Start: ${loadNote()}.`,
  );

  if (PARTS.includes("miss")) {
    const ipxPort = await freePort();
    const ipx = await startProcess(
      "bench/ipx-server.ts",
      { PORT: String(ipxPort), IPX_DIR: originals.dir },
      `http://127.0.0.1:${ipxPort}/`,
    );
    started.push(ipx);
    const ipxBase = `http://127.0.0.1:${ipxPort}`;
    const floorPort = await freePort();
    const floor = await startProcess(
      "bench/http-floor.ts",
      { PORT: String(floorPort), FLOOR_DIR: originals.dir },
      `http://127.0.0.1:${floorPort}/`,
    );
    started.push(floor);
    const floorBase = `http://127.0.0.1:${floorPort}`;
    // Each HTTP system once: its process, its base URL and how it names an original and a step.
    const idSuffix = (image: BenchImage) => assetId(0, image).slice(8);
    const http: Record<
      HttpMissSystem,
      { pid: number | undefined; url: string; path: (image: BenchImage, step: BenchStep) => Omit<MissTarget, "url"> }
    > = {
      service: {
        pid: media.pid,
        url: base,
        path: (image, step) => ({ prefix: `/${step.service}/`, suffix: `${idSuffix(image)}.${image.extension}` }),
      },
      floor: {
        pid: floor.pid,
        url: floorBase,
        path: (image, step) => ({ prefix: `/${benchSteps.indexOf(step)}/`, suffix: `${idSuffix(image)}@blob` }),
      },
      ipx: {
        pid: ipx.pid,
        url: ipxBase,
        path: (image, step) => ({ prefix: `/${step.ipx(image)}/`, suffix: `${idSuffix(image)}@blob` }),
      },
    };
    const missTarget = (who: HttpMissSystem, image: BenchImage, step: BenchStep): MissTarget => ({
      url: http[who].url,
      ...http[who].path(image, step),
    });
    // Expected rate per image/step (from one timed request, then the warm-up and the measurements):
    // enough fresh ids per wrk run, and cells long enough for ~40 requests (slow work gets up to
    // 5x MISS_SECONDS). The output check comes first so that the warm-up is sized by it too.
    const rateGuess = new Map<string, number>();
    const sameOutput = new Map<string, string>();
    for (const image of images) {
      for (const step of steps) {
        const { same, ms } = await checkSameOutput(base, ipxBase, originals, image, step);
        sameOutput.set(`${image.name} ${step.name}`, same);
        rateGuess.set(`${image.name} ${step.name}`, 1000 / ms);
      }
    }
    const warmed = new Map<string, number>();
    if (MISS_WARMUP_SECONDS > 0) {
      for (const who of HTTP_MISS_SYSTEMS) {
        let requests = 0;
        for (const image of images) {
          for (const step of steps) {
            for (const c of [...MISS_CONNECTIONS].reverse()) {
              const work = `${image.name} ${step.name}`;
              const res = await missLoad(wrk, originals, {
                label: `${who} MISS warm-up ${work} c=${c}`,
                target: missTarget(who, image, step),
                image,
                connections: c,
                seconds: MISS_WARMUP_SECONDS,
                need: freshIds(rateGuess.get(work)!, MISS_WARMUP_SECONDS, c),
              });
              rateGuess.set(work, Math.max(rateGuess.get(work)!, res.rps));
              requests += res.requests;
            }
          }
        }
        warmed.set(who, requests);
        await waitIdle(http[who].pid);
      }
      log(`MISS warm-up: ${[...warmed].map(([who, n]) => `${who} ${n}`).join(", ")} requests`);
    }
    const rows: string[][] = [];
    const vsSharp: Measurement[] = [];
    const vsIpx: Measurement[] = [];
    /** Per cell: the service's 2xx answers / all its answers (every run). */
    const okAnswers: Measurement[] = [];
    for (const image of images) {
      for (const step of steps) {
        const work = `${image.name} ${step.name}`;
        for (const c of MISS_CONNECTIONS) {
          const cell = `${image.name} ${step.name} c=${c}`;
          // Per system, each run's req/s, and its CPU ms per request by thread group (harness.ts
          // threadGroupCpuMs): the whole process, its JavaScript thread, its other node threads
          // (libuv's pool, V8's helpers) and libvips' threads.
          const rps = perMissSystem<number>();
          const cpu = perMissSystem<ThreadGroupCpu>();
          /** Per system: every run's p99 latency (ms), and its error answers against all answers. */
          const p99 = perMissSystem<number>();
          const answers = perMissSystem<{ failed: number; all: number }>();
          for (let r = 0; r < REPEAT; r++) {
            const guess = rateGuess.get(work)!;
            const seconds = Math.min(MISS_SECONDS * 5, Math.max(MISS_SECONDS, Math.ceil(40 / guess)));
            const need = freshIds(guess, seconds, c);
            // The service next to both systems its targets compare it with (raw sharp, IPX), so the
            // VM's drift between two 4 s windows weighs as little as it can on those ratios; the
            // floor (a diagnostic) at the outer end. Reversed every other run.
            const order: MissSystem[] =
              r % 2 === 0 ? ["floor", "sharp", "service", "ipx"] : ["ipx", "service", "sharp", "floor"];
            for (const who of order) {
              if (who === "sharp") {
                const first = originals.reserve(image, 64);
                const ref = await runSharpReference({
                  originalsDir: originals.dir,
                  image: image.name,
                  step: step.name,
                  first,
                  count: 64,
                  concurrency: c,
                  seconds,
                });
                rps.sharp.push(ref.rps);
                if (ref.p99Ms !== undefined) p99.sharp.push(ref.p99Ms);
                if (ref.threads !== undefined) cpu.sharp.push(ref.threads);
              } else {
                const target = missTarget(who, image, step);
                const pid = http[who].pid;
                const before = who === "service" ? await readMisses(base) : 0;
                const cpuBefore = threadGroupCpuMs(pid);
                const res = await missLoad(wrk, originals, {
                  label: `${who} ${cell}`,
                  target,
                  image,
                  connections: c,
                  seconds,
                  need,
                  countFailed: true,
                });
                await waitIdle(pid);
                const cpuAfter = threadGroupCpuMs(pid);
                // Closed loop: c requests were still in flight when wrk stopped; waitIdle let them finish.
                if (cpuBefore !== undefined && cpuAfter !== undefined) {
                  cpu[who].push(threadGroupDelta(cpuBefore, cpuAfter, res.requests + c));
                }
                if (who === "service") {
                  const misses = (await readMisses(base)) - before;
                  const rendered = res.requests - res.failed;
                  if (misses < rendered) throw new Error(`${cell}: ${rendered} answered 2xx but ${misses} MISS`);
                }
                rps[who].push(okRate(res));
                p99[who].push(res.p99Ms);
                answers[who].push({ failed: res.failed, all: res.requests });
                rateGuess.set(work, Math.max(rateGuess.get(work)!, res.rps));
              }
            }
          }
          const s = median(rps.service);
          const rs = median(rps.sharp);
          const ip = median(rps.ipx);
          const fl = median(rps.floor);
          log(
            `${cell}: service ${s.toFixed(1)}, sharp ${rs.toFixed(1)}, floor ${fl.toFixed(1)}, ipx ${ip.toFixed(1)} req/s ` +
              `(runs: ${COLUMN_ORDER.map((who) => rps[who].map((x) => x.toFixed(0)).join("/")).join(", ")}; ${loadNote()})`,
          );
          vsSharp.push({ label: cell, ratio: s / rs });
          vsIpx.push({ label: cell, ratio: s / ip });
          const served = answers.service.reduce((n, a) => n + a.all, 0);
          const failed = answers.service.reduce((n, a) => n + a.failed, 0);
          okAnswers.push({
            label: `${cell} (${failed} of ${served} not 2xx)`,
            ratio: served ? (served - failed) / served : NaN,
          });
          const nonOk = (who: MissSystem) =>
            who === "sharp" ? "-" : String(answers[who].reduce((n, a) => n + a.failed, 0));
          const latency = (who: MissSystem) => (p99[who].length ? median(p99[who]).toFixed(0) : "?");
          // One column: a thread group's median over the runs, service / sharp / floor / IPX.
          const column = (group: keyof ThreadGroupCpu, digits: number) =>
            COLUMN_ORDER.map((who) =>
              cpu[who].length > 0 ? median(cpu[who].map((t) => t[group])).toFixed(digits) : "?",
            ).join(" / ");
          rows.push([
            image.name,
            step.name,
            String(c),
            fmt(s),
            fmt(rs),
            fmt(fl),
            fmt(ip),
            ratio(s, rs),
            ratio(s, fl),
            ratio(fl, rs),
            ratio(s, ip),
            column("all", 1),
            column("main", 2),
            column("node", 2),
            column("libvips", 1),
            COLUMN_ORDER.map(latency).join(" / "),
            COLUMN_ORDER.map(nonOk).join(" / "),
            sameOutput.get(work)!,
          ]);
        }
      }
    }
    await ipx.stop();
    judgements.push(
      judge(MEDIA_TARGETS.missVsSharp, vsSharp),
      judge(MEDIA_TARGETS.missVsIpx, vsIpx),
      judge(MEDIA_TARGETS.missAnswers, okAnswers),
    );
    out.push(
      "",
      "### MISS throughput (every request a fresh asset id)",
      "",
      "Service: `GET /<step>/<fresh id>.<ext>` (checked: every request counted in `media_misses_total`). " +
        "Raw sharp: `bench/sharp-reference.ts`, c operations in flight, `fs.readFile` + the same sharp calls, " +
        "`sharp.cache(false)` like the service. HTTP floor: `bench/http-floor.ts`, a bare node:http server doing " +
        "exactly raw sharp's work per request (what any Node HTTP service could at best reach; `floor / sharp` is " +
        "the cost of HTTP itself on this machine). IPX 3.1.1 (its own sharp 0.34): `GET /<modifiers>/<file>` on the same files. " +
        (MISS_WARMUP_SECONDS > 0
          ? `Warm-up: before the first cell, the service, the floor and IPX each served ${MISS_WARMUP_SECONDS} s of MISS load per image, step and connection count of the run ` +
            `(${[...warmed].map(([who, n]) => `${who} ${n}`).join(", ")} requests), so the cells measure their steady state, not their JIT compiling (raw sharp: a fresh process per run, three operations first). `
          : "No warm-up (BENCH_MISS_WARMUP_SECONDS=0): the service's first cells include its JIT compiling. ") +
        "`CPU ms/req`: CPU time of the whole process (all threads) per request or operation, the work each " +
        "system spends; it stays comparable when the machine is busy and req/s does not. " +
        "`main thread ms/req`: the part of it spent on the JavaScript thread (HTTP, the service's own code, " +
        "sharp's set-up of each pipeline); libvips and the libuv pool do the pixel work on other threads, so the " +
        "difference between the service and the floor in this column is what the service adds per request. " +
        "`node threads ms/req`: the process's other live threads not named libvips (libuv's pool, which calls " +
        "into libvips once per pipeline and reads files; V8's compiler and GC helpers). `libvips threads ms/req`: " +
        "what is left of the whole (libvips' workers, which come and go). The three add up to `CPU ms/req`. " +
        "`p99 ms`: wrk's 99th percentile latency (raw sharp: of its operations), median over the runs. " +
        "`non-2xx`: error answers over all runs (a 429 or 503 would be one; req/s counts 2xx answers only). " +
        "`same output` compares width x height x channels of the three results.",
      "",
      table(
        [
          "image",
          "step",
          "conns",
          "service req/s",
          "raw sharp",
          "HTTP floor",
          "IPX",
          "service / sharp",
          "service / floor",
          "floor / sharp",
          "service / IPX",
          "CPU ms/req service / sharp / floor / IPX",
          "main thread ms/req service / sharp / floor / IPX",
          "node threads ms/req service / sharp / floor / IPX",
          "libvips threads ms/req service / sharp / floor / IPX",
          "p99 ms service / sharp / floor / IPX",
          "non-2xx service / sharp / floor / IPX",
          "same output",
        ],
        rows,
      ),
    );
  }

  // A part that fails is reported in place; the parts measured before it are kept.
  const part = async (name: string, target: Target, run: () => Promise<string[]>) => {
    try {
      out.push("", ...(await run()));
    } catch (err) {
      log(`${name} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      out.push("", `### ${name}`, "", `FAILED: ${err instanceof Error ? err.message : String(err)}`);
      judgements.push(unmeasured(target, "the part FAILED"));
      process.exitCode = 1;
    }
  };
  if (PARTS.includes("hit"))
    await part("HIT throughput", MEDIA_TARGETS.hit, () =>
      measureHit(wrk, { base, pid: media.pid }, { env: serviceEnv, nodeArgs }, originals, dir, started, judgements),
    );
  if (PARTS.includes("redis"))
    await part("Redis-tier HIT", MEDIA_TARGETS.redis, () =>
      measureRedis(wrk, originals, serviceEnv, started, judgements),
    );
  out.push("", `End: ${loadNote()}.`);
  // The verdicts go first, under the run's header: what a reader wants before the 60 ratios.
  out.splice(1, 0, "", "### Targets", "", TARGET_RULES, "", table(TARGET_HEADER, targetRows(judgements)));
  return out.join("\n");
}

/** Width x height x channels of the service's, IPX's and raw sharp's result for one image/step. */
async function checkSameOutput(
  base: string,
  ipxBase: string,
  originals: Originals,
  image: BenchImage,
  step: BenchStep,
): Promise<{ same: string; ms: number }> {
  const first = originals.reserve(image, 1);
  const id = assetId(first, image);
  const shape = async (bytes: Buffer) => {
    const m = await sharp(bytes).metadata();
    return `${m.width}x${m.height}x${m.channels} ${m.format}`;
  };
  // One request first (JIT, first-use costs), then the timed one that seeds the rate guess.
  await (
    await fetchOk(`${base}/${step.service}/${assetId(originals.reserve(image, 1), image)}.${image.extension}`)
  ).arrayBuffer();
  const started = performance.now();
  const svcBytes = Buffer.from(await (await fetchOk(`${base}/${step.service}/${id}.${image.extension}`)).arrayBuffer());
  const ms = performance.now() - started;
  const svc = await shape(svcBytes);
  const ipx = await shape(Buffer.from(await (await fetchOk(`${ipxBase}/${step.ipx(image)}/${id}@blob`)).arrayBuffer()));
  const raw = await shape(await step.raw(sharp(path.join(originals.dir, `${id}@blob`)), image).toBuffer());
  const same = svc === raw && svc === ipx ? `yes (${svc})` : `NO: service ${svc}, sharp ${raw}, IPX ${ipx}`;
  return { same, ms };
}

/** Headers of a service response, as the bare server should replay them. */
function replayHeaders(res: Response): Record<string, string> {
  const h: Record<string, string> = {};
  res.headers.forEach((v, k) => {
    if (!["date", "connection", "keep-alive", "x-request-id", "transfer-encoding"].includes(k)) h[k] = v;
  });
  return h;
}

/**
 * One checked wrk run against a server, with that server's CPU time (user + system, whole
 * process) per request answered, in microseconds (undefined off Linux).
 */
async function runWrkWithCpu(
  label: string,
  pid: number | undefined,
  options: Parameters<typeof runWrk>[0],
): Promise<{ rps: number; p99Ms: number; cpuUs: number | undefined }> {
  const before = processCpuMs(pid);
  const res = checkWrk(label, await runWrk(options));
  const after = processCpuMs(pid);
  return {
    rps: res.rps,
    p99Ms: res.p99Ms,
    cpuUs: before !== undefined && after !== undefined ? ((after - before) * 1000) / res.requests : undefined,
  };
}

/** Two seconds of load on each server before its first measured cell (JIT, connection pools). */
async function warmUp(wrk: string, urls: string[]): Promise<void> {
  for (const url of urls) checkWrk(`warm-up ${url}`, await runWrk({ wrk, url, connections: 8, seconds: 2 }));
}

/** One server of a HIT cell: where to load it and which process to charge its CPU to. */
interface HitServer {
  url: string;
  pid: number | undefined;
}

/**
 * A bare node:http reference (bench/bare-server.ts) on a fresh port, answering `pathname` as
 * `env` says (the body file or Redis key, and the headers to replay); registered in `started`.
 */
async function startBareServer(
  env: Record<string, string>,
  pathname: string,
  started: Proc[],
): Promise<HitServer & { proc: Proc }> {
  const port = await freePort();
  const proc = await startProcess("bench/bare-server.ts", { ...env, PORT: String(port) }, `http://127.0.0.1:${port}/`);
  started.push(proc);
  return { url: `http://127.0.0.1:${port}${pathname}`, pid: proc.pid, proc };
}

/**
 * Mixed MISS load on a fresh service process before its HIT cells (the 2.5 MP JPEG, every bench
 * step, 2 s each at 8 connections), so no process is measured that has only ever served one URL:
 * the bench's first service process comes to its HIT cells after the whole MISS part.
 */
async function missWarmUp(wrk: string, base: string, originals: Originals): Promise<number> {
  const image = benchImages.find((i) => i.tag === 2)!;
  let misses = 0;
  for (const step of benchSteps) {
    const res = await missLoad(wrk, originals, {
      label: `MISS warm-up ${step.name}`,
      target: { url: base, prefix: `/${step.service}/`, suffix: `${assetId(0, image).slice(8)}.${image.extension}` },
      image,
      connections: 8,
      seconds: 2,
      need: 2000,
    });
    misses += res.requests;
  }
  return misses;
}

const spread = (values: number[]) => values.map((v) => v.toFixed(2)).join(" / ");

async function measureHit(
  wrk: string,
  main: { base: string; pid: number | undefined },
  /** How process 1 was started, for the others. */
  start: { env: Record<string, string>; nodeArgs: string[] },
  originals: Originals,
  dir: string,
  started: Proc[],
  judgements: Judgement[],
): Promise<string[]> {
  const image = benchImages.find((i) => i.tag === 2)!;
  const id = assetId(originals.reserve(image, 1), image);
  const target = `/thumbnail:size=800/${id}.jpg`;
  const url = `${main.base}${target}`;
  const body = Buffer.from(await (await fetchOk(url)).arrayBuffer());
  const hit = await fetchOk(url);
  if (hit.headers.get("x-cache") !== "HIT") throw new Error("expected a HIT");
  await hit.arrayBuffer();
  const headers = replayHeaders(hit);
  const bodyFile = path.join(dir, "hit.jpg");
  writeFileSync(bodyFile, body);

  // A process's HIT cost is a draw (README, Media performance): the same bundle measured 0.73-1.12x
  // of one bare server per CPU second from one process to the next, and bare processes differ
  // among themselves too. So every cell measures HIT_PROCESSES service processes (the first is
  // the one that served the MISS part; the others start fresh and get a mixed MISS warm-up)
  // against as many bare processes, pair by pair, and is judged on the median over the pairs.
  const services: HitServer[] = [{ url, pid: main.pid }];
  /** The processes this part starts (stopped at its end; `started` stops them on a failure). */
  const fleet: Proc[] = [];
  const warmUps: number[] = [];
  for (let i = 1; i < HIT_PROCESSES; i++) {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const proc = await startMediaService({ ...start.env, MEDIA_PORT: String(port) }, `${base}/healthz`, start.nodeArgs);
    started.push(proc);
    fleet.push(proc);
    warmUps.push(await missWarmUp(wrk, base, originals));
    // The same asset and step: the same bytes and ETag as the first process (renders are deterministic).
    await (await fetchOk(`${base}${target}`)).arrayBuffer();
    const again = await fetchOk(`${base}${target}`);
    if (again.headers.get("x-cache") !== "HIT" || again.headers.get("etag") !== headers.etag)
      throw new Error(`service process ${i + 1}: expected a HIT with ETag ${headers.etag}`);
    await again.arrayBuffer();
    services.push({ url: `${base}${target}`, pid: proc.pid });
  }
  // One bare server per service process, plus one: bares[i + 1] is bares[i]'s A/A twin.
  const bareEnv = { BODY_FILE: bodyFile, BARE_HEADERS: JSON.stringify(headers) };
  const bares: HitServer[] = [];
  for (let i = 0; i <= HIT_PROCESSES; i++) {
    const { proc, ...bare } = await startBareServer(bareEnv, target, started);
    fleet.push(proc);
    bares.push(bare);
  }
  const nginx = await startNginx(dir, bodyFile);
  if (nginx) {
    started.push(nginx.proc);
    fleet.push(nginx.proc);
  }
  const ceiling = nginx ? [{ url: nginx.url, pid: nginx.proc.pid }] : [];
  await warmUp(
    wrk,
    [...services, ...bares, ...ceiling].map((s) => s.url),
  );

  const rows: string[][] = [];
  const nginxRps = new Map<number, number[]>();
  const bareRps = new Map<number, number[]>();
  /** Per connection count: each pair's req/s ratio and per-CPU-second ratio (medians of its runs). */
  const pairRatios = new Map<number, { rps: number[]; cpu: number[]; latency: number[] }>();
  for (const c of HIT_CONNECTIONS) {
    const run = (label: string, s: HitServer) =>
      runWrkWithCpu(`HIT ${label} c=${c}`, s.pid, {
        wrk,
        url: s.url,
        connections: c,
        seconds: HIT_SECONDS,
        openFirstMs: HIT_OPEN_MS,
      });
    const perPair = services.map(() => ({
      svc: [] as number[],
      bare: [] as number[],
      svcCpu: [] as number[],
      bareCpu: [] as number[],
      svcP99: [] as number[],
      bareP99: [] as number[],
    }));
    const ngx: number[] = [];
    const ngxCpu: number[] = [];
    for (let r = 0; r < HIT_PAIR_REPEAT; r++) {
      if (nginx) {
        const res = await run("nginx", ceiling[0]!);
        ngx.push(res.rps);
        if (res.cpuUs !== undefined) ngxCpu.push(res.cpuUs);
      }
      for (const [i, p] of perPair.entries()) {
        // Alternated within each pair, so neither side always runs first.
        for (const side of r % 2 === 0 ? (["bare", "svc"] as const) : (["svc", "bare"] as const)) {
          const res = await run(
            `${side === "svc" ? "service" : "bare"} ${i + 1}`,
            side === "svc" ? services[i]! : bares[i]!,
          );
          p[side].push(res.rps);
          p[side === "svc" ? "svcP99" : "bareP99"].push(res.p99Ms);
          if (res.cpuUs !== undefined) p[side === "svc" ? "svcCpu" : "bareCpu"].push(res.cpuUs);
        }
      }
    }
    const rps = perPair.map((p) => median(p.svc) / median(p.bare));
    const cpu = perPair.map((p) => (p.svcCpu.length ? median(p.bareCpu) / median(p.svcCpu) : NaN));
    // p99: each pair's median p99 over its runs, bare's / the service's (at least 0.5: within 2x).
    const latency = perPair.map((p) => median(p.bareP99) / median(p.svcP99));
    pairRatios.set(c, { rps, cpu, latency });
    nginxRps.set(c, ngx);
    bareRps.set(
      c,
      perPair.flatMap((p) => p.bare),
    );
    const all = (pick: (p: (typeof perPair)[number]) => number[]) => median(perPair.flatMap(pick));
    rows.push([
      String(c),
      fmt(all((p) => p.svc)),
      fmt(all((p) => p.bare)),
      `${median(rps).toFixed(2)}x`,
      nginx ? fmt(median(ngx)) : "not installed",
      nginx
        ? ratio(
            all((p) => p.svc),
            median(ngx),
          )
        : "",
      `${all((p) => p.svcCpu).toFixed(1)} / ${all((p) => p.bareCpu).toFixed(1)}${nginx ? ` / ${median(ngxCpu).toFixed(1)}` : ""}`,
      `${median(cpu).toFixed(2)}x`,
      spread(cpu),
      `${all((p) => p.svcP99).toFixed(1)} / ${all((p) => p.bareP99).toFixed(1)}`,
      `${median(latency).toFixed(2)}x`,
    ]);
    process.stderr.write(`[bench media] HIT c=${c}: ${rows.at(-1)!.join(" | ")} (${loadNote()})\n`);
  }

  // 304: the same URL with If-None-Match: <etag>, the first service process against the first bare server.
  const etag = headers.etag!;
  const revalidation: string[][] = [];
  for (const c of [32]) {
    const svc: number[] = [];
    const ref: number[] = [];
    const svcCpu: number[] = [];
    const refCpu: number[] = [];
    const measure = async (name: string, s: HitServer, rps: number[], cpus: number[]) => {
      const res = await runWrkWithCpu(`304 ${name}`, s.pid, {
        wrk,
        url: s.url,
        connections: c,
        seconds: HIT_SECONDS,
        headers: { "If-None-Match": etag },
      });
      rps.push(res.rps);
      if (res.cpuUs !== undefined) cpus.push(res.cpuUs);
    };
    for (let r = 0; r < HIT_REPEAT; r++) {
      await measure("bare", bares[0]!, ref, refCpu);
      await measure("service", services[0]!, svc, svcCpu);
    }
    revalidation.push([
      String(c),
      fmt(median(svc)),
      fmt(median(ref)),
      ratio(median(svc), median(ref)),
      `${median(svcCpu).toFixed(1)} / ${median(refCpu).toFixed(1)}`,
      ratio(median(refCpu), median(svcCpu)),
    ]);
  }
  // Connections opened with the load (wrk's default): the service process 1 against bare process 1.
  const opening: string[][] = [];
  for (const c of HIT_CONNECTIONS) {
    const p99 = { svc: [] as number[], bare: [] as number[] };
    for (let r = 0; r < HIT_PAIR_REPEAT; r++) {
      for (const side of r % 2 === 0 ? (["bare", "svc"] as const) : (["svc", "bare"] as const)) {
        const s = side === "svc" ? services[0]! : bares[0]!;
        const res = await runWrkWithCpu(`HIT opening ${side} c=${c}`, s.pid, {
          wrk,
          url: s.url,
          connections: c,
          seconds: HIT_SECONDS,
        });
        p99[side].push(res.p99Ms);
      }
    }
    opening.push([
      String(c),
      p99.svc.map((v) => v.toFixed(1)).join(", "),
      p99.bare.map((v) => v.toFixed(1)).join(", "),
      `${(median(p99.bare) / median(p99.svc)).toFixed(2)}x`,
    ]);
  }
  const paired = await measureHitPaired(wrk, services, bares, HIT_CONNECTIONS, HIT_PAIR_REPEAT);
  for (const proc of fleet) await proc.stop();
  // nginx (C, one worker) is far faster than any Node server where the load generator keeps up;
  // when it is not, wrk (or the machine's loopback) is the limit and the ratios say little.
  const bound = nginx
    ? HIT_CONNECTIONS.filter((c) => median(nginxRps.get(c)!) < LOAD_BOUND_FACTOR * median(bareRps.get(c)!))
    : [];
  const sequential = HIT_CONNECTIONS.flatMap((c): Measurement[] => {
    const excluded = !nginx
      ? "no nginx to tell whether wrk set the pace"
      : bound.includes(c)
        ? "load-generator bound"
        : undefined;
    const pairs = pairRatios.get(c)!;
    return [
      { label: `c=${c} sequential req/s`, ratio: median(pairs.rps), excluded },
      { label: `c=${c} sequential per CPU second`, ratio: median(pairs.cpu), excluded },
    ];
  });
  judgements.push(judge(MEDIA_TARGETS.hit, [...sequential, ...paired.measurements]));
  judgements.push(
    judge(
      MEDIA_TARGETS.hitP99,
      HIT_CONNECTIONS.map((c) => ({ label: `c=${c} p99`, ratio: median(pairRatios.get(c)!.latency) })),
    ),
  );
  const boundNote = bound.length
    ? [
        "",
        `**Load-generator bound** at ${bound.join(", ")} connections: nginx reached less than ${LOAD_BOUND_FACTOR}x the bare node:http servers, ` +
          "so wrk (one thread) or the machine's loopback, not the servers, set those figures; their ratios are not a measurement of the service.",
      ]
    : [];
  const processes =
    HIT_PROCESSES > 1
      ? `${HIT_PROCESSES} service processes against ${HIT_PROCESSES} bare node:http processes, pair by pair: ` +
        `process 1 is the one that served the MISS part; processes 2-${HIT_PROCESSES} started fresh and each served a mixed MISS warm-up first ` +
        `(${warmUps.join(", ")} MISSes: the 2.5 MP JPEG, every step, 2 s each at 8 connections). `
      : "One service process (the one that served the MISS part) against one bare node:http process. ";
  return [
    "### HIT throughput (memory tier)",
    "",
    `${body.length} byte JPEG (\`thumbnail:size=800\` of the 2.5 MP original). Bare node:http (\`bench/bare-server.ts\`): ` +
      `the same bytes and response headers (${Object.keys(headers).join(", ")}, plus a fresh X-Request-Id). ` +
      "nginx: 1 worker, static file, the ceiling.",
    "",
    processes +
      `Each cell: ${HIT_PAIR_REPEAT} runs of ${HIT_SECONDS} s per process, alternated within each pair; a pair's ratio is the ratio of its medians, ` +
      "and the cell's ratio is the median over the pairs (each pair's per-CPU ratio in the last column, process 1 first).",
    "",
    table(
      [
        "conns",
        "service req/s",
        "bare node:http",
        "service / bare",
        "nginx",
        "service / nginx",
        `CPU µs/req: service / bare${nginx ? " / nginx" : ""}`,
        "service / bare, per CPU second",
        "per CPU second, each pair",
        "p99 ms: service / bare",
        "p99: bare / service",
      ],
      rows,
    ),
    ...boundNote,
    "",
    "CPU µs/req: user + system time of the server's whole process (all threads, from /proc) over the wrk run, per request answered (median of all runs). " +
      "Its ratio is the service's requests per CPU second against bare node:http's: what the throughput ratio is where the server, " +
      "not the load generator or the VM's scheduling, sets the pace. " +
      "p99 ms: wrk's 99th percentile latency, median of all runs; `p99: bare / service` is the median over the pairs of bare's median p99 over the service's (0.50x or more: the service's p99 within 2x of bare's). " +
      `Every run here loads connections that are already open, as a CDN's keep-alive pool is (\`bench/open-connections.lua\`: each connection's first request waits ${HIT_OPEN_MS} ms, then ${HIT_SECONDS} s of load are counted).`,
    "",
    `Connections opened under load (wrk's default: all ${HIT_CONNECTIONS.join(", ")} connections opened at once with the load, ${HIT_SECONDS} s runs, service process 1 against bare process 1, each run's p99). ` +
      "Node's event loop (libuv) accepts one connection per loop iteration while it serves the open ones, so at 128 connections the last ones wait 0.1-0.7 s to be accepted, " +
      "for bare node:http as for the service (a bare node:net server shows the same; nginx does not); those first requests fill the p99 of a short run, by chance, on either side:",
    "",
    table(["conns", "p99 ms, service (each run)", "p99 ms, bare (each run)", "p99: bare / service (medians)"], opening),
    "",
    ...paired.lines,
    "",
    "304 revalidation (`If-None-Match: <etag>` on the cached URL; service process 1 against bare process 1):",
    "",
    table(
      [
        "conns",
        "service 304/s",
        "bare node:http 304/s",
        "service / bare",
        "CPU µs/req: service / bare",
        "service / bare, per CPU second",
      ],
      revalidation,
    ),
  ];
}

/**
 * HIT cells with both servers of a pair loaded at the same moment, each by its own `wrk -t1` (c
 * connections each): whatever the VM or the other processes do during a run falls on both, where
 * one after the other the same process drifted by 20-40% between runs. Pair i is service process
 * i against bare process i; calibration in the same run: bare process i + 1 against bare process
 * i, measured the same way (A/A), whose spread is the method's own. Cells are medians over pairs.
 */
async function measureHitPaired(
  wrk: string,
  services: HitServer[],
  /** One more than `services`: bares[i + 1] is bares[i]'s A/A twin. */
  bares: HitServer[],
  connections: number[],
  /** Runs per pair and cell. */
  repeat: number,
): Promise<{ lines: string[]; measurements: Measurement[] }> {
  const rows: string[][] = [];
  const measurements: Measurement[] = [];
  for (const c of connections) {
    const pair = async (a: HitServer, b: HitServer, label: string) => {
      const rps: [number[], number[]] = [[], []];
      const cpu: [number[], number[]] = [[], []];
      const perRound: number[] = [];
      for (let r = 0; r < repeat; r++) {
        const [ra, rb] = await Promise.all(
          [a, b].map((s, i) =>
            runWrkWithCpu(`paired ${label} ${i} c=${c}`, s.pid, {
              wrk,
              url: s.url,
              connections: c,
              seconds: HIT_SECONDS,
              openFirstMs: HIT_OPEN_MS,
            }),
          ),
        );
        rps[0].push(ra!.rps);
        rps[1].push(rb!.rps);
        if (ra!.cpuUs !== undefined && rb!.cpuUs !== undefined) {
          cpu[0].push(ra!.cpuUs);
          cpu[1].push(rb!.cpuUs);
          perRound.push(rb!.cpuUs / ra!.cpuUs);
        }
      }
      return {
        rps: median(rps[0]) / median(rps[1]),
        cpu: cpu.map((xs) => (xs.length ? median(xs) : NaN)),
        perCpu: perRound.length ? median(perRound) : NaN,
      };
    };
    const sb: Awaited<ReturnType<typeof pair>>[] = [];
    const aa: Awaited<ReturnType<typeof pair>>[] = [];
    for (const [i, service] of services.entries()) {
      sb.push(await pair(service, bares[i]!, `service ${i + 1}/bare ${i + 1}`));
      aa.push(await pair(bares[i + 1]!, bares[i]!, `bare ${i + 2}/bare ${i + 1}`));
    }
    const cell = {
      rps: median(sb.map((p) => p.rps)),
      perCpu: median(sb.map((p) => p.perCpu)),
      aaRps: median(aa.map((p) => p.rps)),
      aaPerCpu: median(aa.map((p) => p.perCpu)),
    };
    measurements.push(
      { label: `c=${c} paired req/s`, ratio: cell.rps, excluded: calibrationProblem(cell.aaRps) },
      // Without /proc there is no per-CPU figure (NaN): not counted.
      { label: `c=${c} paired per CPU second`, ratio: cell.perCpu, excluded: calibrationProblem(cell.aaPerCpu) },
    );
    // Per-CPU figures need /proc (Linux); elsewhere only the req/s ratios are printed.
    const perCpu = (value: number, pairs: { perCpu: number }[]) =>
      Number.isFinite(value) ? `${value.toFixed(2)}x (${spread(pairs.map((p) => p.perCpu))})` : "n/a";
    rows.push([
      String(c),
      `${cell.rps.toFixed(2)}x (${spread(sb.map((p) => p.rps))})`,
      Number.isFinite(cell.perCpu)
        ? `${median(sb.map((p) => p.cpu[0]!)).toFixed(1)} / ${median(sb.map((p) => p.cpu[1]!)).toFixed(1)}`
        : "n/a",
      perCpu(cell.perCpu, sb),
      `${cell.aaRps.toFixed(2)}x, ${perCpu(cell.aaPerCpu, aa)}`,
    ]);
    process.stderr.write(`[bench media] paired HIT c=${c}: ${rows.at(-1)!.join(" | ")} (${loadNote()})\n`);
  }
  const lines = [
    "",
    `Paired (both servers of a pair loaded at the same moment, each by its own \`wrk -t1\` with c connections; ${repeat} runs of ${HIT_SECONDS} s per pair; ` +
      "a pair's per-CPU ratio is the median over its runs of bare's CPU per request / the service's; the cell is the median over the pairs, each pair in brackets, process 1 first). " +
      "Calibration: bare process i + 1 against bare process i, measured the same way right after pair i (A/A):",
    "",
    table(
      [
        "conns",
        "service / bare req/s (each pair)",
        "CPU µs/req: service / bare",
        "service / bare, per CPU second (each pair)",
        "A/A: bare / bare req/s, per CPU second (each pair)",
      ],
      rows,
    ),
  ];
  return { lines, measurements };
}

async function startNginx(dir: string, bodyFile: string): Promise<{ proc: Proc; url: string } | undefined> {
  const bin = ["/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx"].find(
    (p) => spawnSync(p, ["-v"]).status === 0,
  );
  if (!bin) return undefined;
  const port = await freePort();
  const prefix = path.join(dir, "nginx");
  mkdirSync(path.join(prefix, "logs"), { recursive: true });
  const conf = path.join(prefix, "nginx.conf");
  writeFileSync(
    conf,
    [
      "daemon off;",
      "master_process off;",
      "worker_processes 1;",
      "error_log stderr warn;",
      `pid ${path.join(prefix, "nginx.pid")};`,
      "events { worker_connections 4096; }",
      "http {",
      "  access_log off;",
      `  client_body_temp_path ${prefix}/tmp; proxy_temp_path ${prefix}/tmp; fastcgi_temp_path ${prefix}/tmp;`,
      `  uwsgi_temp_path ${prefix}/tmp; scgi_temp_path ${prefix}/tmp;`,
      "  keepalive_requests 1000000;",
      `  server { listen 127.0.0.1:${port}; root ${path.dirname(bodyFile)}; location / { default_type image/jpeg; try_files /${path.basename(bodyFile)} =404; } }`,
      "}",
    ].join("\n"),
  );
  const url = `http://127.0.0.1:${port}/hit.jpg`;
  const proc = await startProcess("", {}, url, [], { file: bin, args: ["-p", prefix, "-c", conf, "-e", "stderr"] });
  return { proc, url };
}

async function measureRedis(
  wrk: string,
  originals: Originals,
  serviceEnv: Record<string, string>,
  started: Proc[],
  judgements: Judgement[],
): Promise<string[]> {
  const title = "### Redis-tier HIT (memory tier off)";
  const redisBin = ["/usr/bin/redis-server", "/usr/local/bin/redis-server"].find(
    (p) => spawnSync(p, ["--version"]).status === 0,
  );
  if (!redisBin) {
    judgements.push(unmeasured(MEDIA_TARGETS.redis, "redis-server is not installed"));
    return [title, "", "SKIPPED: redis-server is not installed."];
  }
  const redisPort = await freePort();
  const redisUrl = `redis://127.0.0.1:${redisPort}`;
  const redis = spawn(
    redisBin,
    ["--port", String(redisPort), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    {
      stdio: "ignore",
    },
  );
  const redisProc: Proc = {
    stop: () =>
      new Promise<void>((resolve) => {
        if (redis.exitCode !== null || redis.signalCode !== null) return resolve();
        redis.once("exit", () => resolve());
        redis.kill("SIGTERM");
      }),
  };
  started.push(redisProc);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const media = await startMediaService(
    {
      ...serviceEnv,
      MEDIA_PORT: String(port),
      REDIS_URL: redisUrl,
      CACHE_MEMORY_BYTES: "0",
      REDIS_KEY_PREFIX: "bench:",
    },
    `${base}/healthz`,
  );
  started.push(media);
  const image = benchImages.find((i) => i.tag === 2)!;
  const id = assetId(originals.reserve(image, 1), image);
  const pathname = `/thumbnail:size=800/${id}.jpg`;
  await (await fetchOk(`${base}${pathname}`)).arrayBuffer();
  const hit = await fetchOk(`${base}${pathname}`);
  if (hit.headers.get("x-cache") !== "HIT") throw new Error("expected a Redis-tier HIT");
  const size = (await hit.arrayBuffer()).byteLength;
  // The service's key: prefix, "r:", the asset's purge generation ("0" until its first purge), the URL.
  const bareEnv = {
    BARE_REDIS_URL: redisUrl,
    BARE_REDIS_KEY: `bench:r:0:${pathname}`,
    BARE_HEADERS: JSON.stringify(replayHeaders(hit)),
  };
  const bare = await startBareServer(bareEnv, pathname, started);
  await warmUp(wrk, [bare.url, `${base}${pathname}`]);
  const rows: string[][] = [];
  const sequential: number[] = [];
  for (const c of REDIS_CONNECTIONS) {
    const svc: number[] = [];
    const ref: number[] = [];
    for (let r = 0; r < HIT_REPEAT; r++) {
      const bareRun = async () =>
        ref.push(
          checkWrk("redis bare", await runWrk({ wrk, url: bare.url, connections: c, seconds: HIT_SECONDS })).rps,
        );
      const serviceRun = async () =>
        svc.push(
          checkWrk(
            "redis service",
            await runWrk({ wrk, url: `${base}${pathname}`, connections: c, seconds: HIT_SECONDS }),
          ).rps,
        );
      // Alternated, so neither side always runs first.
      for (const run of r % 2 === 0 ? [bareRun, serviceRun] : [serviceRun, bareRun]) await run();
    }
    rows.push([String(c), fmt(median(svc)), fmt(median(ref)), ratio(median(svc), median(ref))]);
    sequential.push(median(svc) / median(ref));
    process.stderr.write(`[bench media] Redis HIT c=${c}: ${rows.at(-1)!.join(" | ")} (${loadNote()})\n`);
  }
  // The A/A twin of the bare server, for the paired cells.
  const twin = await startBareServer(bareEnv, pathname, started);
  await warmUp(wrk, [twin.url]);
  const paired = await measureHitPaired(
    wrk,
    [{ url: `${base}${pathname}`, pid: media.pid }],
    [bare, twin],
    REDIS_CONNECTIONS,
    HIT_REPEAT,
  );
  await twin.proc.stop();
  await bare.proc.stop();
  await media.stop();
  await redisProc.stop();
  judgements.push(
    judge(MEDIA_TARGETS.redis, [
      ...REDIS_CONNECTIONS.map((c, i) => ({ label: `c=${c} sequential req/s`, ratio: sequential[i]! })),
      ...paired.measurements,
    ]),
  );
  return [
    title,
    "",
    `${size} byte JPEG stored in a private redis-server; service with CACHE_MEMORY_BYTES=0 (every request reads Redis). ` +
      "Reference: bare node:http doing one Redis GET (ioredis) per request, then sending the bytes with the same headers.",
    "",
    table(["conns", "service req/s", "bare node:http + GET", "service / bare"], rows),
    ...paired.lines,
  ];
}
