/**
 * pnpm bench:calibrate-cost [--write]
 * Measures what each transformation step and each encoder costs per pixel, in CPU nanoseconds
 * (process CPU time: libvips threads and the pixel worker thread included), on this machine's
 * sharp/libvips. Prints the table; with --write regenerates the calibrated block of
 * services/media/src/render/pipeline/cost.ts, the one place the admission cost model reads.
 * Steps are measured through the real render() on a 2 MP photo, minus the decode and the JPEG
 * encode of that render; encoders on raw pixels of the same photo.
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import sharp from "sharp";
import {
  defaultMediaLimits,
  parseMediaPath,
  type RasterFormat,
  type TransformationName,
} from "@media-platform/contracts";
import { createFaceDetector, createPixelWorkers, render, type RenderDeps } from "@media-platform/media/render";

const ROOT = path.resolve(__dirname, "..");
const COST_FILE = path.join(ROOT, "services/media/src/render/pipeline/cost.ts");
const PHOTO = path.join(ROOT, "fixtures/images/rocket.jpg");
const ID = "00000000-0000-4000-8000-000000000000";
const REPEATS = 3;

/** One representative URL per step, at the upper end of what ordinary requests ask. */
const STEP_URLS: Record<TransformationName, string> = {
  crop: "crop:width=1500:height=1100",
  "color-balance": "color-balance:cyan=20:magenta=-10:yellow=5",
  clahe: "clahe",
  grayscale: "grayscale",
  fit: "fit:width=2400:height=2400",
  saturation: "saturation:value=1.5",
  "add-noise": "add-noise:amount=50",
  brightness: "brightness:value=1.2",
  wave: "wave:amplitude=20:wavelength=80",
  channelManipulation: "channelManipulation:red=1.2",
  sharpen: "sharpen:value=10",
  avatar: "avatar:size=1000:border=20",
  thumbnail: "thumbnail:size=1000",
  exposure: "exposure:value=1.0",
  solarize: "solarize",
  threshold: "threshold:value=128",
  resize: "resize:width=2400",
  format: "format:type=jpeg",
  frame: "frame:index=0",
  page: "page:index=1",
  // A budget the first encode meets: the step itself, not its re-encodes (priced by the planner).
  "max-bytes": "max-bytes:value=100000000",
  overlay: `overlay:asset=${ID}:scale=.5:opacity=.5`,
  text: "text:text=Calibration%20text:size=96:background=000000",
  redact: "redact:faces=true:region=.1,.1,.5,.5",
};

const cpuNs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) * 1000;
};

async function medianCpu(run: () => Promise<unknown>): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < REPEATS; i++) {
    const start = cpuNs();
    await run();
    samples.push(cpuNs() - start);
  }
  return samples.sort((a, b) => a - b)[Math.floor(samples.length / 2)]!;
}

const round = (ns: number): number => (ns >= 10 ? Math.round(ns) : Math.round(ns * 10) / 10);

/** Measures the table; returns it as markdown and, with `write`, regenerates pipeline/cost.ts. */
export async function calibrateCost(write = false): Promise<string> {
  // One libvips thread per image, as the service runs (MEDIA_VIPS_CONCURRENCY); restored after.
  const threads = sharp.concurrency();
  sharp.concurrency(1);
  try {
    return await measure(write);
  } finally {
    sharp.concurrency(threads);
  }
}

async function measure(write: boolean): Promise<string> {
  const photo = await sharp(readFileSync(PHOTO)).resize(1600, 1200, { fit: "fill" }).jpeg({ quality: 90 }).toBuffer();
  const pixels = 1600 * 1200;
  const raw = await sharp(photo).raw().toBuffer({ resolveWithObject: true });
  const rawInput = () => sharp(raw.data, { raw: { width: 1600, height: 1200, channels: raw.info.channels } });

  const encoders: Record<string, number> = {};
  const encode: Record<Exclude<RasterFormat, "avif">, (s: sharp.Sharp) => sharp.Sharp> = {
    jpeg: (s) => s.jpeg({ quality: 82, mozjpeg: false }),
    png: (s) => s.png(),
    webp: (s) => s.webp({ quality: 80 }),
    gif: (s) => s.gif(),
    tiff: (s) => s.tiff({ compression: "lzw" }),
  };
  for (const [format, fn] of Object.entries(encode)) {
    encoders[format] = round((await medianCpu(() => fn(rawInput()).toBuffer())) / pixels);
  }
  // AVIF on a quarter of the photo: effort 9 takes seconds per megapixel.
  const quarter = await rawInput().resize(800, 600).raw().toBuffer({ resolveWithObject: true });
  const avif: number[] = [];
  for (let effort = 0; effort <= 9; effort++) {
    const ns = await medianCpu(() =>
      sharp(quarter.data, { raw: { width: 800, height: 600, channels: quarter.info.channels } })
        .avif({ quality: 55, effort })
        .toBuffer(),
    );
    avif.push(round(ns / (800 * 600)));
  }
  const decodeNs = await medianCpu(() => sharp(photo).raw().toBuffer());

  const pool = createPixelWorkers({ size: 1 });
  const faces = createFaceDetector();
  const deps: RenderDeps = { pixels: pool, faces, limits: defaultMediaLimits, limitInputPixels: 100_000_000 };
  const steps: Record<string, number> = {};
  try {
    for (const [name, url] of Object.entries(STEP_URLS)) {
      const mediaPath = `/${url}/${ID}.jpg`;
      const parsed = parseMediaPath(mediaPath, defaultMediaLimits).steps;
      let out = { width: 0, height: 0 };
      const ns = await medianCpu(async () => {
        const r = await render(
          {
            original: photo,
            contentType: "image/jpeg",
            steps: parsed,
            cacheKey: mediaPath,
            overlays: new Map([[ID, photo]]),
          },
          deps,
        );
        out = { width: r.width, height: r.height };
      });
      const outPixels = out.width * out.height;
      const own = ns - decodeNs - encoders.jpeg! * outPixels;
      // A floor of 0.5 ns: a step is never free (its materialisation between steps is not).
      steps[name] = round(Math.max(0.5, own / Math.max(pixels, outPixels)));
    }
  } finally {
    await Promise.all([pool.close(), faces.close()]);
  }

  const lines = [
    "| step / encoder | CPU ns per pixel |",
    "|---|---:|",
    ...Object.entries(steps).map(([k, v]) => `| ${k} | ${v} |`),
    ...Object.entries(encoders).map(([k, v]) => `| encode ${k} | ${v} |`),
    ...avif.map((v, effort) => `| encode avif effort ${effort} | ${v} |`),
  ];

  if (write) {
    const block = [
      "// calibrated:begin",
      "export const STEP_NS_PER_PIXEL: Readonly<Record<TransformationName, number>> = {",
      ...Object.entries(steps).map(([k, v]) => `  ${/^[a-zA-Z]+$/.test(k) ? k : JSON.stringify(k)}: ${v},`),
      "};",
      "",
      'export const ENCODER_NS_PER_PIXEL: Readonly<Record<Exclude<RasterFormat, "avif">, number>> = {',
      ...Object.entries(encoders).map(([k, v]) => `  ${k}: ${v},`),
      "};",
      "",
      "/** AVIF by encoder effort 0-9. */",
      `export const AVIF_NS_PER_PIXEL: readonly number[] = [${avif.join(", ")}];`,
      "// calibrated:end",
    ].join("\n");
    const text = readFileSync(COST_FILE, "utf8");
    writeFileSync(COST_FILE, text.replace(/\/\/ calibrated:begin[\s\S]*\/\/ calibrated:end/, block));
    lines.push("", `(wrote ${path.relative(ROOT, COST_FILE)})`);
  }
  return lines.join("\n");
}

if (require.main === module) {
  calibrateCost(process.argv.includes("--write"))
    .then((table) => process.stdout.write(`${table}\n`))
    .catch((err: unknown) => {
      process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(1);
    });
}
