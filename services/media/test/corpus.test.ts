import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import sharp from "sharp";
import {
  MANAGEMENT_READY,
  MEDIA_READY,
  REPO_ROOT,
  startServiceProcess,
  stopServiceProcess,
  type ServiceProcess,
} from "./support/service-process";
import { specSteps } from "./support/spec-steps";
import {
  CORPUS,
  CORPUS_REFUSALS,
  corpusFiles,
  jpegScanData,
  PHONE_PHOTO,
  phonePhotoWithGps,
  pool,
  privateMetadataOf,
  refusalsOf,
  uploadFile,
  type UploadAnswer,
} from "../../../test/support/corpus-uploads";

/**
 * The real-world corpus (sharp's own test images, `../shared/fixtures/corpus/sharp` beside the
 * repository) through the production bundle: `pnpm build`, then both services as
 * `node dist/index.js` on the embedded defaults. Every file is uploaded; every accepted asset gets
 * each of the spec's 16 transformations, written in the spec's own notation (`1.0`, `3.0`, ...).
 *
 * It asserts what a user of real files relies on: refusals are 4xx problems (never a 5xx), every
 * 200 decodes in the format its Content-Type names, the eight EXIF orientations of one photo report
 * the displayed size and look alike, animations stay animated, CMYK and wide-gamut originals come
 * back sRGB. The per-request figures are printed for the record.
 *
 * The embedded pass runs it; the Postgres pass (REQUIRE_SERVICES=1) covers the same code paths
 * with other drivers and leaves it out to keep CI's time.
 */

const ROOT = REPO_ROOT;
const run = process.env.REQUIRE_SERVICES === "1" ? describe.skip : describe;

/** SVG originals: stored sanitised, every transformation answers PNG. */
const SVG = ["check.svg", "circle.svg", "struct-image-04-t.svg"];

const ANIMATED: Record<string, number> = {
  "animated-loop-3.gif": 10,
  "animated-loop-3.webp": 10,
  "rotating-squares.gif": 30,
  "rotating-squares.webp": 9,
};

const WIDE_GAMUT_OR_CMYK = [
  "Channel_digital_image_CMYK_color.jpg",
  "Channel_digital_image_CMYK_color_no_profile.jpg",
  "fogra-0-100-100-0.tif",
  "p3.png",
  "prophoto.png",
];

interface Asset {
  id: string;
  width: number;
  height: number;
  format: string;
}

/** The 16 transformations of the spec, in its notation; crop takes half the asset's size. */
const specStepsOf = (asset: Asset): string[] =>
  specSteps({ width: Math.max(1, Math.floor(asset.width / 2)), height: Math.max(1, Math.floor(asset.height / 2)) });

/** sharp's name of the format a Content-Type names. */
const SHARP_FORMAT: Record<string, string[]> = {
  "image/jpeg": ["jpeg"],
  "image/png": ["png"],
  "image/webp": ["webp"],
  "image/gif": ["gif"],
  "image/avif": ["heif"],
  "image/tiff": ["tiff"],
};

interface MediaResult {
  file: string;
  url: string;
  status: number;
  contentType: string;
  ms: number;
  body: Buffer;
}

run("real-world corpus through the production bundle", () => {
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  let media: ServiceProcess | undefined;
  let management: ServiceProcess | undefined;
  let token: string;
  const assets = new Map<string, Asset>();
  const uploads = new Map<string, UploadAnswer>();
  const uploaded = new Map<string, Buffer>();
  const results: MediaResult[] = [];

  beforeAll(async () => {
    if (!fs.existsSync(CORPUS)) throw new Error(`the corpus is missing: ${CORPUS}`);
    const build = spawnSync(process.execPath, ["--import", "tsx", "scripts/build.ts"], { cwd: ROOT, encoding: "utf8" });
    if (build.status !== 0) throw new Error(`pnpm build failed:\n${build.stdout}\n${build.stderr}`);

    dataDir = await mkdtemp(path.join(tmpdir(), "media-corpus-"));
    env = {
      ...process.env,
      NODE_ENV: "production",
      HOST: "127.0.0.1",
      DATA_DIR: dataDir,
      PGLITE_DIR: path.join(dataDir, "pg"),
      STORAGE_DRIVER: "fs",
      STORAGE_DIR: path.join(dataDir, "blobs"),
      UPLOAD_SPOOL_DIR: path.join(dataDir, "spool"),
      DATABASE_URL: "",
      REDIS_URL: "",
      MEDIA_SIGNING_KEY: "",
      AUTH_JWKS_URL: "",
      AUTH_PUBLIC_KEY: "",
      AUTH_JWT_SECRET: `corpus-${randomUUID()}-${randomUUID()}`,
      LOG_LEVEL: "warn",
      MEDIA_PORT: "0",
      MANAGEMENT_PORT: "0",
      // Every transformation must succeed; how fast is bench's question. A loaded machine takes
      // longer than the 30 s default deadline over the largest TIFFs in a render process.
      MEDIA_REQUEST_TIMEOUT_MS: "300000",
    };
    media = await startServiceProcess("services/media/dist/index.js", env, MEDIA_READY);
    management = await startServiceProcess(
      "services/management/dist/index.js",
      { ...env, MEDIA_PUBLIC_URL: media.url },
      MANAGEMENT_READY,
    );
    const tokenRun = spawnSync(
      process.execPath,
      ["services/management/dist/cli/token.js", "--workspace", randomUUID()],
      { cwd: ROOT, env, encoding: "utf8" },
    );
    if (tokenRun.status !== 0) throw new Error(`token: ${tokenRun.stderr}`);
    token = tokenRun.stdout.trim();

    // The corpus, and a 12 MP phone photo with GPS (test/support/corpus-uploads.ts).
    const files = corpusFiles();
    for (const file of files) uploaded.set(file, fs.readFileSync(path.join(CORPUS, file)));
    uploaded.set(PHONE_PHOTO, await phonePhotoWithGps());
    await pool([...uploaded.keys()], 2, async (file) => {
      const answer = await uploadFile(management!.url, token, file, uploaded.get(file)!);
      uploads.set(file, answer);
      if (answer.status === 201 && file !== PHONE_PHOTO)
        assets.set(file, { id: answer.id!, width: answer.width!, height: answer.height!, format: answer.format! });
    });

    const requests = [...assets].flatMap(([file, asset]) =>
      specStepsOf(asset).map((steps) => ({ file, url: `${media!.url}/${steps}/${asset.id}.${extensionOf(file)}` })),
    );
    await pool(requests, 3, async ({ file, url }) => {
      const started = performance.now();
      const res = await fetch(url);
      const body = Buffer.from(await res.arrayBuffer());
      results.push({
        file,
        url,
        status: res.status,
        contentType: res.headers.get("content-type") ?? "",
        ms: performance.now() - started,
        body,
      });
    });

    const slowest = [...results].sort((a, b) => b.ms - a.ms).slice(0, 5);
    const refusedBy = new Map<string, string[]>();
    for (const [file, why] of Object.entries(refusalsOf(uploads)))
      refusedBy.set(why, [...(refusedBy.get(why) ?? []), file]);
    console.log(
      [
        `corpus: ${files.length} files, ${assets.size} accepted`,
        ...[...refusedBy].map(([status, list]) => `  refused ${status}: ${list.join(", ")}`),
        `media: ${results.length} requests, ${results.filter((r) => r.status >= 500).length} 5xx, ` +
          `${results.filter((r) => r.status === 200).length} 200`,
        "slowest:",
        ...slowest.map((r) => `  ${r.ms.toFixed(0)} ms ${r.status} ${r.url.replace(media!.url, "")} (${r.file})`),
      ].join("\n"),
    );
  }, 30 * 60_000);

  afterAll(async () => {
    await Promise.all([stopServiceProcess(media), stopServiceProcess(management)]);
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  function extensionOf(file: string): string {
    return path.extname(file).slice(1).toLowerCase();
  }

  it("accepts every decodable file and refuses only the listed ones, each with its problem", () => {
    expect(refusalsOf(uploads)).toEqual(CORPUS_REFUSALS);
  });

  it("serves /original of the 12 MP phone photo without GPS or serial number, scan data as uploaded", async () => {
    const answer = uploads.get(PHONE_PHOTO)!;
    expect([answer.status, answer.width, answer.height]).toEqual([201, 4000, 3000]);
    const res = await fetch(`${media!.url}/original/${answer.id}.jpg`);
    expect(res.status).toBe(200);
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(await privateMetadataOf(bytes)).toEqual([]);
    expect(jpegScanData(bytes).equals(jpegScanData(uploaded.get(PHONE_PHOTO)!))).toBe(true);
  });

  it("answers no 5xx, and every transformation of every accepted file succeeds", () => {
    expect(results.length).toBe(assets.size * 16);
    const failed = results.filter((r) => r.status !== 200).map((r) => `${r.status} ${r.url} (${r.file})`);
    expect(failed).toEqual([]);
  });

  it("every 200 decodes in the format its Content-Type names", async () => {
    const wrong: string[] = [];
    for (const r of results.filter((x) => x.status === 200)) {
      const expected = SHARP_FORMAT[r.contentType];
      const meta = await sharp(r.body, { pages: -1 })
        .metadata()
        .catch(() => undefined);
      if (!expected || !meta?.format || !expected.includes(meta.format))
        wrong.push(`${r.contentType} ${meta?.format} ${r.url}`);
    }
    expect(wrong).toEqual([]);
  });

  it("reports EXIF orientations 1-8 in displayed dimensions, and renders them alike", async () => {
    for (const kind of ["Landscape", "Portrait"] as const) {
      const expected = kind === "Landscape" ? [600, 450] : [450, 600];
      const reference = await thumbnailPixels(`${kind}_1.jpg`);
      for (let o = 1; o <= 8; o++) {
        const asset = assets.get(`${kind}_${o}.jpg`)!;
        expect([`${kind}_${o}`, asset.width, asset.height]).toEqual([`${kind}_${o}`, ...expected]);
        const pixels = await thumbnailPixels(`${kind}_${o}.jpg`);
        let sum = 0;
        for (let i = 0; i < pixels.length; i++) sum += Math.abs(pixels[i]! - reference[i]!);
        expect([`${kind}_${o}`, sum / pixels.length < 12]).toEqual([`${kind}_${o}`, true]);
      }
    }
  });

  async function thumbnailPixels(file: string): Promise<Buffer> {
    const r = results.find((x) => x.file === file && x.url.includes("/thumbnail:size=64/"))!;
    expect(r.status).toBe(200);
    return sharp(r.body).removeAlpha().resize(16, 16).raw().toBuffer();
  }

  it("keeps animations animated, frame count included", async () => {
    for (const [file, frames] of Object.entries(ANIMATED)) {
      const r = results.find((x) => x.file === file && x.url.includes("/fit:width=128:height=96"))!;
      expect([file, r.status]).toEqual([file, 200]);
      const meta = await sharp(r.body, { pages: -1 }).metadata();
      expect([file, meta.pages, meta.pageHeight]).toEqual([file, frames, 96]);
    }
  });

  it("accepts SVG originals at their intrinsic size and renders every transformation of them as PNG", () => {
    expect(SVG.map((file) => [file, assets.get(file)?.format])).toEqual(SVG.map((file) => [file, "svg"]));
    const size = (file: string) => [assets.get(file)?.width, assets.get(file)?.height];
    expect([size("check.svg"), size("struct-image-04-t.svg")]).toEqual([
      [100, 100],
      [480, 360],
    ]);
    for (const file of SVG) {
      const answers = results.filter((r) => r.file === file).map((r) => `${r.status} ${r.contentType}`);
      expect([file, answers]).toEqual([file, Array.from({ length: 16 }, () => "200 image/png")]);
    }
  });

  it("answers CMYK and wide-gamut originals in sRGB", async () => {
    for (const file of WIDE_GAMUT_OR_CMYK) {
      const r = results.find((x) => x.file === file && x.url.includes("/saturation:value=1.0/"))!;
      expect([file, r.status]).toEqual([file, 200]);
      const meta = await sharp(r.body).metadata();
      expect([file, meta.space]).toEqual([file, "srgb"]);
    }
  });
});
