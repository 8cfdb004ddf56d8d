/**
 * pnpm bench [media] [management] [upload-metadata] [media-soak] [avif-originals] [auto-quality] [heavy-load] [decode-sharing] [formats-miss] [tracing] [tracing-instructions]
 * Runs the selected benchmark sections (all when none is named) and prints them. Each section's
 * run is written to bench/results/<section>.md (a section not run keeps its last file), and
 * bench/results/latest.md is rebuilt from all section files, so running one section never drops
 * the other's results.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { benchApiKeys } from "./api-keys";
import { benchAutoQuality } from "./auto-quality";
import { benchAvifOriginals } from "./avif-originals";
import { benchHeavyLoad } from "./heavy-load";
import { calibrateCost } from "./calibrate-cost";
import { benchDecodeSharing } from "./decode-sharing";
import { benchFormatsMiss } from "./formats-miss";
import { benchManagement } from "./management";
import { benchMedia } from "./media";
import { benchTracing } from "./tracing";
import { benchTracingInstructions } from "./tracing-instructions";
import { benchUploadMetadata } from "./upload-metadata";

/** Result files of the diagnostics run on their own (bench/diagnostics/*.ts). */
const SCRIPT_RESULTS = ["upload-memory", "formats", "smartcrop"];

/** The soak runs in its own process (it starts and measures media processes of its own). */
async function benchMediaSoak(): Promise<string> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "bench-soak-"));
  const out = path.join(dir, "media-soak.md");
  try {
    const run = spawnSync(process.execPath, [require.resolve("tsx/cli"), path.join(__dirname, "media-soak.ts")], {
      env: { ...process.env, MEDIA_SOAK_OUT: out },
      stdio: ["ignore", "ignore", "inherit"],
    });
    if (run.status !== 0) throw new Error(`bench/media-soak.ts exited with ${run.status ?? run.signal}`);
    // Its own "# Media soak" title becomes this section's heading.
    return readFileSync(out, "utf8")
      .replace(/^# Media soak\n+/, "")
      .trimEnd();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const SECTIONS: Record<string, { title: string; run: () => Promise<string> }> = {
  media: { title: "Media service", run: benchMedia },
  management: { title: "Management service", run: benchManagement },
  "calibrate-cost": { title: "Admission cost calibration (CPU ns per pixel)", run: () => calibrateCost(false) },
  "upload-metadata": { title: "Upload metadata cost (placeholder, dominant colour, EXIF)", run: benchUploadMetadata },
  "avif-originals": { title: "AVIF originals against JPEG (MISS)", run: benchAvifOriginals },
  "media-soak": { title: "Media soak (memory, refusals, cancellation)", run: benchMediaSoak },
  "auto-quality": { title: "quality=auto and max-bytes", run: benchAutoQuality },
  "heavy-load": { title: "Cold thumbnails under heavy load (p95, loaded vs idle)", run: benchHeavyLoad },
  "decode-sharing": { title: "First views: shared decodes and eager presets", run: benchDecodeSharing },
  "formats-miss": { title: "HEIC, camera RAW and PDF: upload analysis and MISS", run: benchFormatsMiss },
  tracing: { title: "Tracing cost (OpenTelemetry off, 100% and 1% sampled)", run: benchTracing },
  "tracing-instructions": {
    title: "Tracing cost in instructions per HIT and per MISS (callgrind)",
    run: benchTracingInstructions,
  },
  "api-keys": { title: "API key check against a JWT (GET /v1/assets)", run: benchApiKeys },
};

/** Error with its stack and its cause chain (fetch failures carry the real reason in `cause`). */
function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const text = err.stack ?? err.message;
  return err.cause !== undefined ? `${text}\ncaused by: ${describe(err.cause)}` : text;
}

async function main(): Promise<number> {
  const args = process.argv.slice(2).filter((a) => a !== "--");
  const unknown = args.filter((a) => !(a in SECTIONS));
  if (unknown.length > 0) {
    process.stderr.write(`unknown section(s): ${unknown.join(", ")}; expected: ${Object.keys(SECTIONS).join(", ")}\n`);
    return 2;
  }
  const selected = args.length > 0 ? [...new Set(args)] : Object.keys(SECTIONS);
  const cpu = os.cpus()[0]?.model ?? "unknown CPU";
  const header = [
    "# Benchmark results",
    "",
    `${new Date().toISOString()}, Node ${process.version}, ${os.cpus().length} x ${cpu}, ${os.platform()} ${os.release()}`,
    "Only the ratios are meant to be compared across machines (see bench/README.md).",
  ].join("\n");
  process.stdout.write(`${header}\n`);
  const dir = path.join(__dirname, "results");
  mkdirSync(dir, { recursive: true });
  let failed = false;
  for (const name of selected) {
    const section = SECTIONS[name]!;
    let body: string;
    try {
      body = await section.run();
    } catch (err) {
      failed = true;
      body = `FAILED: ${describe(err)}`;
    }
    const text = `\n## ${section.title}\n\n${body}\n`;
    process.stdout.write(text);
    writeFileSync(path.join(dir, `${name}.md`), `${header}\n${text}`);
  }
  // The sections run here, then the results of the separate scripts (soak, upload memory,
  // format negotiation, smart crop), each kept in its own file by the script that wrote it.
  const files = [...Object.keys(SECTIONS), ...SCRIPT_RESULTS].map((name) => `${name}.md`);
  const parts = files
    .map((file) => path.join(dir, file))
    .filter((file) => existsSync(file))
    .map((file) => readFileSync(file, "utf8").trimEnd());
  writeFileSync(
    path.join(dir, "latest.md"),
    `<!-- Built by bench/run.ts from ${files.join(" + ")}; each part carries the header of the run that produced it. -->\n\n${parts.join("\n\n---\n\n")}\n`,
  );
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
