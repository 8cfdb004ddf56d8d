// The product as the README starts it: `pnpm start` (scripts/start.ts: both services through tsx)
// on the embedded defaults in a fresh DATA_DIR, then every file of the real-world corpus and a
// 12 MP phone photo with GPS uploaded over HTTP, several at once. Every file libvips decodes is
// accepted; every refusal is one CORPUS_REFUSALS names, with its status and problem type; what
// /original serves has no GPS or serial number, and a JPEG's coded image is the uploaded one byte
// for byte. The production bundle gets the same uploads in services/media/test/corpus.test.ts,
// where it is built once.
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  CORPUS,
  CORPUS_REFUSALS,
  corpusFiles,
  jpegScanData,
  libvipsDecodes,
  PHONE_PHOTO,
  phonePhotoWithGps,
  pool,
  privateMetadataOf,
  REFUSED_FORMATS,
  refusalsOf,
  uploadFile,
  type UploadAnswer,
} from "./support/corpus-uploads";
import { runCommand } from "./support/run-command";

const ROOT = path.resolve(__dirname, "..");
const run = process.env.REQUIRE_SERVICES === "1" ? describe.skip : describe;
// A fresh DATA_DIR: PGlite creates its database and runs every migration first.
const STARTUP_MS = 240_000;

/** Serial numbers the corpus's photos carry (XMP aux:SerialNumber, EXIF BodySerialNumber). */
const CORPUS_SERIALS: Record<string, string> = {
  "Landscape_9.jpg": "042024000437",
  "tifftag-photoshop.tiff": "72M52467",
};

/** `pnpm start` in its own process group, until both banners show; their URLs. */
function pnpmStart(
  env: NodeJS.ProcessEnv,
): Promise<{ child: ChildProcess; api: string; media: string; output: () => string }> {
  const child = spawn("pnpm", ["start"], { cwd: ROOT, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => fail(new Error(`pnpm start did not print both banners in ${STARTUP_MS} ms`)),
      STARTUP_MS,
    );
    const fail = (err: Error) => {
      clearTimeout(timer);
      stopGroup(child);
      reject(new Error(`${err.message}\n--- output ---\n${output}`));
    };
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const api = /Management API: (http:\/\/\S+)/.exec(output)?.[1];
      const media = /media service listening on (http:\/\/\S+)/.exec(output)?.[1];
      if (api && media) {
        clearTimeout(timer);
        resolve({ child, api, media, output: () => output });
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", (code) => fail(new Error(`pnpm start exited (${code}) before both services listened`)));
  });
}

/** SIGTERM to the whole group (pnpm, start.ts, both services), SIGKILL after 15 s. */
async function stopGroup(child: ChildProcess | undefined): Promise<void> {
  if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  process.kill(-child.pid, "SIGTERM");
  const force = setTimeout(() => process.kill(-child.pid!, "SIGKILL"), 15_000);
  await exited;
  clearTimeout(force);
}

run("the corpus through `pnpm start`", () => {
  let dataDir: string;
  let started: Awaited<ReturnType<typeof pnpmStart>> | undefined;
  const files = corpusFiles();
  const answers = new Map<string, UploadAnswer>();
  const uploaded = new Map<string, Buffer>();

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), "start-corpus-"));
    // The embedded defaults: whatever the CI run points at Postgres, Redis or S3 is left out.
    const inherited = Object.fromEntries(
      Object.entries(process.env).filter(
        ([k]) =>
          !/^(DATABASE_URL|PGLITE_DIR|REDIS_|STORAGE_|S3_|AUTH_|MEDIA_|MANAGEMENT_PORT$|HOST$|LOG_LEVEL$|KEEP_GPS$|ORIGINAL_METADATA$)/.test(
            k,
          ),
      ),
    );
    const env = {
      ...inherited,
      DATA_DIR: dataDir,
      // Its own spool folder: an orphan sweep of another test's service never takes an upload in flight.
      UPLOAD_SPOOL_DIR: path.join(dataDir, "spool"),
      HOST: "127.0.0.1",
      MANAGEMENT_PORT: "0",
      MEDIA_PORT: "0",
      AUTH_JWT_SECRET: `start-corpus-${randomUUID()}-${randomUUID()}`,
      LOG_LEVEL: "warn",
    };
    started = await pnpmStart(env);
    const token = await runCommand(
      process.execPath,
      ["--import", "tsx", "services/management/src/cli/token.ts", "--workspace", "corpus"],
      { cwd: ROOT, env },
    );
    expect(token.code).toBe(0);
    for (const file of files) uploaded.set(file, readFileSync(path.join(CORPUS, file)));
    uploaded.set(PHONE_PHOTO, await phonePhotoWithGps());
    // Two at once: the default share of one workspace (MAX_CONCURRENT_UPLOADS_PER_WORKSPACE) is 4.
    await pool([...uploaded.keys()], 2, async (file) => {
      try {
        answers.set(file, await uploadFile(started!.api, token.stdout.trim(), file, uploaded.get(file)!));
      } catch (err) {
        throw new Error(`uploading ${file}: ${String(err)}\n--- services ---\n${started!.output().slice(-4000)}`, {
          cause: err,
        });
      }
    });
    const refused = refusalsOf(answers);
    console.log(
      [
        `pnpm start: ${answers.size} uploads, ${answers.size - Object.keys(refused).length} accepted`,
        ...Object.entries(refused).map(([file, why]) => `  ${why}: ${file} (${answers.get(file)!.detail})`),
        `  ${PHONE_PHOTO}: ${answers.get(PHONE_PHOTO)!.status} in ${answers.get(PHONE_PHOTO)!.ms.toFixed(0)} ms`,
      ].join("\n"),
    );
  }, 10 * 60_000);

  afterAll(async () => {
    await stopGroup(started?.child);
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it("accepts every file libvips decodes and refuses only the listed ones, each with its problem", async () => {
    expect(refusalsOf(answers)).toEqual(CORPUS_REFUSALS);
    for (const [file, reason] of Object.entries(CORPUS_REFUSALS)) {
      // A refusal other than a limit or a listed format is one libvips agrees with.
      if (reason.includes("image-too-large") || REFUSED_FORMATS.includes(file)) continue;
      expect([file, await libvipsDecodes(file)]).toEqual([file, false]);
    }
  });

  it("accepts the 12 MP phone photo with GPS, and /original serves it without GPS or serial number, scan data as uploaded", async () => {
    const answer = answers.get(PHONE_PHOTO)!;
    expect([answer.status, answer.format, answer.width, answer.height]).toEqual([201, "jpeg", 4000, 3000]);
    const original = await fetch(`${started!.media}/original/${answer.id}.jpg`);
    expect(original.status).toBe(200);
    const bytes = Buffer.from(await original.arrayBuffer());
    expect(await privateMetadataOf(uploaded.get(PHONE_PHOTO)!)).toEqual([
      "EXIF GPS",
      "EXIF BodySerialNumber",
      "XMP drone-dji:GpsLatitude",
      "XMP drone-dji:GpsLongitude",
      "serial SN-0042",
    ]);
    expect(await privateMetadataOf(bytes)).toEqual([]);
    expect(bytes.length).toBe(uploaded.get(PHONE_PHOTO)!.length);
    expect(jpegScanData(bytes).equals(jpegScanData(uploaded.get(PHONE_PHOTO)!))).toBe(true);
  });

  it("serves the corpus's photos without their serial numbers, JPEG scan data as uploaded", async () => {
    for (const [file, serial] of Object.entries(CORPUS_SERIALS)) {
      const answer = answers.get(file)!;
      expect([file, answer.status]).toEqual([file, 201]);
      const extension = path.extname(file).slice(1);
      const res = await fetch(`${started!.media}/original/${answer.id}.${extension === "tiff" ? "tiff" : "jpg"}`);
      expect([file, res.status]).toEqual([file, 200]);
      const bytes = Buffer.from(await res.arrayBuffer());
      expect([file, uploaded.get(file)!.includes(serial), bytes.includes(serial)]).toEqual([file, true, false]);
      if (extension === "jpg") expect(jpegScanData(bytes).equals(jpegScanData(uploaded.get(file)!))).toBe(true);
    }
  });
});
