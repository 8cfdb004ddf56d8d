/**
 * `pnpm exec tsx bench/diagnostics/smartcrop.ts`: what the focal-point and smart gravities cost a MISS on the
 * 12 MP JPEG of the media bench (rocket.jpg stretched to 4000 x 3000, q90), through the real
 * render pipeline (pipeline/render.ts, no cache, no HTTP). Each case is timed in interleaved
 * rounds (median of BENCH_RUNS, default 9) next to its reference without the feature (crop
 * gravity=center, thumbnail without a focal point), printed with the ratio and written to
 * bench/results/smartcrop.md.
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import sharp from "sharp";
import { defaultMediaLimits, parseMediaPath, type FocalPoint } from "@media-platform/contracts";
import { render, type RenderDeps } from "@media-platform/media/render";
import { benchImages } from "../media-cases";

const RUNS = Number(process.env.BENCH_RUNS ?? 9);
const ASSET = "00000000-0000-4000-8000-000000000001";
const FOCAL: FocalPoint = { x: 0.3, y: 0.6 };

const deps: RenderDeps = {
  limits: defaultMediaLimits,
  limitInputPixels: 100_000_000,
  pixels: {
    run: async () => {
      throw new Error("the smartcrop bench runs no pixel kernels");
    },
  },
  // Never called: every avatar case has a focal point.
  faces: { detect: async () => [] },
};

interface Case {
  label: string;
  steps: string;
  focalPoint?: FocalPoint;
  reference: { steps: string; focalPoint?: FocalPoint };
}

const cases: Case[] = [
  { label: "crop 1000x1000 gravity=focal", steps: "crop:width=1000:height=1000:gravity=focal", focalPoint: FOCAL },
  { label: "crop 1000x1000 gravity=attention", steps: "crop:width=1000:height=1000:gravity=attention" },
  { label: "crop 1000x1000 gravity=entropy", steps: "crop:width=1000:height=1000:gravity=entropy" },
  { label: "crop 3000x2000 gravity=attention", steps: "crop:width=3000:height=2000:gravity=attention" },
  { label: "crop 3000x2000 gravity=entropy", steps: "crop:width=3000:height=2000:gravity=entropy" },
  { label: "thumbnail 256 on a focal point", steps: "thumbnail:size=256", focalPoint: FOCAL },
].map((c) => ({
  ...c,
  reference: c.steps.startsWith("crop")
    ? { steps: c.steps.replace(/:gravity=\w+/, "") }
    : { steps: c.steps, focalPoint: undefined },
}));

async function once(original: Buffer, steps: string, focalPoint?: FocalPoint): Promise<number> {
  const parsed = parseMediaPath(`/${steps}/${ASSET}.jpg`).steps;
  const start = performance.now();
  await render({ original, contentType: "image/jpeg", steps: parsed, cacheKey: steps, focalPoint }, deps);
  return performance.now() - start;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main() {
  sharp.cache(false);
  const image = benchImages[0]!;
  const original = await image.make();
  const lines = [
    "# Focal point and smart gravity cost",
    "",
    `${image.name} (${image.width} x ${image.height}), render pipeline only, median of ${RUNS} interleaved runs.`,
    "",
    "| case | ms | reference | reference ms | ratio |",
    "|---|---|---|---|---|",
  ];
  for (const c of cases) {
    await once(original, c.steps, c.focalPoint);
    await once(original, c.reference.steps, c.reference.focalPoint);
    const feature: number[] = [];
    const reference: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      feature.push(await once(original, c.steps, c.focalPoint));
      reference.push(await once(original, c.reference.steps, c.reference.focalPoint));
    }
    const [f, r] = [median(feature), median(reference)];
    const refLabel = c.reference.steps === c.steps ? `${c.steps} (no focal point)` : c.reference.steps;
    lines.push(`| ${c.label} | ${f.toFixed(0)} | ${refLabel} | ${r.toFixed(0)} | ${(f / r).toFixed(2)} |`);
    console.log(lines.at(-1));
  }
  lines.push("");
  const file = path.join(__dirname, "..", "results", "smartcrop.md");
  writeFileSync(file, lines.join("\n"));
  console.log(`wrote ${file}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
