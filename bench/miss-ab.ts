/**
 * A/B of media service settings under MISS load: two or more service processes, each started with
 * its own environment (BENCH_AB_VARIANTS, a JSON array of objects; the first is the baseline),
 * and the HTTP floor (bench/http-floor.ts), loaded in turn by `wrk -t1` with every request a fresh
 * asset id, round after round (the order reversed every other round, the warm-up rounds
 * discarded). A setting's effect is a few percent; the VM drifts by more between one minute and
 * the next, so only systems measured in the same rounds are compared.
 *
 * Besides req/s it reports CPU per request by thread group, from /proc/<pid>/task/<tid>/stat
 * around each run: the JavaScript thread, libvips' workers, and the rest (libuv's pool, where
 * sharp's pipelines run, and V8's helpers). Settings: BENCH_AB_IMAGE ("2.5 mp"), BENCH_AB_STEPS
 * ("thumbnail"), BENCH_AB_CONNS ("8"), BENCH_AB_SECONDS (4), BENCH_AB_ROUNDS (6),
 * BENCH_AB_WARMUP_ROUNDS (1, not counted; a fresh service still compiles for about a minute of
 * MISS load, so a comparison of steady states wants 6 or more).
 * A variant's BENCH_AB_ROOT (not passed on) runs the bundle of another checkout, e.g. a
 * `git worktree` of the commit before a change, with its own `pnpm install`.
 * Writes bench/results/miss-ab.md.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  benchMediaEnv,
  findWrk,
  freePort,
  runWrk,
  startMediaService,
  startProcess,
  table,
  threadGroupCpuMs,
} from "./harness";
import { assetId, benchImages, benchSteps } from "./media-cases";
import { Originals } from "./originals";

const ROOT = path.resolve(__dirname, "..");
const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const SECONDS = num("BENCH_AB_SECONDS", 4);
const ROUNDS = Math.max(1, num("BENCH_AB_ROUNDS", 6));
const WARMUP_ROUNDS = Math.max(0, num("BENCH_AB_WARMUP_ROUNDS", 1));
const CONNS = (process.env.BENCH_AB_CONNS ?? "8").split(",").map(Number);
/** Fresh ids per run: far more than any system serves in SECONDS at these sizes. */
const IDS_PER_RUN = 800 * SECONDS + 64;

type ThreadCpu = Map<string, number>;

/**
 * CPU ms so far of each thread group of `pid` (harness.ts threadGroupCpuMs): "main" (the
 * JavaScript thread), "libvips" and "other" (libuv's pool, V8's helpers).
 */
function threadCpu(pid: number): ThreadCpu {
  const t = threadGroupCpuMs(pid);
  if (!t) throw new Error(`no /proc figures for ${pid}`);
  return new Map([
    ["main", t.main],
    ["libvips", t.libvips],
    ["other", t.node],
  ]);
}

interface System {
  name: string;
  url: string;
  pid: number;
  floor: boolean;
}

interface Tally {
  requests: number;
  seconds: number;
  cpu: ThreadCpu;
  /** Each counted run's req/s (their spread is in the table). */
  rates: number[];
}

async function main(): Promise<void> {
  const wrk = findWrk();
  if (!wrk) throw new Error("wrk is not installed (Debian: apt-get install wrk)");
  const variants = JSON.parse(process.env.BENCH_AB_VARIANTS ?? '[{},{"MEDIA_CONCURRENCY":"4"}]') as Record<
    string,
    string
  >[];
  const imageFilter = (process.env.BENCH_AB_IMAGE ?? "2.5 mp").toLowerCase();
  const image = benchImages.find((i) => i.name.toLowerCase().includes(imageFilter));
  if (!image) throw new Error(`no bench image matches ${imageFilter}`);
  const stepNames = (process.env.BENCH_AB_STEPS ?? "thumbnail").split(",").map((s) => s.trim().toLowerCase());
  const steps = benchSteps.filter((s) => stepNames.includes(s.name));
  if (steps.length === 0) throw new Error(`no bench step matches ${stepNames.join(",")}`);

  const dir = mkdtempSync(path.join(tmpdir(), "bench-ab-"));
  const stops: Array<() => Promise<void>> = [];
  try {
    const originals = new Originals(dir);
    await originals.add(image);
    const systems: System[] = [];
    /** Services started per label: an A/A (two variants with the same settings) stays two systems. */
    const started = new Map<string, number>();
    for (const { BENCH_AB_ROOT: root, ...variant } of variants) {
      const port = await freePort();
      const url = `http://127.0.0.1:${port}`;
      const proc = await startMediaService(
        { ...benchMediaEnv(dir), MEDIA_PORT: String(port), ...variant },
        `${url}/healthz`,
        [],
        root ? path.resolve(root) : ROOT,
      );
      stops.push(() => proc.stop());
      const label = Object.entries(variant).map(([k, v]) => `${k}=${v}`);
      if (root) label.unshift(path.basename(path.resolve(root)));
      const name = `service ${label.join(" ") || "(defaults)"}`;
      const n = (started.get(name) ?? 0) + 1;
      started.set(name, n);
      systems.push({ name: n > 1 ? `${name} #${n}` : name, url, pid: proc.pid!, floor: false });
    }
    const floorPort = await freePort();
    const floor = await startProcess(
      "bench/http-floor.ts",
      { PORT: String(floorPort), FLOOR_DIR: originals.dir },
      `http://127.0.0.1:${floorPort}/`,
    );
    stops.push(() => floor.stop());
    systems.push({ name: "HTTP floor", url: `http://127.0.0.1:${floorPort}`, pid: floor.pid!, floor: true });

    const tallies = new Map<string, Tally>();
    for (let round = 0; round < WARMUP_ROUNDS + ROUNDS; round++) {
      const order = round % 2 ? [...systems].reverse() : systems;
      for (const step of steps) {
        for (const c of CONNS) {
          for (const system of order) {
            const first = originals.reserve(image, IDS_PER_RUN);
            const id = assetId(0, image).slice(8);
            const before = threadCpu(system.pid);
            const res = await runWrk({
              wrk,
              url: system.url,
              connections: c,
              seconds: SECONDS,
              script: path.join(ROOT, "bench/miss.lua"),
              scriptArgs: system.floor
                ? [`/${benchSteps.indexOf(step)}/`, String(first), `${id}@blob`]
                : [`/${step.service}/`, String(first), `${id}.${image.extension}`],
            });
            const after = threadCpu(system.pid);
            if (res.requests + c >= IDS_PER_RUN) throw new Error(`${system.name}: ran out of fresh ids`);
            if (res.failed > 0 || res.socketErrors > 0)
              throw new Error(
                `${system.name}: ${res.failed} failed, ${res.socketErrors} socket errors (${res.firstError ?? ""})`,
              );
            if (round < WARMUP_ROUNDS) continue; // warm-up
            const key = `${step.name}|${c}|${system.name}`;
            const tally: Tally = tallies.get(key) ?? { requests: 0, seconds: 0, cpu: new Map(), rates: [] };
            tally.requests += res.requests;
            tally.seconds += SECONDS;
            tally.rates.push(res.requests / SECONDS);
            for (const [group, ms] of after)
              tally.cpu.set(group, (tally.cpu.get(group) ?? 0) + ms - (before.get(group) ?? 0));
            tallies.set(key, tally);
          }
        }
      }
    }

    const rows: string[][] = [];
    for (const step of steps) {
      for (const c of CONNS) {
        const of = (s: System) => tallies.get(`${step.name}|${c}|${s.name}`)!;
        const rate = (t: Tally) => t.requests / t.seconds;
        const base = of(systems[0]!);
        const floorTally = of(systems.at(-1)!);
        for (const system of systems) {
          const t = of(system);
          const per = (group: string) => (t.cpu.get(group) ?? 0) / t.requests;
          const total = [...t.cpu.values()].reduce((a, b) => a + b, 0) / t.requests;
          rows.push([
            step.name,
            String(c),
            system.name,
            rate(t).toFixed(1),
            `${(rate(t) / rate(base)).toFixed(2)}x`,
            `${(rate(t) / rate(floorTally)).toFixed(2)}x`,
            t.rates.map((r) => r.toFixed(0)).join(" / "),
            total.toFixed(2),
            per("main").toFixed(2),
            per("libvips").toFixed(2),
            per("other").toFixed(2),
          ]);
        }
      }
    }
    const text = [
      "# MISS A/B of service settings",
      "",
      `${new Date().toISOString()}, Node ${process.version}. ${image.name}, every request a fresh asset id, ` +
        `\`wrk -t1\`, ${ROUNDS} rounds of ${SECONDS} s per system after ${WARMUP_ROUNDS} warm-up round(s), systems alternated ` +
        "(order reversed every other round). Method: bench/miss-ab.ts. Ratios are of summed requests over the same rounds.",
      "",
      table(
        [
          "step",
          "conns",
          "system",
          "req/s",
          "/ first",
          "/ floor",
          "req/s per round",
          "CPU ms/req",
          "main thread",
          "libvips workers",
          "other threads",
        ],
        rows,
      ),
      "",
    ].join("\n");
    process.stdout.write(text);
    writeFileSync(path.join(ROOT, "bench/results/miss-ab.md"), text);
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
