/**
 * `pnpm bench decode-sharing`: first views of new content.
 *  1. A burst of the 6 srcset widths (320-1920) of one original, requested at once from the media
 *     service (production bundle, its own process; MISSes on fresh asset ids), against raw sharp
 *     rendering the same 6 independently and at once, in the same run. Also against the service
 *     with MEDIA_DECODED_CACHE_BYTES=0 (each rendition decodes its own original).
 *  2. Eager presets: the time from the eager-render request (what management's outbox sends once
 *     the upload's response is out) to every eager preset being a HIT, against the sum of the same
 *     renditions' independent MISS times (one at a time, service without shared decodes).
 *  3. Memory: the service's peak RSS (VmHWM) and the most bytes its shared decodes held at once
 *     (media_decoded_bytes{kind="peak"}), against MEDIA_DECODED_CACHE_BYTES.
 * Targets (issue: median of 3 runs): 12 MP PNG >= 2x, 2.5 MP WebP >= 2x, 12 MP JPEG >= 1.2x raw sharp.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import sharp from "sharp";
import { benchMediaEnv, freePort, median, ratio, startMediaService, table } from "./harness";
import { assetId, type BenchImage } from "./media-cases";
import { Originals } from "./originals";

const ROOT = path.resolve(__dirname, "..");
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const WIDTHS = [320, 640, 960, 1280, 1600, 1920];
const SECRET = "bench-purge-secret-0123456789abcdef";
const BUDGET = 256 * 1024 * 1024;

const rocket = (width: number, height: number) =>
  sharp(path.join(ROOT, "fixtures/images/rocket.jpg")).resize(width, height, { fit: "fill" });

const image = (
  name: string,
  tag: number,
  format: BenchImage["format"],
  width: number,
  height: number,
  target: number | undefined,
): BenchImage & { target: number | undefined } => ({
  name,
  tag,
  format,
  extension: format === "jpeg" ? "jpg" : format,
  width,
  height,
  target,
  make: () => {
    const p = rocket(width, height);
    if (format === "jpeg") return p.jpeg({ quality: 90 }).toBuffer();
    if (format === "webp") return p.webp({ quality: 90 }).toBuffer();
    if (format === "avif") return p.avif({ quality: 60, effort: 4 }).toBuffer();
    return p.png().toBuffer();
  },
});

const IMAGES = [
  image("12 MP PNG", 3, "png", 4000, 3000, 2),
  image("2.5 MP WebP", 4, "webp", 1936, 1296, 2),
  image("12 MP JPEG", 5, "jpeg", 4000, 3000, 1.2),
  image("3 MP AVIF", 6, "avif", 2000, 1500, undefined),
];

/** Raw sharp: the 6 widths of `bytes` rendered independently, at once, encoded as the service does. */
async function rawSharpBurst(bytes: Buffer, format: BenchImage["format"]): Promise<number> {
  const start = performance.now();
  await Promise.all(
    WIDTHS.map((w) => {
      const p = sharp(bytes, { failOn: "error", autoOrient: true }).resize(w, null, { withoutEnlargement: true });
      if (format === "jpeg") return p.jpeg({ quality: 82 }).toBuffer();
      if (format === "webp") return p.webp({ quality: 80 }).toBuffer();
      if (format === "avif") return p.avif({ quality: 55, effort: 0, chromaSubsampling: "4:2:0" }).toBuffer();
      return p.png().toBuffer();
    }),
  );
  return performance.now() - start;
}

const url = (base: string, width: number, id: string, ext: string) => `${base}/resize:width=${width}/${id}.${ext}`;

async function get(target: string): Promise<string> {
  const res = await fetch(target);
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`${target}: ${res.status}`);
  return res.headers.get("x-cache") ?? "";
}

/** The 6 widths of a fresh asset at once; all must be MISSes (rendered, not cached). */
async function serviceBurst(base: string, id: string, ext: string): Promise<number> {
  const start = performance.now();
  const caches = await Promise.all(WIDTHS.map((w) => get(url(base, w, id, ext))));
  const ms = performance.now() - start;
  if (caches.some((c) => c !== "MISS")) throw new Error(`burst answered ${caches.join(",")}`);
  return ms;
}

async function metric(base: string, line: RegExp): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const match = line.exec(text);
  return match ? Number(match[1]) : Number.NaN;
}

const peakRssMb = (pid: number | undefined) => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)![1]) / 1024;
};

export async function benchDecodeSharing(): Promise<string> {
  const root = mkdtempSync(path.join(os.tmpdir(), "bench-decode-"));
  const originals = new Originals(root);
  const sources = new Map<string, Buffer>();
  for (const img of IMAGES) {
    await originals.add(img);
    sources.set(img.name, await img.make());
  }
  // The eager preset: the srcset family of the burst.
  const presets = path.join(root, "presets.yaml");
  writeFileSync(presets, `srcset:\n  steps: "resize:width=1920"\n  eager: true\n  widths: [${WIDTHS.join(", ")}]\n`);
  const start = async (decodedBytes: number) => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const env = {
      ...benchMediaEnv(root),
      MEDIA_PORT: String(port),
      MEDIA_PURGE_SECRET: SECRET,
      MEDIA_PRESETS_FILE: presets,
      MEDIA_DECODED_CACHE_BYTES: String(decodedBytes),
      MEDIA_REQUEST_TIMEOUT_MS: "120000",
    };
    return { base, process: await startMediaService(env, `${base}/healthz`) };
  };
  const shared = await start(BUDGET);
  const alone = await start(0);
  try {
    const rows: string[][] = [];
    const eagerRows: string[][] = [];
    const verdicts: string[] = [];
    for (const img of IMAGES) {
      const bytes = sources.get(img.name)!;
      const times = { shared: [] as number[], alone: [] as number[], sharp: [] as number[] };
      const eager: number[] = [];
      const sums: number[] = [];
      // One warm-up round, then RUNS rounds; the order of the three alternates.
      for (let run = -1; run < RUNS; run++) {
        const first = originals.reserve(img, 4);
        const ids = [0, 1, 2, 3].map((k) => assetId(first + k, img));
        const cells: Array<() => Promise<void>> = [
          async () => void times.shared.push(await serviceBurst(shared.base, ids[0]!, img.extension)),
          async () => void times.alone.push(await serviceBurst(alone.base, ids[1]!, img.extension)),
          async () => void times.sharp.push(await rawSharpBurst(bytes, img.format)),
        ];
        for (const cell of run % 2 ? cells : [...cells].reverse()) await cell();
        // Eager: request -> every width a HIT.
        const t0 = performance.now();
        const res = await fetch(`${shared.base}/internal/eager`, {
          method: "POST",
          headers: { Authorization: `Bearer ${SECRET}`, "Content-Type": "application/json" },
          body: JSON.stringify({ assetId: ids[2], extension: img.extension }),
        });
        if (res.status !== 200) throw new Error(`eager: ${res.status} ${await res.text()}`);
        const caches = await Promise.all(WIDTHS.map((w) => get(url(shared.base, w, ids[2]!, img.extension))));
        const eagerMs = performance.now() - t0;
        if (caches.some((c) => c !== "HIT")) throw new Error(`eager presets answered ${caches.join(",")}`);
        // The same renditions as independent MISSes, one after another.
        let sum = 0;
        for (const w of WIDTHS) {
          const t = performance.now();
          if ((await get(url(alone.base, w, ids[3]!, img.extension))) !== "MISS") throw new Error("expected a MISS");
          sum += performance.now() - t;
        }
        if (run >= 0) {
          eager.push(eagerMs);
          sums.push(sum);
        } else {
          times.shared.length = times.alone.length = times.sharp.length = 0;
        }
      }
      const s = median(times.shared);
      const vsSharp = median(times.sharp) / s;
      rows.push([
        img.name,
        times.shared.map((t) => t.toFixed(0)).join(" / "),
        median(times.alone).toFixed(0),
        median(times.sharp).toFixed(0),
        ratio(median(times.sharp), s),
        ratio(median(times.alone), s),
        img.target === undefined ? "-" : `>= ${img.target}x: ${vsSharp >= img.target ? "MET" : "NOT MET"}`,
      ]);
      if (img.target !== undefined) verdicts.push(`${img.name} ${vsSharp >= img.target ? "MET" : "NOT MET"}`);
      eagerRows.push([img.name, median(eager).toFixed(0), median(sums).toFixed(0), ratio(median(sums), median(eager))]);
    }
    const peak = await metric(shared.base, /^media_decoded_bytes\{[^}]*kind="peak"[^}]*\} (\d+)/m);
    const decodes = await metric(shared.base, /^media_decoded_images\{[^}]*event="decode"[^}]*\} (\d+)/m);
    const sharedUses = await metric(shared.base, /^media_decoded_images\{[^}]*event="shared"[^}]*\} (\d+)/m);
    return [
      `Burst: the ${WIDTHS.length} srcset widths (${WIDTHS.join(", ")}) of one fresh original requested at once (all MISS), wall time in ms, median of ${RUNS} runs. Raw sharp renders the same ${WIDTHS.length} independently and at once in the bench process, encoding as the service does; "no sharing" is the service with MEDIA_DECODED_CACHE_BYTES=0.`,
      "",
      table(
        [
          "original",
          "service burst ms (runs)",
          "no sharing ms",
          "raw sharp ms",
          "raw sharp / service",
          "no sharing / service",
          "target",
        ],
        rows,
      ),
      "",
      `Targets: ${verdicts.join(", ")}.`,
      "",
      "Eager presets: from the eager-render request (as management's outbox sends it after an upload) to all 6 widths answering HIT, against the sum of the same renditions' independent MISS times (one at a time, no sharing). Management's own share (outbox row, dispatcher wake) is not in this figure.",
      "",
      table(["original", "request -> all HIT ms", "sum of independent MISS ms", "ratio"], eagerRows),
      "",
      `Memory (service with shared decodes): peak RSS ${peakRssMb(shared.process.pid).toFixed(0)} MB (without sharing: ${peakRssMb(alone.process.pid).toFixed(0)} MB); shared decodes held at most ${(peak / 1048576).toFixed(1)} MB at once, budget ${(BUDGET / 1048576).toFixed(0)} MB: ${peak <= BUDGET ? "never exceeded" : "EXCEEDED"}. ${decodes} decodes, ${sharedUses} renditions used another's decode.`,
    ].join("\n");
  } finally {
    await Promise.all([shared.process.stop(), alone.process.stop()]);
    rmSync(root, { recursive: true, force: true });
  }
}
