/**
 * `pnpm bench upload-metadata`: what the placeholder and metadata work (ThumbHash thumbnail,
 * dominant colour, EXIF) adds to the upload's image analysis. For each fixture image,
 * `analyseImage` (header, pixel-limit check, full decode for the perceptual hash) is timed without
 * and with the metadata, interleaved in the same run (median of BENCH_RUNS each). The ratio of the
 * totals is the analysis-time cost; an upload also streams the body, writes the blob and inserts
 * the row, so the cost on the upload rate is at most this ratio.
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import sharp from "sharp";
import { analyseImage, type SpooledFile } from "../services/management/src/assets/upload";

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
  return rows.join("\n");
}
