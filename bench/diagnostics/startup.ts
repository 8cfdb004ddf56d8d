/**
 * `pnpm exec tsx bench/diagnostics/startup.ts [tsx|dist]...`: start-up time and idle RSS of both services,
 * started the way development (`node --import tsx src/index.ts`) and the containers
 * (`node dist/index.js`, after `pnpm build`) start them, on the embedded defaults.
 * Start-up = spawn until GET /healthz answers 200; idle RSS = VmRSS of the process 3 s later.
 * Each service and mode runs once unmeasured (it creates the embedded database and blobs in a
 * temp DATA_DIR), then `RUNS` times (default 5) on that data dir, alternating the modes so
 * machine load hits both alike; the medians are printed.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const root = path.resolve(__dirname, "../..");
const runs = Number(process.env.RUNS ?? 5);
const modes = process.argv.slice(2).length ? process.argv.slice(2) : ["tsx", "dist"];
const services = [
  { name: "management", portVariable: "MANAGEMENT_PORT", port: 6471 },
  { name: "media", portVariable: "MEDIA_PORT", port: 6472 },
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function rssMiB(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? NaN) / 1024;
}

async function once(
  service: (typeof services)[number],
  mode: string,
  dataDir: string,
): Promise<{ ms: number; rss: number }> {
  const cwd = path.join(root, "services", service.name);
  const args = mode === "dist" ? ["dist/index.js"] : ["--import", "tsx", "src/index.ts"];
  const started = performance.now();
  const child = spawn(process.execPath, args, {
    cwd,
    env: {
      ...process.env,
      [service.portVariable]: String(service.port),
      HOST: "127.0.0.1",
      DATA_DIR: dataDir,
      LOG_LEVEL: "warn",
    },
    stdio: ["ignore", "ignore", "inherit"],
  });
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${service.name} (${mode}) exited with ${child.exitCode}`);
      const ok = await fetch(`http://127.0.0.1:${service.port}/healthz`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) break;
      await sleep(10);
    }
    const ms = performance.now() - started;
    await sleep(3000);
    return { ms, rss: rssMiB(child.pid!) };
  } finally {
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await exited;
  }
}

async function main(): Promise<void> {
  console.log(`node ${process.version}, ${runs} runs each, medians`);
  console.log("| service | mode | start-up to /healthz (ms) | idle RSS (MiB) |\n|---|---|---|---|");
  for (const service of services) {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "startup-"));
    const results = new Map(modes.map((mode) => [mode, [] as Array<{ ms: number; rss: number }>]));
    try {
      for (const mode of modes) await once(service, mode, dataDir);
      for (let i = 0; i < runs; i++)
        for (const mode of modes) results.get(mode)!.push(await once(service, mode, dataDir));
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
    for (const [mode, rs] of results) {
      const ms = median(rs.map((r) => r.ms));
      const rss = median(rs.map((r) => r.rss));
      console.log(`| ${service.name} | ${mode} | ${ms.toFixed(0)} | ${rss.toFixed(1)} |`);
    }
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
