/**
 * `pnpm bench upload-metadata`: what the placeholder and metadata work (ThumbHash thumbnail,
 * dominant colour, EXIF) adds to the upload's image analysis. For each fixture image,
 * `analyseImage` (header, pixel-limit check, full decode for the perceptual hash) is timed without
 * and with the metadata, interleaved in the same run (median of BENCH_RUNS each). The ratio of the
 * totals is the analysis-time cost; an upload also streams the body, writes the blob and inserts
 * the row, so the cost on the upload rate is at most this ratio. A second table measures the rate:
 * 120 distinct JPEGs (crops of rocket.jpg, like the management bench) through analyseImage + blob
 * write at concurrency 4, without and with metadata, alternating rounds in the same run.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import sharp from "sharp";
import { FilesystemBlobStore, originalKey } from "@media-platform/storage";
import { analyseImage, type SpooledFile } from "@media-platform/management/assets";

const FIXTURES = path.join(__dirname, "..", "fixtures", "images");
const RUNS = Number(process.env.BENCH_RUNS ?? 9);
const LIMIT_INPUT_PIXELS = 100_000_000;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function timed(file: SpooledFile, metadata: boolean): Promise<number> {
  const start = performance.now();
  await analyseImage(file, LIMIT_INPUT_PIXELS, { keepGps: false, metadata });
  return performance.now() - start;
}

export async function benchUploadMetadata(): Promise<string> {
  sharp.cache(false);
  const files = readdirSync(FIXTURES)
    .filter((f) => /\.(png|jpe?g|gif|tiff?)$/i.test(f) && f !== "truncated.jpg")
    .sort();
  const rows = [
    `Median of ${RUNS} runs per image, both variants interleaved in the same run (sharp cache off).`,
    "",
    "| image | size | analyse ms (baseline) | analyse ms (with metadata) | ratio |",
    "|---|---|---|---|---|",
  ];
  let base = 0;
  let withMeta = 0;
  for (const name of files) {
    const filePath = path.join(FIXTURES, name);
    const bytes = readFileSync(filePath);
    const file: SpooledFile = {
      path: filePath,
      size: statSync(filePath).size,
      sha256: createHash("sha256").update(bytes).digest("hex"),
    };
    const meta = await sharp(filePath).metadata();
    // Warm-up of both paths (first decode loads codecs).
    await timed(file, false);
    await timed(file, true);
    const a: number[] = [];
    const b: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      a.push(await timed(file, false));
      b.push(await timed(file, true));
    }
    const [ma, mb] = [median(a), median(b)];
    base += ma;
    withMeta += mb;
    rows.push(
      `| ${name} | ${meta.width}x${meta.pageHeight ?? meta.height}${meta.pages && meta.pages > 1 ? ` x${meta.pages}` : ""} | ${ma.toFixed(1)} | ${mb.toFixed(1)} | ${(mb / ma).toFixed(2)}x |`,
    );
  }
  rows.push(
    `| **all ${files.length} images** | | ${base.toFixed(1)} | ${withMeta.toFixed(1)} | **${(withMeta / base).toFixed(2)}x** |`,
    "",
    `Analysis throughput with metadata: ${((base / withMeta) * 100).toFixed(0)} % of the baseline (single thread, sequential).`,
  );
  rows.push("", await uploadRate());
  return rows.join("\n");
}

const RATE_IMAGES = 120;
const RATE_CONCURRENCY = 4;
const RATE_ROUNDS = 3;

/** Uploads/s of the per-upload work (analysis + blob write), without and with metadata. */
async function uploadRate(): Promise<string> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "bench-upload-metadata-"));
  try {
    const src = path.join(FIXTURES, "rocket.jpg");
    const files: SpooledFile[] = [];
    for (let i = 0; i < RATE_IMAGES; i++) {
      const left = i % 97;
      const top = (i * 7) % 61;
      const bytes = await sharp(src)
        .extract({ left, top, width: 640 - left - (i % 13), height: 427 - top - (i % 11) })
        .resize(320 + (i % 160))
        .jpeg({ quality: 70 + (i % 20) })
        .toBuffer();
      const file = path.join(dir, `upload-${i}.jpg`);
      writeFileSync(file, bytes);
      files.push({ path: file, size: bytes.length, sha256: createHash("sha256").update(bytes).digest("hex") });
    }
    const store = new FilesystemBlobStore(path.join(dir, "blobs"));
    const round = async (metadata: boolean): Promise<number> => {
      let next = 0;
      const start = performance.now();
      await Promise.all(
        Array.from({ length: RATE_CONCURRENCY }, async () => {
          while (next < files.length) {
            const file = files[next++]!;
            const image = await analyseImage(file, LIMIT_INPUT_PIXELS, { keepGps: false, metadata });
            await store.put(originalKey(`${metadata ? "m" : "b"}-${next}`), readFileSync(file.path), image.mimeType);
          }
        }),
      );
      return files.length / ((performance.now() - start) / 1000);
    };
    await round(false);
    await round(true);
    const base: number[] = [];
    const withMeta: number[] = [];
    for (let r = 0; r < RATE_ROUNDS; r++) {
      base.push(await round(false));
      withMeta.push(await round(true));
    }
    const [b, m] = [median(base), median(withMeta)];
    return [
      `Upload work rate: ${RATE_IMAGES} distinct JPEGs (320-479 px wide), analyseImage + blob write, concurrency ${RATE_CONCURRENCY}, median of ${RATE_ROUNDS} alternating rounds:`,
      "",
      "| variant | uploads/s | rate vs baseline |",
      "|---|---|---|",
      `| baseline (no metadata) | ${b.toFixed(1)} | 1.00 |`,
      `| with placeholder + metadata | ${m.toFixed(1)} | ${(m / b).toFixed(2)} |`,
    ].join("\n");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
