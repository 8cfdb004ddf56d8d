/**
 * Raw sharp reference of the media bench, in its own process (so neither the bench process nor
 * the load generator shares its event loop): `concurrency` operations in flight for `seconds`,
 * each reading its original from disk (fs.readFile) and running the same sharp calls as the
 * service, with the service's libvips cache setting (off, pipeline/render.ts configureSharp).
 * Input: JSON in BENCH_SHARP_JOB. Output: one JSON line {ops, seconds, rps, p99Ms, threads} on stdout
 * (threads: CPU ms per operation by thread group, harness.ts threadGroupCpuMs, read from /proc like
 * the HTTP systems' so all four are measured the same way; absent off Linux).
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import sharp from "sharp";
import { threadGroupCpuMs, threadGroupDelta } from "./harness";
import { assetId, benchImages, benchSteps } from "./media-cases";

interface Job {
  originalsDir: string;
  image: string;
  step: string;
  first: number;
  count: number;
  concurrency: number;
  seconds: number;
}

async function main(): Promise<void> {
  const job = JSON.parse(process.env.BENCH_SHARP_JOB!) as Job;
  const image = benchImages.find((i) => i.name === job.image)!;
  const step = benchSteps.find((s) => s.name === job.step)!;
  sharp.cache(false);
  let n = 0;
  const times: number[] = [];
  const op = async () => {
    const started = performance.now();
    const file = path.join(job.originalsDir, `${assetId(job.first + (n++ % job.count), image)}@blob`);
    const input = await readFile(file);
    await step.raw(sharp(input, { failOn: "error" }), image).toBuffer();
    times.push(performance.now() - started);
  };
  for (let i = 0; i < 3; i++) await op();
  times.length = 0;
  let ops = 0;
  let all = 0;
  const threadsBefore = threadGroupCpuMs(process.pid);
  const start = performance.now();
  const end = start + job.seconds * 1000;
  const loop = async () => {
    while (performance.now() < end) {
      await op();
      all++;
      if (performance.now() <= end) ops++;
    }
  };
  await Promise.all(Array.from({ length: job.concurrency }, loop));
  // Operations completed inside the window, per second of the window (as wrk counts requests).
  // CPU per operation, over every operation started in the window.
  const threadsAfter = threadGroupCpuMs(process.pid);
  const threads = threadsBefore && threadsAfter ? threadGroupDelta(threadsBefore, threadsAfter, all) : undefined;
  times.sort((a, b) => a - b);
  const p99Ms = times[Math.min(times.length - 1, Math.floor(times.length * 0.99))];
  process.stdout.write(`${JSON.stringify({ ops, seconds: job.seconds, rps: ops / job.seconds, p99Ms, threads })}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
