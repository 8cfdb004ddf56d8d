/**
 * `pnpm bench:formats`: what MEDIA_AUTO_FORMAT buys and costs on the fixture photos. For each
 * still JPEG/PNG fixture, a srcset-sized rendition (resize:width=640, the fixtures' own size or
 * less) is encoded as the service would: stored format (JPEG q82 / PNG), WebP q80 and AVIF q55
 * at several efforts. Prints bytes (and the ratio to the stored format) and encode time (median
 * of BENCH_RUNS, and the ratio to the stored format's encode, so machines compare).
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import sharp from "sharp";

const FIXTURES = path.join(__dirname, "..", "..", "fixtures", "images");
const PHOTOS = ["rocket.jpg", "astronaut.png", "chelsea.png", "coffee.png"];
const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const AVIF_EFFORTS = [0, 2, 4, 6];

sharp.cache(false);

async function timed(make: () => sharp.Sharp): Promise<{ bytes: number; ms: number }> {
  const times: number[] = [];
  let bytes = 0;
  for (let i = 0; i < RUNS; i++) {
    const start = performance.now();
    bytes = (await make().toBuffer()).length;
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return { bytes, ms: times[Math.floor(times.length / 2)]! };
}

async function main(): Promise<void> {
  const rows: string[] = [
    "| photo | encoding | bytes | vs stored | encode ms (median) | time vs stored |",
    "|---|---|---|---|---|---|",
  ];
  const totals = new Map<string, { bytes: number; ms: number }>();
  for (const file of PHOTOS) {
    const input = readFileSync(path.join(FIXTURES, file));
    // Decoded and resized once: the timings below are the encoder alone (decode and resize are the same for every format).
    const { data, info } = await sharp(input, { autoOrient: true })
      .resize({ width: 640, withoutEnlargement: true })
      .raw()
      .toBuffer({ resolveWithObject: true });
    const base = () => sharp(data, { raw: { width: info.width, height: info.height, channels: info.channels } });
    const stored = file.endsWith(".jpg") ? "jpeg q82" : "png";
    const encodings: Array<[string, () => sharp.Sharp]> = [
      [stored, () => (file.endsWith(".jpg") ? base().jpeg({ quality: 82 }) : base().png())],
      ["webp q80", () => base().webp({ quality: 80 })],
      ...AVIF_EFFORTS.map((e): [string, () => sharp.Sharp] => [
        `avif q55 effort ${e}`,
        () => base().avif({ quality: 55, effort: e }),
      ]),
    ];
    let ref = { bytes: 1, ms: 1 };
    for (const [name, make] of encodings) {
      const r = await timed(make);
      if (name === stored) ref = r;
      const key = name === stored ? "stored" : name;
      const t = totals.get(key) ?? { bytes: 0, ms: 0 };
      totals.set(key, { bytes: t.bytes + r.bytes, ms: t.ms + r.ms });
      rows.push(
        `| ${file} ${info.width}x${info.height} | ${name} | ${r.bytes} | ${(r.bytes / ref.bytes).toFixed(2)} | ${r.ms.toFixed(1)} | ${(r.ms / ref.ms).toFixed(2)}x |`,
      );
    }
  }
  const stored = totals.get("stored")!;
  rows.push(
    "",
    "| all photos | encoding | bytes | vs stored | encode ms | time vs stored |",
    "|---|---|---|---|---|---|",
  );
  for (const [name, t] of totals) {
    rows.push(
      `| total | ${name} | ${t.bytes} | ${(t.bytes / stored.bytes).toFixed(2)} | ${t.ms.toFixed(1)} | ${(t.ms / stored.ms).toFixed(2)}x |`,
    );
  }
  console.log(rows.join("\n"));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
