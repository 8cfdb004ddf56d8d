/**
 * What a MISS of a stored AVIF original costs at sharp's default encoder effort (4) and at the
 * deployment's (`MEDIA_AVIF_EFFORT`, default 0): `grayscale` of each AVIF of sharp's test images
 * (shared/fixtures/corpus/sharp beside the repository) through the render pipeline, and the same
 * 3 MP pixels stored as JPEG and as AVIF for the ratio of the two. Interleaved medians of
 * `BENCH_RUNS` (default 3), printed and written to bench/results/avif-originals.md.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import sharp from "sharp";
import { defaultMediaLimits, parseMediaPath } from "@media-platform/contracts";
import { loadMediaConfig } from "../services/media/src/config";
import { render, type RenderDeps } from "../services/media/src/pipeline/render";
import { createPixelWorkers } from "../services/media/src/pixels/pool";

const ROOT = path.resolve(__dirname, "..");
const CORPUS = path.resolve(ROOT, "../shared/fixtures/corpus/sharp");
const FILES = ["pitm.avif", "sdr_cosmos12920_cicp1-13-6_yuv444_full_qp10.avif"];
const RUNS = Math.max(1, Number(process.env.BENCH_RUNS ?? 3));
const ID = "00000000-0000-4000-8000-000000000000";

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main() {
  if (!existsSync(CORPUS)) throw new Error(`corpus folder missing: ${CORPUS}`);
  const effort = loadMediaConfig(process.env).avifEffort;
  const pixels = createPixelWorkers({ size: 1 });
  const base: RenderDeps = {
    pixels,
    faces: { detect: () => Promise.resolve([]) } as unknown as RenderDeps["faces"],
    limits: defaultMediaLimits,
    limitInputPixels: 100_000_000,
  };
  const steps = parseMediaPath(`/grayscale/${ID}.avif`, defaultMediaLimits).steps;
  const time = async (original: Buffer, contentType: string, avifEffort: number) => {
    const start = performance.now();
    await render({ original, contentType, steps, cacheKey: "bench" }, { ...base, encoder: { avifEffort } });
    return performance.now() - start;
  };
  const lines = [`| original | effort 4 (sharp's default) | effort ${effort} (configured) |`, "|---|---|---|"];
  for (const file of FILES) {
    const original = readFileSync(path.join(CORPUS, file));
    const t: Record<"default" | "configured", number[]> = { default: [], configured: [] };
    for (let r = 0; r < RUNS; r++) {
      t.default.push(await time(original, "image/avif", 4));
      t.configured.push(await time(original, "image/avif", effort));
    }
    lines.push(`| ${file} grayscale | ${(median(t.default) / 1000).toFixed(2)} s | ${(median(t.configured) / 1000).toFixed(2)} s |`);
  }
  // The same 3 MP pixels stored as AVIF and as JPEG.
  const avif = await sharp(path.join(ROOT, "fixtures/images/rocket.jpg"))
    .resize(2000, 1500, { fit: "fill" })
    .avif({ quality: 60, effort: 0 })
    .toBuffer();
  const jpeg = await sharp(avif).jpeg({ quality: 90 }).toBuffer();
  const t: Record<"avif" | "jpeg", number[]> = { avif: [], jpeg: [] };
  for (let r = 0; r < RUNS * 3; r++) {
    t.jpeg.push(await time(jpeg, "image/jpeg", effort));
    t.avif.push(await time(avif, "image/avif", effort));
  }
  const ratio = median(t.jpeg) / median(t.avif);
  lines.push(
    "",
    `3 MP grayscale, one request at a time: JPEG ${median(t.jpeg).toFixed(0)} ms, AVIF ${median(t.avif).toFixed(0)} ms; ` +
      `AVIF throughput ${ratio.toFixed(2)}x JPEG's (target >= 0.3x)`,
  );
  await pixels.close();
  const text = `# AVIF originals\n\n${lines.join("\n")}\n`;
  console.log(text);
  writeFileSync(path.join(ROOT, "bench/results/avif-originals.md"), text);
}

void main();
