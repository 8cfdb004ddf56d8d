/**
 * pnpm bench:miss-profile: where the media service's JavaScript thread spends its CPU on a MISS,
 * phase by phase, next to the HTTP floor (bench/http-floor.ts: raw sharp's own work behind a bare
 * node:http server) under the same load. `pnpm bench media` says how much more CPU the service's
 * main thread uses per MISS than the floor's; this says on what.
 *
 * Method: both servers run with --perf-prof (V8 writes a jitdump of every code object it creates,
 * with its lifetime, so `perf inject --jit` names each JIT frame right even where V8 later reused
 * the address; the plainer --perf-basic-prof map misnamed a third of a phase that way). Each is
 * loaded in turn by `wrk -t1` with every request a fresh asset id while `perf record -g` samples
 * its main thread alone (on-CPU time, so waiting is never counted). Each sample goes to the phase of its innermost
 * frame that matches the table below, and the samples' CPU time is divided by the requests
 * answered. TurboFan inlines small functions into their callers, so a little time lands on the
 * caller's phase; the total is exact.
 *
 * Needs Linux, `wrk` and `perf` (Debian: apt-get install wrk linux-perf) and the right to profile
 * (root, or kernel.perf_event_paranoid <= 1). Settings: BENCH_PROFILE_IMAGE ("2.5 mp"),
 * BENCH_PROFILE_STEP ("thumbnail"), BENCH_PROFILE_CONNS (8), BENCH_PROFILE_SECONDS (10),
 * BENCH_PROFILE_ROUNDS (2, alternating the order). Writes bench/results/miss-profile.md.
 */
import { execFile, spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { benchMediaEnv, findWrk, freePort, processCpuMs, runWrk, startProcess, table } from "./harness";
import { assetId, benchImages, benchSteps } from "./media-cases";
import { Originals } from "./originals";
import { classify, emptyProfile, OTHER, PHASES, phaseTotals, type Profile } from "./perf-phases";

const ROOT = path.resolve(__dirname, "..");
const PERF_HZ = 4999;
// The V8 log --perf-prof turns on is not needed (the jitdump is what perf reads).
const NODE_ARGS = [
  "--perf-prof",
  "--interpreted-frames-native-stack",
  "--logfile=/dev/null",
  "--no-logfile-per-isolate",
];

const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

function run(file: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { maxBuffer: 1 << 30 }, (err, out, errOut) =>
      err ? reject(new Error(`${file} ${args.join(" ")}: ${errOut || err.message}`)) : resolve(out),
    );
  });
}

/** The samples with JIT frames named from the jitdump (perf inject writes one ELF per code object beside it). */
async function perfScript(file: string): Promise<string> {
  await run("perf", ["inject", "--jit", "-i", file, "-o", `${file}.jit`]);
  return run("perf", ["script", "-i", `${file}.jit`]);
}

async function profileOnce(
  wrk: string,
  pid: number,
  url: string,
  scriptArgs: string[],
  connections: number,
  seconds: number,
  file: string,
  into: Profile,
): Promise<void> {
  // Started first and given a moment, so the whole wrk run is sampled; it samples a little longer.
  const perf = spawn(
    "perf",
    [
      "record",
      "-k",
      "1",
      "-F",
      String(PERF_HZ),
      "-g",
      "-t",
      String(pid),
      "-o",
      file,
      "--",
      "sleep",
      String(seconds + 1),
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let perfErr = "";
  perf.stderr.on("data", (d: Buffer) => (perfErr += d.toString()));
  const exited = new Promise<number | null>((resolve) => perf.on("exit", resolve));
  await new Promise((r) => setTimeout(r, 300));
  const mainBefore = processCpuMs(pid, "main") ?? 0;
  const res = await runWrk({ wrk, url, connections, seconds, script: path.join(ROOT, "bench/miss.lua"), scriptArgs });
  const mainAfter = processCpuMs(pid, "main") ?? 0;
  if (res.failed > 0 || res.socketErrors > 0)
    throw new Error(
      `${url}: ${res.failed} error responses, ${res.socketErrors} socket errors (${res.firstError ?? ""})`,
    );
  const code = await exited;
  if (code !== 0) throw new Error(`perf record exited with ${code}: ${perfErr.trim()}`);
  classify(await perfScript(file), into);
  // Samples cover the wrk window plus up to 1.3 s of idle around it, where the main thread uses
  // (almost) no CPU; the /proc figure covers the wrk window alone.
  into.requests += res.requests;
  into.seconds += seconds;
  into.procMs += mainAfter - mainBefore;
}

async function main(): Promise<void> {
  const wrk = findWrk();
  if (!wrk) throw new Error("wrk is not installed (Debian: apt-get install wrk)");
  if (spawnSync("perf", ["--version"]).status !== 0)
    throw new Error("perf is not installed (Debian: apt-get install linux-perf)");
  const imageFilter = (process.env.BENCH_PROFILE_IMAGE ?? "2.5 mp").toLowerCase();
  const stepFilter = (process.env.BENCH_PROFILE_STEP ?? "thumbnail").toLowerCase();
  const image = benchImages.find((i) => i.name.toLowerCase().includes(imageFilter));
  const step = benchSteps.find((s) => s.name.toLowerCase() === stepFilter);
  if (!image || !step) throw new Error(`no bench image "${imageFilter}" or step "${stepFilter}" (media-cases.ts)`);
  const connections = num("BENCH_PROFILE_CONNS", 8);
  const seconds = num("BENCH_PROFILE_SECONDS", 10);
  const rounds = num("BENCH_PROFILE_ROUNDS", 2);

  const dir = mkdtempSync(path.join(tmpdir(), "bench-miss-profile-"));
  const stops: Array<() => Promise<void>> = [];
  try {
    const originals = new Originals(dir);
    await originals.add(image);
    const port = await freePort();
    // Through tsx, not the production bundle (pnpm bench media runs that): the phases below are
    // recognised by source file, and in the bundle every frame is dist/index.js. Under tsx each
    // imported binding costs export getters the bundle lacks (bench/README.md, Media).
    const media = await startProcess(
      "services/media/src/index.ts",
      { ...benchMediaEnv(dir), MEDIA_PORT: String(port) },
      `http://127.0.0.1:${port}/healthz`,
      NODE_ARGS,
      undefined,
      dir,
    );
    stops.push(() => media.stop());
    const floorPort = await freePort();
    const floor = await startProcess(
      "bench/http-floor.ts",
      { PORT: String(floorPort), FLOOR_DIR: originals.dir },
      `http://127.0.0.1:${floorPort}/`,
      NODE_ARGS,
      undefined,
      dir,
    );
    stops.push(() => floor.stop());

    const idSuffix = assetId(0, image).slice(8);
    const systems = {
      service: {
        pid: media.pid!,
        url: `http://127.0.0.1:${port}`,
        prefix: `/${step.service}/`,
        suffix: `${idSuffix}.${image.extension}`,
      },
      floor: {
        pid: floor.pid!,
        url: `http://127.0.0.1:${floorPort}`,
        prefix: `/${benchSteps.indexOf(step)}/`,
        suffix: `${idSuffix}@blob`,
      },
    };
    const profiles = { service: emptyProfile(), floor: emptyProfile() };
    // Fresh ids for at most 400 req/s per second of load (more than either reaches on 2 cores).
    const need = (s: number) => Math.ceil(400 * s) + connections;
    for (const who of ["service", "floor"] as const) {
      const sys = systems[who];
      // Warm-up: JIT, pools; not sampled.
      const first = originals.reserve(image, need(3));
      await runWrk({
        wrk,
        url: sys.url,
        connections,
        seconds: 3,
        script: path.join(ROOT, "bench/miss.lua"),
        scriptArgs: [sys.prefix, String(first), sys.suffix],
      });
    }
    for (let r = 0; r < rounds; r++) {
      for (const who of r % 2 === 0 ? (["service", "floor"] as const) : (["floor", "service"] as const)) {
        const sys = systems[who];
        const first = originals.reserve(image, need(seconds));
        process.stderr.write(`[miss-profile] round ${r + 1}/${rounds}: ${who}\n`);
        await profileOnce(
          wrk,
          sys.pid,
          sys.url,
          [sys.prefix, String(first), sys.suffix],
          connections,
          seconds,
          path.join(dir, `${who}-${r}.perf`),
          profiles[who],
        );
      }
    }

    const totals = { service: phaseTotals(profiles.service), floor: phaseTotals(profiles.floor) };
    const perRequest = (who: "service" | "floor", phase: string) =>
      (totals[who].get(phase) ?? 0) / 1000 / profiles[who].requests;
    const total = (who: "service" | "floor") =>
      [...totals[who].values()].reduce((a, b) => a + b, 0) / 1000 / profiles[who].requests;
    const phases = [...PHASES.map(([name]) => name), OTHER]
      .map((name) => ({ name, service: perRequest("service", name), floor: perRequest("floor", name) }))
      .filter((p) => p.service >= 0.5 || p.floor >= 0.5)
      .sort((a, b) => b.service - b.floor - (a.service - a.floor));
    const us = (v: number) => v.toFixed(0);
    const rows = phases.map((p) => [p.name, us(p.service), us(p.floor), us(p.service - p.floor)]);
    const s = profiles.service;
    const f = profiles.floor;
    rows.push(
      ["**total sampled**", us(total("service")), us(total("floor")), us(total("service") - total("floor"))],
      [
        "main thread CPU from /proc (wrk window)",
        us((s.procMs * 1000) / s.requests),
        us((f.procMs * 1000) / f.requests),
        us((s.procMs * 1000) / s.requests - (f.procMs * 1000) / f.requests),
      ],
      ["req/s", (s.requests / s.seconds).toFixed(0), (f.requests / f.seconds).toFixed(0), ""],
    );
    // The service's largest phases, by the frames that decided them.
    const detail = phases
      .filter((p) => p.service - p.floor >= 10)
      .flatMap((p) =>
        [...(s.frames.get(p.name) ?? new Map<string, number>()).entries()]
          .sort((a, b) => b[1] - a[1])
          .slice(0, 4)
          .map(([frame, ns]) => [p.name, frame, us(ns / 1000 / s.requests)]),
      );
    const text = [
      `# MISS main-thread profile`,
      "",
      `${new Date().toISOString()}, Node ${process.version}. ${image.name}, \`${step.service}\`, ${connections} connections, ` +
        `${rounds} x ${seconds} s per server (alternating), \`perf record -F ${PERF_HZ} -g\` on the main thread, ` +
        `${s.requests} service and ${f.requests} floor requests. Method: bench/miss-profile.ts.`,
      "",
      "CPU µs per request on the JavaScript thread, by the phase of each sample's innermost recognised frame:",
      "",
      table(["phase", "service µs/req", "HTTP floor µs/req", "service - floor"], rows),
      "",
      "The service's phases 10 µs/req or more above the floor, by their four largest frames (TurboFan inlines callees into these):",
      "",
      table(["phase", "frame", "service µs/req"], detail),
      "",
    ].join("\n");
    process.stdout.write(`${text}\n`);
    const results = path.join(ROOT, "bench/results");
    mkdirSync(results, { recursive: true });
    writeFileSync(path.join(results, "miss-profile.md"), text);
  } finally {
    for (const stop of stops.reverse()) await stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
