/**
 * `pnpm bench avif-originals`: the MISS throughput of an AVIF original against the same pixels
 * stored as JPEG, through the media service's production bundle, with load from `wrk` in its own
 * process. The step is a full-size `grayscale`, so the output is encoded in the original's format
 * at full size: the AVIF encoder (at MEDIA_AVIF_EFFORT, default 0) is on every MISS.
 * Target: the AVIF original reaches at least 0.3x the JPEG original's MISS throughput.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import sharp from "sharp";
import { benchMediaEnv, findWrk, freePort, median, ratio, runWrk, startMediaService, table } from "./harness";
import { assetId, type BenchImage } from "./media-cases";
import { Originals } from "./originals";

const ROOT = path.resolve(__dirname, "..");
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const CONNECTIONS = 2;
const TARGET = 0.3;

/** The rocket fixture at 2000 x 1500 (3 MP), stored in `format`. */
const photo = (format: "jpeg" | "avif", tag: number): BenchImage => ({
  name: `3 MP ${format.toUpperCase()}`,
  tag,
  format,
  extension: format === "jpeg" ? "jpg" : "avif",
  width: 2000,
  height: 1500,
  make: () => {
    const image = sharp(path.join(ROOT, "fixtures/images/rocket.jpg")).resize(2000, 1500, { fit: "fill" });
    return (format === "jpeg" ? image.jpeg({ quality: 90 }) : image.avif({ quality: 60, effort: 4 })).toBuffer();
  },
});

export async function benchAvifOriginals(): Promise<string> {
  const wrk = findWrk();
  if (!wrk) throw new Error("wrk is not installed (Debian: apt-get install wrk)");
  const root = mkdtempSync(path.join(os.tmpdir(), "bench-avif-"));
  const originals = new Originals(root);
  const images = [photo("jpeg", 7), photo("avif", 8)];
  for (const image of images) await originals.add(image);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const media = await startMediaService({ ...benchMediaEnv(root), MEDIA_PORT: String(port) }, `${base}/healthz`);
  try {
    const rps = new Map<string, number[]>();
    // Alternated runs, after one warm-up each, so a drift of the machine touches both alike.
    for (let run = -1; run < RUNS; run++) {
      for (const image of images) {
        const first = originals.reserve(image, 20_000);
        const suffix = assetId(first, image).slice(8);
        const res = await runWrk({
          wrk,
          url: base,
          connections: CONNECTIONS,
          seconds: run < 0 ? 3 : SECONDS,
          script: path.join(ROOT, "bench/miss.lua"),
          scriptArgs: ["/grayscale/", String(first), `${suffix}.${image.extension}`],
        });
        if (res.failed > 0 || res.socketErrors > 0) throw new Error(`${image.name}: ${res.firstError ?? "errors"}`);
        if (run >= 0) rps.set(image.name, [...(rps.get(image.name) ?? []), res.rps]);
      }
    }
    const jpeg = median(rps.get(images[0]!.name)!);
    const avif = median(rps.get(images[1]!.name)!);
    const verdict = avif / jpeg >= TARGET ? "MET" : "NOT MET";
    return [
      `Full-size \`grayscale\` MISS of a 3 MP original, ${CONNECTIONS} connections, median of ${RUNS} runs of ${SECONDS} s (wrk).`,
      "",
      table(
        ["original", "MISS req/s (runs)", "median", "vs JPEG"],
        images.map((image) => {
          const runs = rps.get(image.name)!;
          return [
            image.name,
            runs.map((r) => r.toFixed(1)).join(" / "),
            median(runs).toFixed(1),
            ratio(median(runs), jpeg),
          ];
        }),
      ),
      "",
      `Target: AVIF >= ${TARGET}x JPEG: ${verdict} (${ratio(avif, jpeg)}).`,
    ].join("\n");
  } finally {
    await media.stop();
    rmSync(root, { recursive: true, force: true });
  }
}
