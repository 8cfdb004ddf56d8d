/**
 * Media soak: memory and refusal figures on a real media process, written to
 * bench/results/media-soak.md (not part of the tests; `pnpm bench:media-soak`).
 *
 *   refuse    time to answer each over-budget request on an idle, warmed-up service (median of MEDIA_SOAK_RUNS, 5)
 *   worst     peak RSS (VmHWM) with 4 concurrent worst-case requests: same-size steps on a
 *             10000x10000 PNG, and an 8-step chain at the parameter caps on a 12 MP JPEG
 *   admitted  peak RSS with 4 concurrent of the heaviest requests the budget admits
 *   cancel    CPU the process burns in the 3 s after a client aborts a heavy render
 *   misses    RSS after 3,000 distinct MISSes with a 256 MB cache budget, with glibc malloc and
 *             with jemalloc (LD_PRELOAD), when libjemalloc2 is installed
 *
 * The service runs as production runs it: its esbuild bundle (`pnpm build media`) under plain node.
 * MEDIA_SOAK_ROOT=<checkout> builds and runs another checkout's media service (e.g. the commit before a
 * change, for before/after figures); MEDIA_SOAK_ONLY=refuse,worst picks scenarios;
 * MEDIA_SOAK_OUT=<file> writes elsewhere.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import sharp from "sharp";
import { FilesystemBlobStore, originalKey } from "@media-platform/storage";
import { buildMediaBundle, freePort, median, table } from "./harness";

const ROOT = path.resolve(process.env.MEDIA_SOAK_ROOT ?? path.join(__dirname, ".."));
const OUT = process.env.MEDIA_SOAK_OUT ?? path.join(__dirname, "results", "media-soak.md");
const ONLY = new Set((process.env.MEDIA_SOAK_ONLY ?? "refuse,worst,admitted,cancel,misses").split(","));
const JEMALLOC = ["/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2"].find(
  (p) => existsSync(p),
);
const MiB = 1024 * 1024;
/** Requests per refusal case (MEDIA_SOAK_RUNS, default 5). */
const RUNS = Number(process.env.MEDIA_SOAK_RUNS ?? 5);

interface MediaProcess {
  base: string;
  child: ChildProcess;
  status(field: "VmRSS" | "VmHWM"): number;
  cpuSeconds(): number;
  stop(): Promise<void>;
}

async function startMedia(blobs: string, env: Record<string, string> = {}): Promise<MediaProcess> {
  const port = await freePort();
  // The production bundle, as `pnpm start` runs it (tsx's loader would add its own memory to every figure).
  const child = spawn(process.execPath, [buildMediaBundle(ROOT)], {
    cwd: ROOT,
    env: {
      ...process.env,
      MEDIA_PORT: String(port),
      HOST: "127.0.0.1",
      STORAGE_DRIVER: "fs",
      STORAGE_DIR: blobs,
      LOG_LEVEL: "error",
      REDIS_URL: "",
      ...env,
    },
    stdio: ["ignore", "ignore", "inherit"],
  });
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`media exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${base}/healthz`)).status === 200) break;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) throw new Error("media did not become ready");
    await new Promise((r) => setTimeout(r, 200));
  }
  const proc = `/proc/${child.pid}`;
  return {
    base,
    child,
    status(field) {
      const line = readFileSync(`${proc}/status`, "utf8").match(new RegExp(`^${field}:\\s+(\\d+) kB`, "m"));
      return Number(line?.[1] ?? 0) * 1024;
    },
    cpuSeconds() {
      const fields = readFileSync(`${proc}/stat`, "utf8").split(") ")[1]!.split(" ");
      return (Number(fields[11]) + Number(fields[12])) / 100;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        const kill = setTimeout(() => child.kill("SIGKILL"), 15_000);
        child.once("exit", () => {
          clearTimeout(kill);
          resolve();
        });
        child.kill("SIGTERM");
      }),
  };
}

const mb = (bytes: number) => `${Math.round(bytes / MiB)} MB`;
const ms = (value: number) => `${value < 10 ? value.toFixed(1) : Math.round(value)} ms`;

async function get(url: string, signal?: AbortSignal): Promise<{ status: number; ms: number; body: Buffer }> {
  const start = performance.now();
  const res = await fetch(url, { signal });
  const body = Buffer.from(await res.arrayBuffer());
  return { status: res.status, ms: performance.now() - start, body };
}

interface Originals {
  blobs: string;
  huge: string;
  photo: string;
  photos: string[];
}

/** A 10000x10000 PNG (1e8 pixels, at LIMIT_INPUT_PIXELS) and 12 MP JPEGs, cached in the OS temp folder. */
async function originals(): Promise<Originals> {
  const dir = mkdtempSync(path.join(tmpdir(), "media-soak-"));
  const blobs = path.join(dir, "blobs");
  const store = new FilesystemBlobStore(blobs);
  const hugeFile = path.join(tmpdir(), "media-soak-10000x10000.png");
  if (!existsSync(hugeFile)) {
    const png = await sharp(path.join(__dirname, "..", "fixtures/images/rocket.jpg"), { limitInputPixels: false })
      .resize(10_000, 10_000, { fit: "fill" })
      .png({ compressionLevel: 1 })
      .toBuffer();
    writeFileSync(hugeFile, png);
  }
  const photo12 = await sharp(path.join(__dirname, "..", "fixtures/images/rocket.jpg"))
    .resize(4240, 2832, { fit: "fill" })
    .jpeg({ quality: 90 })
    .toBuffer();
  const huge = randomUUID();
  await store.put(originalKey(huge), readFileSync(hugeFile), "image/png");
  const photos = Array.from({ length: 4 }, () => randomUUID());
  for (const id of photos) await store.put(originalKey(id), photo12, "image/jpeg");
  return { blobs, huge, photo: photos[0]!, photos };
}

const CAPS_CHAIN = [
  "fit:width=8192:height=6000",
  "add-noise:amount=100",
  "clahe:clipLimit=40:tileSize=2",
  "sharpen:value=20",
  "color-balance:cyan=100:magenta=100:yellow=100",
  "exposure:value=5",
  "solarize:threshold=10",
  "saturation:value=10",
].join("/");

/** Eight pixel-kernel steps at 12 MP: about 97 M pixels of work, inside the default budget. */
const ADMITTED_CHAIN = [
  "add-noise:amount=100",
  "clahe:clipLimit=40:tileSize=2",
  "exposure:value=1",
  "color-balance:cyan=50:magenta=20:yellow=10",
  "solarize:threshold=200",
  "add-noise:amount=20:type=uniform",
  "clahe:clipLimit=2:tileSize=64",
  "sharpen:value=20",
].join("/");

async function refuse(o: Originals): Promise<string> {
  const media = await startMedia(o.blobs);
  try {
    const cases = [
      ["add-noise on the 10000x10000 PNG", `/add-noise:amount=50/${o.huge}.png`],
      ["clahe on the 10000x10000 PNG", `/clahe/${o.huge}.png`],
      ["sharpen on the 10000x10000 PNG", `/sharpen:value=5/${o.huge}.png`],
      ["8-step chain at the caps, 12 MP JPEG", `/${CAPS_CHAIN}/${o.photo}.jpg`],
    ] as const;
    // One unmeasured request per case first: a fresh process compiles its request path on its
    // first requests, which is start-up, not refusal.
    for (const [, url] of cases) await get(`${media.base}${url}?warm-up`);
    const rows: string[][] = [];
    for (const [name, url] of cases) {
      const runs: { status: number; ms: number }[] = [];
      // Distinct query strings: each run is a fresh request, never an answer cached anywhere.
      for (let i = 0; i < RUNS; i++) runs.push(await get(`${media.base}${url}?run=${i}`));
      rows.push([
        name,
        [...new Set(runs.map((r) => r.status))].join(", "),
        ms(median(runs.map((r) => r.ms))),
        ms(Math.max(...runs.map((r) => r.ms))),
      ]);
    }
    return table([`request (${RUNS} runs, after one unmeasured request per case)`, "status", "median", "max"], rows);
  } finally {
    await media.stop();
  }
}

async function peakOf(o: Originals, urls: string[], env: Record<string, string> = {}): Promise<string[]> {
  const media = await startMedia(o.blobs, env);
  try {
    const start = performance.now();
    const results = await Promise.all(urls.map((u) => get(`${media.base}${u}`).catch(() => ({ status: 0, ms: 0 }))));
    const answered = performance.now() - start;
    // Work that goes on after the answers (abandoned renders) still counts towards the peak.
    await new Promise((r) => setTimeout(r, 3000));
    const statuses = [...new Set(results.map((r) => r.status))].join(", ");
    return [statuses, `${(answered / 1000).toFixed(1)} s`, mb(media.status("VmHWM"))];
  } finally {
    await media.stop();
  }
}

async function worst(o: Originals): Promise<string> {
  const rows = [
    [
      "add-noise, clahe, sharpen on the 10000x10000 PNG + the 8-step chain at caps on 12 MP",
      ...(await peakOf(o, [
        `/add-noise:amount=50/${o.huge}.png`,
        `/clahe/${o.huge}.png`,
        `/sharpen:value=5/${o.huge}.png`,
        `/${CAPS_CHAIN}/${o.photo}.jpg`,
      ])),
    ],
    [
      "4 x the 8-step chain at caps on 12 MP",
      ...(await peakOf(
        o,
        o.photos.map((id) => `/${CAPS_CHAIN}/${id}.jpg`),
      )),
    ],
  ];
  return table(["4 concurrent requests", "statuses", "answered in", "peak RSS"], rows);
}

async function admitted(o: Originals): Promise<string> {
  const rows = [
    [
      "4 x thumbnail:size=256 of the 10000x10000 PNG",
      ...(await peakOf(
        o,
        [0, 1, 2, 3].map((i) => `/thumbnail:size=${256 + i}/${o.huge}.png`),
      )),
    ],
    [
      "4 x crop 7000x7000 + add-noise of the 10000x10000 PNG",
      ...(await peakOf(
        o,
        [0, 1, 2, 3].map((i) => `/crop:width=7000:height=7000:x=${i}/add-noise:amount=10/${o.huge}.png`),
      )),
    ],
    [
      "4 x an 8-kernel chain on 12 MP (97 M pixels of work each)",
      ...(await peakOf(
        o,
        o.photos.map((id) => `/${ADMITTED_CHAIN}/${id}.jpg`),
      )),
    ],
  ];
  return table(["4 concurrent requests", "statuses", "answered in", "peak RSS"], rows);
}

async function cancel(o: Originals): Promise<string> {
  const media = await startMedia(o.blobs);
  try {
    const controller = new AbortController();
    const pending = get(`${media.base}/${ADMITTED_CHAIN}/${o.photo}.jpg`, controller.signal).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 1500));
    controller.abort();
    await pending;
    await new Promise((r) => setTimeout(r, 300));
    const before = media.cpuSeconds();
    await new Promise((r) => setTimeout(r, 3000));
    const burnt = media.cpuSeconds() - before;
    return table(
      ["client aborts the 8-kernel chain after 1.5 s", "CPU seconds used in the 3 s after"],
      [["media process", burnt.toFixed(2)]],
    );
  } finally {
    await media.stop();
  }
}

async function missesWith(o: Originals, env: Record<string, string>): Promise<string[]> {
  const media = await startMedia(o.blobs, { CACHE_MEMORY_BYTES: String(256 * MiB), ...env });
  try {
    const total = 3000;
    let next = 0;
    let failures = 0;
    const worker = async () => {
      while (next < total) {
        const i = next++;
        const id = o.photos[i % o.photos.length]!;
        const size = 200 + Math.floor(i / o.photos.length);
        const steps = i % 2 ? `thumbnail:size=${size}` : `fit:width=${size}:height=${size + 7}/saturation:value=1.2`;
        const res = await get(`${media.base}/${steps}/${id}.jpg`);
        if (res.status !== 200) failures++;
      }
    };
    const start = performance.now();
    await Promise.all(Array.from({ length: 8 }, worker));
    const seconds = (performance.now() - start) / 1000;
    await new Promise((r) => setTimeout(r, 5000));
    return [String(total - failures), `${seconds.toFixed(0)} s`, mb(media.status("VmRSS")), mb(media.status("VmHWM"))];
  } finally {
    await media.stop();
  }
}

async function misses(o: Originals): Promise<string> {
  const rows = [["glibc malloc", ...(await missesWith(o, {}))]];
  if (JEMALLOC) rows.push([`jemalloc (LD_PRELOAD=${JEMALLOC})`, ...(await missesWith(o, { LD_PRELOAD: JEMALLOC }))]);
  return table(["allocator", "200s", "took", "RSS settled (5 s after)", "peak RSS"], rows);
}

async function main(): Promise<void> {
  const o = await originals();
  const sections: string[] = [
    "# Media soak",
    "",
    `Generated by \`pnpm bench:media-soak\` on ${new Date().toISOString().slice(0, 10)} (${process.platform}, ${
      require("node:os").cpus().length
    } cores, Node ${process.version}); service under test: ${
      process.env.MEDIA_SOAK_ROOT ? `the checkout at ${ROOT}` : "this checkout"
    }.`,
    "Defaults: MEDIA_MAX_OUTPUT_PIXELS 50e6, MEDIA_MAX_WORK_PIXELS and MEDIA_MAX_INFLIGHT_PIXELS 150e6, MEDIA_CONCURRENCY 4.",
    "",
  ];
  const run = async (name: string, title: string, fn: (o: Originals) => Promise<string>) => {
    if (!ONLY.has(name)) return;
    console.error(`[media-soak] ${name}...`);
    sections.push(`## ${title}`, "", await fn(o), "");
  };
  await run("refuse", "Time to refuse over-budget requests (idle service)", refuse);
  await run("worst", "Peak RSS, 4 concurrent worst-case requests", worst);
  await run("admitted", "Peak RSS, 4 concurrent of the heaviest admitted requests", admitted);
  await run("cancel", "Work after the client disconnects", cancel);
  await run("misses", "RSS after 3,000 distinct MISSes, CACHE_MEMORY_BYTES = 256 MB", misses);
  mkdirSync(path.dirname(OUT), { recursive: true });
  writeFileSync(OUT, sections.join("\n"));
  console.log(sections.join("\n"));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
