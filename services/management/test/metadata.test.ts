import { createHash, randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import request from "supertest";
import sharp from "sharp";
import { assetSchema } from "@media-platform/contracts";
import { FilesystemBlobStore, originalKey } from "@media-platform/storage";
import { backfillMetadata } from "../src/assets/backfill";
import { openDatabase } from "../src/db/client";
import { migrate } from "../src/db/migrate";
import { Prisma } from "../src/generated/prisma/client";
import { nativeRequire } from "../src/native-require";
import { runCommand } from "../../../test/support/run-command";
import { createTestApp, fixture, upload, type TestApp } from "./helpers";

type ThumbHash = typeof import("thumbhash", { with: { "resolution-mode": "import" } });
const { thumbHashToRGBA } = nativeRequire<ThumbHash>("thumbhash");

const WS = "ws-meta";

let t: TestApp;
let gps: TestApp;
beforeAll(async () => {
  t = await createTestApp();
  gps = await createTestApp({ keepGps: true });
});
afterAll(async () => {
  await t?.close();
  await gps?.close();
});

/** A JPEG carrying camera EXIF and a GPS position (no fixture has EXIF). */
const exifJpeg = () =>
  sharp({ create: { width: 64, height: 48, channels: 3, background: "#3366cc" } })
    .jpeg()
    .withExif({
      IFD0: { Make: "Fujifilm", Model: "X-T5", DateTime: "2024:05:06 07:08:09" },
      IFD2: {
        DateTimeOriginal: "2024:05:06 07:08:09",
        LensModel: "XF23mmF1.4 R LM WR",
        ExposureTime: "1/250",
        FNumber: "28/10",
        ISOSpeedRatings: "400",
      },
      IFD3: {
        GPSLatitudeRef: "S",
        GPSLatitude: "33/1 51/1 3600/100",
        GPSLongitudeRef: "E",
        GPSLongitude: "151/1 12/1 3000/100",
      },
    })
    .toBuffer();

async function uploaded(app: TestApp, bytes: Buffer, name: string) {
  const res = await upload(app.as(WS), bytes, name);
  expect(res.status).toBe(201);
  return assetSchema.parse(res.body);
}

/** Mean R, G, B of an RGBA buffer. */
function meanRgb(rgba: Uint8Array | Buffer): [number, number, number] {
  const sum = [0, 0, 0];
  for (let i = 0; i < rgba.length; i += 4) for (let c = 0; c < 3; c++) sum[c]! += rgba[i + c]!;
  const n = rgba.length / 4;
  return [sum[0]! / n, sum[1]! / n, sum[2]! / n];
}

describe("placeholder and metadata at upload", () => {
  it("opaque photo: placeholder decodes to the original's average colour, dominant colour, no alpha, one frame", async () => {
    for (const name of ["chelsea.png", "rocket.jpg"]) {
      const bytes = fixture(name);
      const asset = await uploaded(t, bytes, name);
      expect(asset).toMatchObject({ hasAlpha: false, animated: false, pages: 1, exif: null });
      expect(asset.dominantColor).toMatch(/^#[0-9a-f]{6}$/);
      const decoded = thumbHashToRGBA(Buffer.from(asset.placeholder!, "base64"));
      expect(Math.max(decoded.w, decoded.h)).toBe(32);
      const original = await sharp(bytes).ensureAlpha().raw().toBuffer();
      const [a, b] = [meanRgb(decoded.rgba), meanRgb(original)];
      for (let c = 0; c < 3; c++) expect(Math.abs(a[c]! - b[c]!)).toBeLessThan(12);
      // The data URL is a PNG of the decoded placeholder.
      expect(asset.placeholderDataUrl).toMatch(/^data:image\/png;base64,/);
      expect(asset.placeholderDataUrl!.length).toBeLessThan(3000);
      const png = Buffer.from(asset.placeholderDataUrl!.split(",")[1]!, "base64");
      const meta = await sharp(png).metadata();
      expect([meta.format, meta.width, meta.height]).toEqual(["png", decoded.w, decoded.h]);
    }
  });

  it("a single-colour image has that dominant colour and a placeholder of that colour", async () => {
    const bytes = await sharp({ create: { width: 50, height: 40, channels: 3, background: "#d02020" } })
      .png()
      .toBuffer();
    const asset = await uploaded(t, bytes, "red.png");
    // The centre of the fullest bin of a 16x16x16 histogram: 0xd0 -> 0xd8, 0x20 -> 0x28.
    expect(asset.dominantColor).toBe("#d82828");
    const [r, g, b] = meanRgb(thumbHashToRGBA(Buffer.from(asset.placeholder!, "base64")).rgba);
    expect(Math.abs(r - 0xd0)).toBeLessThan(6);
    expect(Math.abs(g - 0x20)).toBeLessThan(6);
    expect(Math.abs(b - 0x20)).toBeLessThan(6);
  });

  it("PNG with an alpha channel: hasAlpha true (logo.png, opaque alpha)", async () => {
    const asset = await uploaded(t, fixture("logo.png"), "logo.png");
    expect(asset).toMatchObject({ hasAlpha: true, animated: false, pages: 1, exif: null, width: 500, height: 500 });
    expect(asset.dominantColor).toBe("#f8f8f8");
  });

  it("the placeholder keeps transparency: left half transparent, right half opaque", async () => {
    const half = await sharp({ create: { width: 40, height: 40, channels: 4, background: "#20a020" } })
      .composite([
        {
          input: { create: { width: 20, height: 40, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 1 } } },
          left: 0,
          top: 0,
          // Clears the destination under the overlay: the left half becomes transparent.
          blend: "dest-out",
        },
      ])
      .png()
      .toBuffer();
    const asset = await uploaded(t, half, "half.png");
    expect(asset.hasAlpha).toBe(true);
    const { w, h, rgba } = thumbHashToRGBA(Buffer.from(asset.placeholder!, "base64"));
    const alphaAt = (x: number, y: number) => rgba[(y * w + x) * 4 + 3]!;
    expect(alphaAt(1, h >> 1)).toBeLessThan(80);
    expect(alphaAt(w - 2, h >> 1)).toBeGreaterThan(175);
  });

  it("animated GIF: animated true with its frame count", async () => {
    const asset = await uploaded(t, fixture("no_time_for_that_tiny.gif"), "anim.gif");
    expect(asset).toMatchObject({ animated: true, pages: 24, hasAlpha: true, width: 14, height: 25 });
  });

  it("JPEG with EXIF: camera, lens, taken-at, orientation, exposure; GPS left out by default", async () => {
    const asset = await uploaded(t, await exifJpeg(), "camera.jpg");
    expect(asset.exif).toEqual({
      make: "Fujifilm",
      model: "X-T5",
      lens: "XF23mmF1.4 R LM WR",
      takenAt: "2024-05-06T07:08:09.000Z",
      orientation: 1,
      exposureTime: 0.004,
      fNumber: 2.8,
      iso: 400,
    });
    const row = await t.db.prisma.asset.findUniqueOrThrow({ where: { id: asset.id } });
    expect(JSON.stringify(row.exif)).not.toMatch(/gps|latitude/i);
  });

  it("KEEP_GPS=true keeps the position in decimal degrees", async () => {
    const asset = await uploaded(gps, await exifJpeg(), "camera.jpg");
    expect(asset.exif?.gps).toEqual({ latitude: -33.86, longitude: 151.2083333, altitude: null });
    expect(asset.exif?.make).toBe("Fujifilm");
  });

  it("GET returns the same fields", async () => {
    const asset = await uploaded(t, fixture("logo.png"), "logo.png");
    const res = await t.as(WS).get(`/v1/assets/${asset.id}`);
    expect(res.status).toBe(200);
    expect(assetSchema.parse(res.body)).toEqual(asset);
  });
});

describe("replace and version restore", () => {
  it("replace recomputes the fields from the new original; restore recomputes them from the restored bytes", async () => {
    const first = await uploaded(t, fixture("logo.png"), "logo.png");
    const res = await request(t.app)
      .put(`/v1/assets/${first.id}/original`)
      .set("Authorization", `Bearer ${t.token(WS)}`)
      .attach("file", await exifJpeg(), "camera.jpg");
    expect(res.status).toBe(200);
    const replaced = assetSchema.parse(res.body);
    expect(replaced).toMatchObject({ hasAlpha: false, animated: false, pages: 1, version: 2 });
    expect(replaced.exif?.model).toBe("X-T5");
    expect(replaced.placeholder).not.toBe(first.placeholder);
    expect(replaced.dominantColor).not.toBe(first.dominantColor);

    const restored = await t.as(WS).post(`/v1/assets/${first.id}/versions/1/restore`);
    expect(restored.status).toBe(200);
    expect(restored.body).toMatchObject({
      version: 3,
      hasAlpha: true,
      exif: null,
      placeholder: first.placeholder,
      dominantColor: first.dominantColor,
    });
    const row = await t.db.prisma.asset.findUniqueOrThrow({ where: { id: first.id } });
    expect([row.placeholder, row.hasAlpha, row.exif]).toEqual([first.placeholder, true, null]);
  });
});

/** A row as it was before the analysis existed: every analysed fact unset. */
const UNANALYSED = {
  placeholder: null,
  placeholderDataUrl: null,
  dominantColor: null,
  hasAlpha: null,
  animated: null,
  pages: null,
  durationMs: null,
};

/** What the backfill computes from an original, as stored on its row. */
const analysedFacts = (r: {
  placeholder: string | null;
  placeholderDataUrl: string | null;
  dominantColor: string | null;
  hasAlpha: boolean | null;
  animated: boolean | null;
  pages: number | null;
  durationMs: number | null;
  exif: unknown;
}) => [r.placeholder, r.placeholderDataUrl, r.dominantColor, r.hasAlpha, r.animated, r.pages, r.durationMs, r.exif];

describe("backfill", () => {
  const clear = (id: string) =>
    t.db.prisma.asset.update({
      where: { id },
      data: { ...UNANALYSED, exif: Prisma.DbNull },
    });
  const options = { batchSize: 2, limitInputPixels: 100_000_000, keepGps: false };

  it("fills rows without metadata in every workspace (trashed included), in batches, and is idempotent", async () => {
    // Start from a table where every row is filled, then make three "old" rows.
    await backfillMetadata(t.db.prisma, t.blobStore, options);
    const gif = await uploaded(t, fixture("no_time_for_that_tiny.gif"), "anim.gif");
    const cam = await uploaded(t, await exifJpeg(), "camera.jpg");
    const other = await upload(t.as("ws-meta-other"), fixture("logo.png"), "logo.png");
    expect(other.status).toBe(201);
    const trashed = await uploaded(t, fixture("chelsea.png"), "chelsea.png");
    expect((await t.as(WS).delete(`/v1/assets/${trashed.id}`)).status).toBe(204);
    const ids = [gif.id, cam.id, other.body.id as string, trashed.id];
    const before = await t.db.prisma.asset.findMany({ where: { id: { in: ids } }, orderBy: { id: "asc" } });
    for (const id of ids) await clear(id);
    const cleared = await t.as(WS).get(`/v1/assets/${gif.id}`);
    expect(cleared.body).toMatchObject({
      ...UNANALYSED,
      exif: null,
    });

    const batches: number[] = [];
    const summary = await backfillMetadata(t.db.prisma, t.blobStore, {
      ...options,
      onBatch: (s) => batches.push(s.filled),
    });
    expect(summary).toEqual({ filled: 4, reoriented: 0, failed: 0, failures: [] });
    expect(batches).toEqual([2, 4]);
    const after = await t.db.prisma.asset.findMany({ where: { id: { in: ids } }, orderBy: { id: "asc" } });
    expect(after.map(analysedFacts)).toEqual(before.map(analysedFacts));
    expect(after.find((r) => r.id === gif.id)).toMatchObject({ animated: true, pages: 24 });

    expect(await backfillMetadata(t.db.prisma, t.blobStore, options)).toEqual({
      filled: 0,
      reoriented: 0,
      failed: 0,
      failures: [],
    });
  });

  it("reports an asset whose original is missing and leaves its row as it was", async () => {
    const asset = await uploaded(t, fixture("chelsea.png"), "chelsea.png");
    await clear(asset.id);
    await t.blobStore.delete(originalKey(asset.id));
    const summary = await backfillMetadata(t.db.prisma, t.blobStore, options);
    expect(summary).toEqual({
      filled: 0,
      reoriented: 0,
      failed: 1,
      failures: [{ assetId: asset.id, reason: "original missing from the blob store" }],
    });
    const row = await t.db.prisma.asset.findUniqueOrThrow({ where: { id: asset.id } });
    expect(row.placeholder).toBeNull();
  });
});

describe("pnpm run backfill:metadata", () => {
  const ROOT = path.resolve(__dirname, "../../..");
  const TSX = path.join(ROOT, "node_modules/.bin/tsx");
  const CLI = path.join(ROOT, "services/management/src/cli/backfill-metadata.ts");
  const run = (args: string[], env: Record<string, string>) =>
    runCommand(TSX, [CLI, ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
    });

  it("fills an old row of the embedded database from DATA_DIR's blobs; refuses a bad --batch-size", async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "backfill-cli-"));
    try {
      const id = randomUUID();
      const bytes = fixture("logo.png");
      let db = await openDatabase({ pgliteDir: path.join(dataDir, "pg") });
      await migrate(await db.migrationConnection());
      await new FilesystemBlobStore(path.join(dataDir, "blobs")).put(originalKey(id), bytes, "image/png");
      await db.prisma.asset.create({
        data: {
          id,
          workspaceId: "ws-cli",
          originalFilename: "logo.png",
          mimeType: "image/png",
          format: "png",
          width: 500,
          height: 500,
          bytes: BigInt(bytes.length),
          sha256: createHash("sha256").update(bytes).digest("hex"),
          phash: 0n,
        },
      });
      await db.close();

      const env = { DATA_DIR: dataDir };
      const bad = await run(["--batch-size", "0"], env);
      expect(bad.code).toBe(1);
      expect(bad.stderr).toContain("--batch-size must be an integer from 1 to 10000");

      const result = await run(["--json"], env);
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      expect(JSON.parse(result.stdout)).toEqual({
        filled: 1,
        reoriented: 0,
        failed: 0,
        failures: [],
        privacy: { cleaned: 0, failed: 0, failures: [] },
      });

      db = await openDatabase({ pgliteDir: path.join(dataDir, "pg") });
      const row = await db.prisma.asset.findUniqueOrThrow({ where: { id } });
      await db.close();
      expect(row).toMatchObject({ hasAlpha: true, animated: false, pages: 1, dominantColor: "#f8f8f8", exif: null });
      expect(row.placeholder).toMatch(/^[A-Za-z0-9+/]+=*$/);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
