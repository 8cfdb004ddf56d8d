/**
 * One-off measurement (not a test): tiled CLAHE and wave on a 12-megapixel JPEG against
 * sharp.clahe and ImageMagick. Run: cd services/media && npx tsx test/reference/measure.ts
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import sharp from "sharp";
import { defaultMediaLimits, parseMediaPath } from "@media-platform/contracts";
import { toRaw } from "../../src/render/raw";
import { render } from "../../src/render/pipeline/render";
import { createPixelWorkers } from "../../src/render/pixels/pool";

const ROCKET = path.join(__dirname, "..", "..", "..", "..", "fixtures", "images", "rocket.jpg");
const ASSET = "00000000-0000-4000-8000-000000000000";

async function timed<T>(label: string, runs: number, work: () => Promise<T>): Promise<number> {
  await work(); // warm-up: worker start-up, tsx compile, libvips caches
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await work();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)]!;
  console.log(
    `${label.padEnd(58)} median ${median.toFixed(0).padStart(6)} ms  (runs: ${times.map((t) => t.toFixed(0)).join(", ")})`,
  );
  return median;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "measure-"));
  const big = path.join(dir, "rocket-12mp.jpg");
  await sharp(ROCKET).resize(4240, 2832, { fit: "fill" }).jpeg({ quality: 90 }).toFile(big);
  const original = readFileSync(big);
  console.log(
    `input: 4240x2832 JPEG (${((4240 * 2832) / 1e6).toFixed(1)} MP), ${os.availableParallelism()} cores, node ${process.version}, sharp ${sharp.versions.sharp}, vips ${sharp.versions.vips}`,
  );
  const pixels = createPixelWorkers({ size: 2 });
  const deps = { pixels, faces: { detect: async () => [] }, limits: defaultMediaLimits, limitInputPixels: 100_000_000 };
  const ours = (steps: string) => () =>
    render(
      { original, contentType: "image/jpeg", steps: parseMediaPath(`/${steps}/${ASSET}.jpg`).steps, cacheKey: steps },
      deps,
    );
  try {
    const clahe = await timed("clahe (tiled, worker, default clip 3 tile 16) decode->JPEG", 3, ours("clahe"));
    const vips = await timed("sharp.clahe({ width: 16, height: 16 }) decode->JPEG", 1, () =>
      sharp(original).clahe({ width: 16, height: 16 }).jpeg({ quality: 82 }).toBuffer(),
    );
    const copy = await timed("baseline: sharp decode->JPEG, no operation", 3, () =>
      sharp(original).jpeg({ quality: 82 }).toBuffer(),
    );
    console.log(
      `  clahe: ours ${(vips / clahe).toFixed(1)}x faster than sharp.clahe; decode+encode alone ${copy.toFixed(0)} ms`,
    );
    const raw = await toRaw(sharp(original));
    const kernelOnly = (kernel: string, params: unknown) => () =>
      pixels.run(kernel, { ...raw, data: Buffer.from(raw.data) }, params);
    await timed(
      "  kernel only: clahe in a worker (12 MP raw in, raw out)",
      3,
      kernelOnly("clahe", { clipLimit: 3, tileSize: 16 }),
    );
    await timed("  kernel only: clahe tileSize 2 (3 M tiles)", 1, kernelOnly("clahe", { clipLimit: 3, tileSize: 2 }));
    await timed(
      "  kernel only: wave 10x60",
      3,
      kernelOnly("wave", { amplitude: 10, wavelength: 60, background: [255, 255, 255, 255] }),
    );
    const wave = await timed(
      "wave amplitude 10 wavelength 60 (worker) decode->JPEG",
      3,
      ours("wave:amplitude=10:wavelength=60"),
    );
    const out = path.join(dir, "im.jpg");
    const magick = await timed("ImageMagick 6 convert -wave 10x60 (JPEG -> JPEG)", 3, async () =>
      execFileSync("/usr/bin/convert", [big, "-wave", "10x60", "-quality", "82", out]),
    );
    console.log(`  wave: ours ${(magick / wave).toFixed(1)}x faster than ImageMagick convert`);
  } finally {
    await pixels.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

void main();
