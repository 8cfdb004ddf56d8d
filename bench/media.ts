/**
 * Media benchmarks, all measured in one run so that only ratios are reported:
 *  - MISS latency of thumbnail, clahe and wave on a 12-megapixel JPEG through the service,
 *    next to raw sharp doing the same work in-process (clahe: next to sharp.clahe; wave: next
 *    to ImageMagick's `convert -wave` when installed, and to sharp's decode+encode floor).
 *  - HIT throughput and latency next to a bare node:http server sending the same bytes.
 */
import { randomUUID } from "node:crypto";
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import sharp from "sharp";
import { FilesystemBlobStore, originalKey } from "@media-platform/storage";
import { freePort, median, startProcess, table, timed, load, type LoadResult } from "./harness";

const ROOT = path.resolve(__dirname, "..");
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const execFileAsync = promisify(execFile);

async function twelveMegapixelJpeg(): Promise<Buffer> {
  return sharp(path.join(ROOT, "fixtures/images/rocket.jpg"))
    .resize(4240, 2832, { fit: "fill" })
    .jpeg({ quality: 90 })
    .toBuffer();
}

export async function benchMedia(): Promise<string> {
  // Processes started so far, stopped when a measurement fails (else they keep running, and their port).
  const started: { stop(): Promise<void> }[] = [];
  try {
    return await measureMedia(started);
  } catch (err) {
    for (const p of started) await p.stop();
    throw err;
  }
}

async function measureMedia(started: { stop(): Promise<void> }[]): Promise<string> {
  const dir = mkdtempSync(path.join(tmpdir(), "bench-media-"));
  const store = new FilesystemBlobStore(path.join(dir, "blobs"));
  const original = await twelveMegapixelJpeg();
  const meta = await sharp(original).metadata();

  // One asset id per MISS so that every request does identical work on a fresh key.
  // 3 transformations x (1 warm-up + RUNS measured); the HIT part reuses ids[0].
  const ids = Array.from({ length: (RUNS + 1) * 3 }, () => randomUUID());
  for (const id of ids) await store.put(originalKey(id), original, "image/jpeg");

  const port = await freePort();
  const media = await startProcess("services/media/src/index.ts", {
    MEDIA_PORT: String(port),
    HOST: "127.0.0.1",
    STORAGE_DRIVER: "fs",
    STORAGE_DIR: path.join(dir, "blobs"),
    LOG_LEVEL: "warn",
    REDIS_URL: "",
  }, `http://127.0.0.1:${port}/healthz`);
  started.push(media);

  const base = `http://127.0.0.1:${port}`;
  const fetchBytes = async (url: string) => {
    const res = await fetch(url);
    if (res.status !== 200) throw new Error(`${url}: ${res.status} ${await res.text()}`);
    return { cache: res.headers.get("x-cache"), body: Buffer.from(await res.arrayBuffer()) };
  };

  const cases: { name: string; step: string; raw: () => Promise<unknown>; rawLabel: string }[] = [
    {
      name: "thumbnail",
      step: "thumbnail:size=256",
      rawLabel: "sharp resize(256,256,cover) + jpeg q75",
      raw: () => sharp(original).rotate().resize(256, 256, { fit: "cover" }).jpeg({ quality: 75 }).toBuffer(),
    },
    {
      name: "clahe",
      step: "clahe",
      rawLabel: "sharp.clahe({width:16,height:16}) + jpeg",
      raw: () => sharp(original).clahe({ width: 16, height: 16 }).jpeg().toBuffer(),
    },
    {
      name: "wave",
      step: "wave:amplitude=10:wavelength=50",
      rawLabel: "sharp decode + jpeg encode (floor)",
      raw: () => sharp(original).raw().toBuffer().then((b) =>
        sharp(b, { raw: { width: meta.width, height: meta.height, channels: 3 } }).jpeg().toBuffer()),
    },
  ];

  const rows: string[][] = [];
  let next = 0;
  for (const c of cases) {
    // Warm-up: the first request loads workers/models; measured runs then use fresh keys.
    await fetchBytes(`${base}/${c.step}/${ids[next++]}.jpg`);
    const service: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const url = `${base}/${c.step}/${ids[next++]}.jpg`;
      const { ms, value } = await timed(() => fetchBytes(url));
      if (value.cache !== "MISS") throw new Error(`expected MISS for ${url}`);
      service.push(ms);
    }
    await c.raw();
    const raw: number[] = [];
    for (let i = 0; i < RUNS; i++) raw.push((await timed(c.raw)).ms);
    const s = median(service);
    const r = median(raw);
    rows.push([c.name, `${s.toFixed(0)} ms`, c.rawLabel, `${r.toFixed(0)} ms`, `${(s / r).toFixed(2)}x`]);
  }

  const magick = ["/usr/bin/convert", "/usr/bin/magick"].find((p) => existsSync(p));
  if (magick) {
    const input = path.join(dir, "12mp.jpg");
    writeFileSync(input, original);
    const im: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      // Async, not execFileSync: blocking the event loop for seconds let the service's keep-alive
      // timeout (5 s) close the pooled socket unseen, so the next fetch can fail ("fetch failed").
      im.push((await timed(() => execFileAsync(magick, [input, "-wave", "10x50", path.join(dir, "w.jpg")]))).ms);
    }
    const waveRow = rows.find((r) => r[0] === "wave")!;
    const s = parseFloat(waveRow[1]!);
    rows.push(["wave", waveRow[1]!, "ImageMagick convert -wave 10x50", `${median(im).toFixed(0)} ms`, `${(s / median(im)).toFixed(2)}x`]);
  }

  // HIT path: the same bytes from the service's cache and from a bare node:http server. A
  // 512 px thumbnail (q75) is about 18 KB, the body size DESIGN's reference figures used.
  const hitUrl = `${base}/thumbnail:size=512/${ids[0]}.jpg`;
  const first = await fetchBytes(hitUrl);
  const again = await fetchBytes(hitUrl);
  if (again.cache !== "HIT") throw new Error("expected a HIT");
  const barePort = await freePort();
  const bodyFile = path.join(dir, "hit.jpg");
  writeFileSync(bodyFile, first.body);
  const bare = await startProcess("bench/bare-server.ts", { PORT: String(barePort), BODY_FILE: bodyFile }, `http://127.0.0.1:${barePort}/`);
  started.push(bare);
  const duration = Number(process.env.BENCH_SECONDS ?? 10);
  let hit: LoadResult;
  let baseline: LoadResult;
  try {
    baseline = await load(`http://127.0.0.1:${barePort}/thumbnail:size=512/x.jpg`, duration);
    hit = await load(hitUrl, duration);
  } finally {
    await bare.stop();
    await media.stop();
  }

  const lines = [
    `12-megapixel JPEG (${meta.width}x${meta.height}, ${(original.length / 1e6).toFixed(1)} MB), median of ${RUNS} runs each:`,
    table(["transformation", "service MISS (HTTP)", "reference", "reference time", "ratio"], rows),
    "",
    `HIT: ${first.body.length} byte JPEG, ${duration} s each, 50 connections (autocannon in the bench process):`,
    table(
      ["server", "req/s", "p50 latency", "p99 latency", "ratio"],
      [
        ["bare node:http (same bytes)", baseline.rps.toFixed(0), `${baseline.p50} ms`, `${baseline.p99} ms`, "1.00"],
        ["media service HIT", hit.rps.toFixed(0), `${hit.p50} ms`, `${hit.p99} ms`, (hit.rps / baseline.rps).toFixed(2)],
      ],
    ),
  ];
  return lines.join("\n");
}
