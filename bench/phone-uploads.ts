/**
 * The management section's phone-photo cells:
 *  - Upload rate of a 12 MP phone JPEG with GPS against the same photo without GPS: the service as
 *    production runs it (the management bundle of `pnpm build management`, plain `node`, PGlite,
 *    filesystem blobs), load from `wrk -t1 -c2` in its own process (bench/upload.lua posts the
 *    photo as multipart), BENCH_UPLOAD_SECONDS per run, the two photos alternating, median of
 *    BENCH_REPEAT runs each. Target: with GPS >= 0.8x without.
 *  - What removing the private metadata costs per photo, per format: `removePrivateMetadata` (read
 *    the spooled file, walk its container, edit, write it back) on 12 MP photos with GPS in each
 *    container, in process, median of BENCH_RUNS, next to sharp's header read of the same file.
 * BENCH_UPLOAD_ROOT: another checkout whose management bundle is built and measured instead (to
 * compare two versions of the code on the same machine).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import jwt from "jsonwebtoken";
import sharp from "sharp";
import { metadataContainerOf, removePrivateMetadata } from "@media-platform/management/assets";
import { benchManagementAuthEnv, findWrk, freePort, median, ratio, runWrk, startProcess, table } from "./harness";

const ROOT = path.resolve(__dirname, "..");
const SECONDS = Number(process.env.BENCH_UPLOAD_SECONDS ?? 10);
const REPEAT = Number(process.env.BENCH_REPEAT ?? 3);
const RUNS = Number(process.env.BENCH_RUNS ?? 9);
const CONNECTIONS = 2;
const SECRET = "bench-secret-0123456789abcdef0123456789";

const progress = (msg: string): void => {
  process.stderr.write(`[bench management] ${msg}\n`);
};

const PHONE_EXIF = {
  IFD0: { Make: "Acme", Model: "Phone 9", Software: "Phone OS 18.1" },
  IFD2: { ExposureTime: "1/120", FNumber: "178/100", ISOSpeedRatings: "64", DateTimeOriginal: "2026:05:01 10:00:00" },
};
const GPS_IFD = {
  GPSLatitudeRef: "N",
  GPSLatitude: "48/1 51/1 2400/100",
  GPSLongitudeRef: "E",
  GPSLongitude: "2/1 21/1 300/100",
  GPSAltitudeRef: "0",
  GPSAltitude: "3500/100",
};

/** A 12 MP phone photo (4000x3000) from a fixture, with or without the GPS IFD. */
const phonePhoto = (gps: boolean) =>
  sharp(path.join(ROOT, "fixtures/images/rocket.jpg"))
    .resize(4000, 3000, { fit: "fill" })
    .withExif(gps ? { ...PHONE_EXIF, IFD3: GPS_IFD } : PHONE_EXIF);

async function startBundle(root: string, dir: string): Promise<{ base: string; stop(): Promise<void> }> {
  const build = spawnSync(process.execPath, ["--import", "tsx", path.join(root, "scripts/build.ts"), "management"], {
    cwd: root,
    stdio: ["ignore", "ignore", "inherit"],
  });
  if (build.status !== 0) throw new Error(`building the management service in ${root} failed (exit ${build.status})`);
  const port = await freePort();
  const env = {
    MANAGEMENT_PORT: String(port),
    HOST: "127.0.0.1",
    NODE_ENV: "production",
    DATA_DIR: dir,
    PGLITE_DIR: path.join(dir, "pg"),
    DATABASE_URL: "",
    REDIS_URL: "",
    STORAGE_DRIVER: "fs",
    STORAGE_DIR: path.join(dir, "blobs"),
    // Its own spool folder: another process's orphan sweep never takes an upload in flight.
    UPLOAD_SPOOL_DIR: path.join(dir, "spool"),
    ...benchManagementAuthEnv(SECRET),
    LOG_LEVEL: "warn",
  };
  const entry = path.join(root, "services/management/dist/index.js");
  const proc = await startProcess(entry, env, `http://127.0.0.1:${port}/healthz`, [], {
    file: process.execPath,
    args: [entry],
  });
  return { base: `http://127.0.0.1:${port}`, stop: () => proc.stop() };
}

async function uploadRates(dir: string): Promise<string> {
  const wrk = findWrk();
  if (!wrk) return "Phone photos: wrk is not installed (apt-get install -y wrk): not measured.";
  const root = process.env.BENCH_UPLOAD_ROOT ? path.resolve(process.env.BENCH_UPLOAD_ROOT) : ROOT;
  const files = { gps: path.join(dir, "gps.jpg"), plain: path.join(dir, "plain.jpg") };
  writeFileSync(files.gps, await phonePhoto(true).jpeg({ quality: 90 }).toBuffer());
  writeFileSync(files.plain, await phonePhoto(false).jpeg({ quality: 90 }).toBuffer());
  progress("phone photos: building and starting the management bundle");
  const service = await startBundle(root, path.join(dir, "service"));
  const auth = jwt.sign({ workspace_id: "bench-phone" }, SECRET, { algorithm: "HS256", expiresIn: "2h" });
  const rates = { gps: [] as number[], plain: [] as number[] };
  const latency = { gps: [] as number[], plain: [] as number[] };
  try {
    const run = async (variant: "gps" | "plain", seconds: number) => {
      const result = await runWrk({
        wrk,
        url: `${service.base}/v1/assets/upload`,
        connections: CONNECTIONS,
        seconds,
        script: path.join(__dirname, "upload.lua"),
        scriptArgs: [files[variant], auth],
      });
      if (result.failed > 0 || result.socketErrors > 0)
        throw new Error(
          `phone photo (${variant}): ${result.requests} done, ${result.failed} failed, ${result.socketErrors} socket errors, first: ${result.firstError ?? "-"}`,
        );
      return result;
    };
    // Warm-up of both paths: two uploads of each, answered before any run is timed.
    for (const variant of ["plain", "gps", "plain", "gps"] as const) {
      const form = new FormData();
      form.append("file", new Blob([new Uint8Array(readFileSync(files[variant]))]), "warm-up.jpg");
      const res = await fetch(`${service.base}/v1/assets/upload`, {
        method: "POST",
        headers: { authorization: `Bearer ${auth}` },
        body: form,
      });
      if (res.status !== 201) throw new Error(`phone photo warm-up (${variant}): ${res.status} ${await res.text()}`);
    }
    for (let i = 0; i < REPEAT; i++) {
      // The order flips every other run, so a drift of the machine hits both alike.
      for (const variant of i % 2 ? (["gps", "plain"] as const) : (["plain", "gps"] as const)) {
        progress(`phone photos: ${variant}, run ${i + 1} of ${REPEAT}`);
        const result = await run(variant, SECONDS);
        rates[variant].push(result.rps);
        latency[variant].push(result.p50Ms);
      }
    }
  } finally {
    await service.stop();
  }
  const [gps, plain] = [median(rates.gps), median(rates.plain)];
  return [
    `Phone photos: a 12 MP JPEG (4000x3000, ${(statSync(files.gps).size / 1e6).toFixed(1)} MB) with its GPS IFD against the same photo without it, POST /v1/assets/upload on the management bundle (plain node, PGlite, filesystem blobs${root === ROOT ? "" : `; checkout ${root}`}), wrk -t1 -c${CONNECTIONS} from its own process, ${SECONDS} s per run, median of ${REPEAT} alternating runs:`,
    "",
    table(
      ["photo", "uploads/s (runs)", "median", "p50 latency", "ratio", "target"],
      [
        [
          "without GPS",
          rates.plain.map((r) => r.toFixed(2)).join(", "),
          plain.toFixed(2),
          `${median(latency.plain).toFixed(0)} ms`,
          "1.00x",
          "",
        ],
        [
          "with GPS (removed at upload)",
          rates.gps.map((r) => r.toFixed(2)).join(", "),
          gps.toFixed(2),
          `${median(latency.gps).toFixed(0)} ms`,
          ratio(gps, plain),
          `>= 0.80x: ${gps >= 0.8 * plain ? "MET" : "NOT MET"}`,
        ],
      ],
    ),
  ].join("\n");
}

/** The same 12 MP photo with GPS in each container removePrivateMetadata edits. */
const FORMATS: Array<[string, (s: sharp.Sharp) => sharp.Sharp]> = [
  ["jpeg", (s) => s.jpeg({ quality: 90 })],
  ["png", (s) => s.png({ compressionLevel: 1 })],
  ["webp", (s) => s.webp({ quality: 80, effort: 0 })],
  ["tiff", (s) => s.tiff({ compression: "jpeg" })],
  ["avif", (s) => s.avif({ quality: 50, effort: 0 })],
];

async function strippingCost(dir: string): Promise<string> {
  const rows: string[][] = [];
  for (const [format, encode] of FORMATS) {
    progress(`stripping cost: ${format}`);
    const bytes = await encode(
      phonePhoto(true).withXmp(
        `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description rdf:about="" xmlns:exif="http://ns.adobe.com/exif/1.0/" exif:GPSLatitude="48,51.4N" exif:GPSLongitude="2,21.05E"/></rdf:RDF></x:xmpmeta>`,
      ),
    ).toBuffer();
    const file = path.join(dir, `photo.${format}`);
    const container = metadataContainerOf(format)!;
    const strip: number[] = [];
    const stripCpu: number[] = [];
    const header: number[] = [];
    const removed: number[] = [];
    for (let i = 0; i < RUNS + 1; i++) {
      writeFileSync(file, bytes);
      let start = performance.now();
      await sharp(file).metadata();
      const headerMs = performance.now() - start;
      start = performance.now();
      const cpu = process.cpuUsage();
      const size = await removePrivateMetadata(file, container, { policy: "private", keepGps: false });
      const stripMs = performance.now() - start;
      const { user, system } = process.cpuUsage(cpu);
      if (size === undefined) throw new Error(`stripping cost: nothing removed from the ${format} photo`);
      removed.push(bytes.length - size);
      // The first run warms the code paths up.
      if (i > 0) [strip[i - 1], stripCpu[i - 1], header[i - 1]] = [stripMs, (user + system) / 1000, headerMs];
    }
    rows.push([
      format,
      `${(bytes.length / 1e6).toFixed(1)} MB`,
      `${median(strip).toFixed(1)} ms`,
      `${median(stripCpu).toFixed(1)} ms`,
      `${median(header).toFixed(1)} ms`,
      String(median(removed)),
    ]);
  }
  return [
    `Cost of removing the private metadata (GPS IFD and XMP position) from a 12 MP photo, per format: removePrivateMetadata on the spooled file (read, walk the container, edit in place, write back), in process, median of ${RUNS} runs after a warm-up, wall time and the process's CPU time (steadier on a shared machine); sharp's header read of the same file for scale. Target: at most 20 ms per 12 MP JPEG.`,
    "",
    table(
      ["format", "file", "remove private metadata", "its CPU time", "sharp metadata()", "length change (bytes)"],
      rows,
    ),
  ].join("\n");
}

export async function benchPhoneUploads(): Promise<string> {
  const dir = mkdtempSync(path.join(tmpdir(), "bench-phone-"));
  try {
    return [await uploadRates(dir), "", await strippingCost(dir)].join("\n");
  } finally {
    // A service that failed to start may still be writing its database folder.
    rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
  }
}
