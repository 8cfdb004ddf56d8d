/**
 * `pnpm bench formats-miss`: HEIC, camera RAW and PDF against a JPEG of the same photo.
 * - Upload analysis (management's analyseImage, in this process): median of BENCH_RUNS per file,
 *   after one warm-up (the decoders' worker threads and WebAssembly load once per process).
 *   Privacy is left out (KEEP_GPS, ORIGINAL_METADATA=keep): its cost is the same for every
 *   container and measured on its own.
 * - MISS throughput of `thumbnail:size=256` through the media service's production bundle, load
 *   from `wrk` in its own process, 2 connections, every request a fresh asset id: the HEIC and
 *   the CR3 stored as an upload stores them (original + rendering source, named in the original's
 *   blob metadata), the PDF with its header facts (its page drawn in a render process).
 * Target: a HEIC MISS within 1.5x the time of the same photo's JPEG MISS (>= 0.67x its req/s).
 */
import { copyFileSync, linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import sharp from "sharp";
import { originalBlobMetadata, originalHeaderOf, type OriginalHeader } from "@media-platform/contracts";
import { analyseImage } from "@media-platform/management/assets";
import { benchMediaEnv, findWrk, freePort, median, ratio, runWrk, startMediaService, table } from "./harness";

const ROOT = path.resolve(__dirname, "..");
const FORMATS = path.resolve(ROOT, "test", "fixtures", "formats");
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const CONNECTIONS = 2;
const TARGET = 1.5;
const WORKSPACE = "bench";

interface Stored {
  name: string;
  /** Last hex digit of the asset ids of this case. */
  tag: number;
  extension: string;
  original: { bytes: Buffer; contentType: string; header: OriginalHeader };
  /** The rendering source (HEIC, RAW), stored beside each original as an upload stores it. */
  source?: { bytes: Buffer; header: OriginalHeader };
  /** URL steps of the MISS. */
  steps: string;
  /**
   * Measured one request at a time (median of SEQUENTIAL fresh MISSes) instead of with wrk: a PDF
   * page is drawn in a render process at lower priority, whose MISS takes longer than a wrk run
   * on a loaded machine may last.
   */
  sequential?: boolean;
}

const SEQUENTIAL = 7;

const id = (n: number, tag: number) => `${n.toString(16).padStart(8, "0")}-0000-4000-8000-00000000000${tag}`;

/** Spools a copy of `bytes` the way the upload intake leaves it, for analyseImage. */
function spool(dir: string, bytes: Buffer, n: number) {
  const file = path.join(dir, `upload-${n}`);
  writeFileSync(file, bytes);
  return { path: file, size: bytes.length, sha256: "0".repeat(64) };
}

/** Median milliseconds of analyseImage over `bytes` (one warm-up first), and its result. */
async function analysis(dir: string, bytes: Buffer) {
  const options = { keepGps: true, originalMetadata: "keep" as const };
  await analyseImage(spool(dir, bytes, 0), 100_000_000, options);
  const times: number[] = [];
  let result;
  for (let run = 1; run <= RUNS; run++) {
    const file = spool(dir, bytes, run);
    const started = performance.now();
    result = await analyseImage(file, 100_000_000, options);
    times.push(performance.now() - started);
  }
  return { ms: median(times), result: result! };
}

/** Writes `count` fresh assets of `stored` (blob files hard-linked, metadata written per id). */
function reserve(blobs: string, stored: Stored, first: number, count: number): void {
  const originals = path.join(blobs, "originals");
  const sourceFile = path.join(blobs, `bench-source-${stored.tag}@blob`);
  const originalFile = path.join(blobs, `bench-original-${stored.tag}@blob`);
  for (let n = first; n < first + count; n++) {
    const asset = id(n, stored.tag);
    const sourceKey = stored.source ? `sources/${asset}/v1` : undefined;
    linkOrCopy(originalFile, path.join(originals, `${asset}@blob`));
    writeFileSync(
      path.join(originals, `${asset}@meta.json`),
      JSON.stringify({
        contentType: stored.original.contentType,
        metadata: originalBlobMetadata(stored.source?.header ?? stored.original.header, WORKSPACE, sourceKey),
      }),
    );
    if (stored.source && sourceKey) {
      const dir = path.join(blobs, "sources", asset);
      mkdirSync(dir, { recursive: true });
      linkOrCopy(sourceFile, path.join(dir, "v1@blob"));
      writeFileSync(
        path.join(dir, "v1@meta.json"),
        JSON.stringify({ contentType: "image/jpeg", metadata: originalBlobMetadata(stored.source.header, WORKSPACE) }),
      );
    }
  }
}

function linkOrCopy(from: string, to: string): void {
  try {
    linkSync(from, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EMLINK") throw err;
    copyFileSync(from, to);
  }
}

export async function benchFormatsMiss(): Promise<string> {
  const wrk = findWrk();
  if (!wrk) throw new Error("wrk is not installed (Debian: apt-get install wrk)");
  const root = mkdtempSync(path.join(os.tmpdir(), "bench-formats-"));
  const spoolDir = path.join(root, "spool");
  mkdirSync(spoolDir);
  const blobs = path.join(root, "blobs");
  mkdirSync(path.join(blobs, "originals"), { recursive: true });
  try {
    const heic = readFileSync(path.join(FORMATS, "iphone-IMG_2682.heic"));
    const cr3 = readFileSync(path.join(FORMATS, "canon-r6-pruned.cr3"));
    const raf = readFileSync(path.join(FORMATS, "exiftool-fujifilm-s5pro.raf"));
    const pdf = readFileSync(path.join(FORMATS, "pdfjs-tracemonkey.pdf"));
    // The same photo as the phone's JPEG would be: the HEIC's pixels at quality 90, its ICC kept.
    const heicUpload = await analysis(spoolDir, heic);
    const heicSource = heicUpload.result.renderingSource!;
    const jpeg = await sharp(heicSource).keepIccProfile().jpeg({ quality: 90 }).toBuffer();
    const jpegUpload = await analysis(spoolDir, jpeg);
    const cr3Upload = await analysis(spoolDir, cr3);
    const rafUpload = await analysis(spoolDir, raf);
    const pdfUpload = await analysis(spoolDir, pdf);

    const headerOf = async (bytes: Buffer) => originalHeaderOf(await sharp(bytes).metadata())!;
    const cases: Stored[] = [
      {
        name: "12 MP JPEG (the same photo)",
        tag: 1,
        extension: "jpg",
        original: { bytes: jpeg, contentType: "image/jpeg", header: await headerOf(jpeg) },
        steps: "/thumbnail:size=256/",
      },
      {
        name: "12 MP HEIC (iPhone)",
        tag: 2,
        extension: "heic",
        original: { bytes: heic, contentType: "image/heic", header: await headerOf(heicSource) },
        source: { bytes: heicSource, header: await headerOf(heicSource) },
        steps: "/thumbnail:size=256/",
      },
      {
        name: "CR3 (1620x1080 preview)",
        tag: 3,
        extension: "cr3",
        original: { bytes: cr3, contentType: "image/x-canon-cr3", header: cr3Upload.result.header! },
        source: { bytes: cr3Upload.result.renderingSource!, header: cr3Upload.result.header! },
        steps: "/thumbnail:size=256/",
      },
      {
        name: "PDF page 1 (Letter)",
        tag: 4,
        extension: "pdf",
        original: { bytes: pdf, contentType: "application/pdf", header: pdfUpload.result.header! },
        steps: "/thumbnail:size=256/",
        sequential: true,
      },
      {
        name: "PDF page:index=2",
        tag: 5,
        extension: "pdf",
        original: { bytes: pdf, contentType: "application/pdf", header: pdfUpload.result.header! },
        steps: "/page:index=2/thumbnail:size=256/",
        sequential: true,
      },
    ];
    for (const c of cases) {
      writeFileSync(path.join(blobs, `bench-original-${c.tag}@blob`), c.original.bytes);
      if (c.source) writeFileSync(path.join(blobs, `bench-source-${c.tag}@blob`), c.source.bytes);
    }

    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const media = await startMediaService({ ...benchMediaEnv(root), MEDIA_PORT: String(port) }, `${base}/healthz`);
    const rps = new Map<string, number[]>();
    let next = 1;
    try {
      for (let run = -1; run < RUNS; run++) {
        for (const c of cases) {
          if (c.sequential) {
            reserve(blobs, c, next, SEQUENTIAL);
            const times: number[] = [];
            for (let n = next; n < next + SEQUENTIAL; n++) {
              const started = performance.now();
              const res = await fetch(`${base}${c.steps}${id(n, c.tag)}.${c.extension}`);
              await res.arrayBuffer();
              if (res.status !== 200 || res.headers.get("x-cache") !== "MISS")
                throw new Error(`${c.name}: ${res.status}`);
              times.push(performance.now() - started);
            }
            next += SEQUENTIAL;
            // As requests per second at one connection, to sit in the same table.
            if (run >= 0) rps.set(c.name, [...(rps.get(c.name) ?? []), 1000 / median(times)]);
            continue;
          }
          const seconds = run < 0 ? 3 : SECONDS;
          // Enough fresh ids for the fastest case's rate (a JPEG thumbnail MISS, ~150/s here).
          const count = 400 * seconds;
          reserve(blobs, c, next, count);
          const res = await runWrk({
            wrk,
            url: base,
            connections: CONNECTIONS,
            seconds,
            script: path.join(ROOT, "bench/miss.lua"),
            scriptArgs: [c.steps, String(next), `${id(next, c.tag).slice(8)}.${c.extension}`],
          });
          next += count;
          if (res.failed > 0 || res.socketErrors > 0) throw new Error(`${c.name}: ${res.firstError ?? "errors"}`);
          if (res.requests > count) throw new Error(`${c.name}: more requests than fresh ids`);
          if (run >= 0) rps.set(c.name, [...(rps.get(c.name) ?? []), res.rps]);
        }
      }
    } finally {
      await media.stop();
    }
    const jpegRps = median(rps.get(cases[0]!.name)!);
    const heicRps = median(rps.get(cases[1]!.name)!);
    const heicTime = jpegRps / heicRps;
    const uploads: Array<[string, Buffer, { ms: number }]> = [
      ["12 MP JPEG (the same photo)", jpeg, jpegUpload],
      ["12 MP HEIC (iPhone)", heic, heicUpload],
      ["CR3 (1620x1080 preview)", cr3, cr3Upload],
      ["RAF (160x120 thumbnail)", raf, rafUpload],
      ["PDF, 14 pages (page 1 drawn at 256 px)", pdf, pdfUpload],
    ];
    return [
      `Upload analysis (\`analyseImage\`: sniffing, HEIC and PDF decode in worker threads, a RAW's previews found in process, rendering source, placeholder, perceptual hash; privacy left out), median of ${RUNS} after a warm-up, in the bench process:`,
      "",
      table(
        ["file", "bytes", "analysis ms", "vs JPEG"],
        uploads.map(([name, bytes, u]) => [name, String(bytes.length), u.ms.toFixed(0), ratio(u.ms, jpegUpload.ms)]),
      ),
      "",
      `\`thumbnail:size=256\` MISS through the media bundle, ${CONNECTIONS} connections, every request a fresh asset, median of ${RUNS} runs of ${SECONDS} s (wrk); before these formats were accepted, each of them was a 415 at upload:`,
      "",
      table(
        ["original", "MISS req/s (runs)", "median", "ms per MISS", "vs JPEG (req/s)"],
        cases.map((c) => {
          const runs = rps.get(c.name)!;
          const connections = c.sequential ? 1 : CONNECTIONS;
          return [
            c.sequential ? `${c.name} (one at a time, median of ${SEQUENTIAL})` : c.name,
            runs.map((r) => r.toFixed(1)).join(" / "),
            median(runs).toFixed(1),
            ((1000 * connections) / median(runs)).toFixed(1),
            c.sequential ? "-" : ratio(median(runs), jpegRps),
          ];
        }),
      ),
      "",
      `Target: a HEIC MISS within ${TARGET}x the time of the same photo as JPEG: ${heicTime <= TARGET ? "MET" : "NOT MET"} (${heicTime.toFixed(2)}x).`,
      "",
      `Stored sizes: JPEG ${statSync(path.join(blobs, "bench-original-1@blob")).size} bytes, HEIC ${heic.length} bytes + its rendering source ${heicSource.length} bytes.`,
    ].join("\n");
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
