import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { buffer } from "node:stream/consumers";
import exifReader from "exif-reader";
import sharp from "sharp";
import { assetSchema, RENDERING_SOURCE_METADATA, storedOriginalHeader } from "@media-platform/contracts";
import { originalKey, renderingSourceKey, trashKey, versionKey } from "../src/assets/blobs";
import { formatWorkers } from "../src/assets/format-workers";
import { sweepOrphans } from "../src/assets/orphans";
import { createTestApp, expectProblem, fixture, upload, type TestApp } from "./helpers";

/** Real HEIC, camera RAW and PDF files (see the README beside them for sources and licences). */
const FORMATS = path.resolve(__dirname, "../../../test/fixtures/formats");
if (!fs.existsSync(FORMATS)) throw new Error(`format fixtures missing: ${FORMATS}`);
const sample = (name: string) => fs.readFileSync(path.join(FORMATS, name));

const WS = "ws-formats";
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ ownBlobStore: true });
});
afterAll(async () => {
  await formatWorkers().close();
  await t?.close();
});

const blob = async (key: string) => {
  const found = await t.blobStore.get(key);
  if (!found) return null;
  return { ...found, bytes: await buffer(found.body) };
};

describe("HEIC (HEVC)", () => {
  it("an iPhone photo: accepted at its displayed size, stored as uploaded, rendered from a JPEG made once", async () => {
    const res = await upload(t.as(WS), sample("iphone-IMG_2682.heic"), "IMG_2682.HEIC");
    expect(res.status).toBe(201);
    const asset = assetSchema.parse(res.body);
    expect(asset).toMatchObject({ format: "heic", mimeType: "image/heic", width: 4032, height: 3024 });
    expect(asset.exif).toMatchObject({ make: "Apple" });
    expect(asset.exif?.gps).toBeUndefined();
    const original = (await blob(originalKey(asset.id)))!;
    expect(original.contentType).toBe("image/heic");
    // The photo's GPS position is gone from the stored original (its EXIF item), the rest kept.
    const uploadedExif = exifReader((await sharp(sample("iphone-IMG_2682.heic")).metadata()).exif!);
    expect(uploadedExif.GPSInfo?.GPSLatitude).toBeDefined();
    const storedExif = exifReader((await sharp(original.bytes).metadata()).exif!);
    expect(storedExif.GPSInfo?.GPSLatitude).toBeUndefined();
    expect(storedExif.Image?.Make).toBe("Apple");
    expect(original.metadata?.[RENDERING_SOURCE_METADATA]).toBe(renderingSourceKey(asset.id, 1));
    const source = (await blob(renderingSourceKey(asset.id, 1)))!;
    expect(source.contentType).toBe("image/jpeg");
    const meta = await sharp(source.bytes).metadata();
    expect(meta).toMatchObject({ format: "jpeg", width: 4032, height: 3024 });
    // The original's Display P3 profile travels with the decoded pixels.
    expect(meta.icc?.length).toBeGreaterThan(0);
    // What media plans from: the source's header, on both blobs.
    expect(storedOriginalHeader(original.metadata)).toMatchObject({ width: 4032, height: 3024, pages: 1 });
    expect(storedOriginalHeader(source.metadata)).toMatchObject({ width: 4032, height: 3024 });
    // A 12 MP HEVC decode in WebAssembly and the privacy rewrite: seconds each on a loaded machine.
  }, 180_000);

  it("a file of two images gives its primary one", async () => {
    const res = await upload(t.as(WS), sample("libheif-example-two-images.heic"), "example.heic");
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ format: "heic", width: 1280, height: 854 });
  });
});

describe("camera RAW", () => {
  it("a CR3 renders from its largest embedded preview, with the camera's EXIF", async () => {
    const res = await upload(t.as(WS), sample("canon-r6-pruned.cr3"), "IMG_0001.CR3");
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ format: "cr3", mimeType: "image/x-canon-cr3", width: 1620, height: 1080 });
    expect(res.body.exif).toMatchObject({ make: "Canon", model: "Canon EOS R6", orientation: 1 });
    const source = (await blob(renderingSourceKey(res.body.id as string, 1)))!;
    expect(await sharp(source.bytes).metadata()).toMatchObject({ format: "jpeg", width: 1620, height: 1080 });
  });

  it("a RAF whose largest usable embedded JPEG is its 160x120 thumbnail", async () => {
    const res = await upload(t.as(WS), sample("exiftool-fujifilm-s5pro.raf"), "DSCF0001.RAF");
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ format: "raf", width: 160, height: 120 });
    expect(res.body.exif).toMatchObject({ make: "FUJIFILM" });
  });

  it.each([
    ["exiftool-panasonic-lx3.rw2", "RW2", "largest: 8 x 8"],
    ["iphone12pro-pruned-no-preview.dng", "DNG", "largest: none"],
    ["exiftool-nikon-d70.nef", "NEF", "largest: none"],
    ["exiftool-canon-350d.dng", "DNG", "largest: none"],
  ])("%s has no usable preview: 415 saying so, nothing stored", async (name, type, largest) => {
    const before = await t.db.prisma.asset.count();
    const res = await upload(t.as(WS), sample(name), name);
    expectProblem(res, 415);
    expect(res.body.detail).toContain(`This ${type} file has no usable embedded JPEG preview (${largest}`);
    expect(await t.db.prisma.asset.count()).toBe(before);
  });
});

describe("PDF", () => {
  it("a 14-page paper: page 1's size in points, the page count, stored as uploaded", async () => {
    const bytes = sample("pdfjs-tracemonkey.pdf");
    const res = await upload(t.as(WS), bytes, "paper.pdf");
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ format: "pdf", mimeType: "application/pdf", width: 612, height: 792, pages: 14 });
    const original = (await blob(originalKey(res.body.id as string)))!;
    expect(original.bytes.equals(bytes)).toBe(true);
    expect(original.metadata?.[RENDERING_SOURCE_METADATA]).toBeUndefined();
    expect(storedOriginalHeader(original.metadata)).toMatchObject({ width: 612, height: 792, pages: 14 });
  });

  it("a PDF whose open action is JavaScript is accepted without running it", async () => {
    const res = await upload(t.as(WS), sample("pdfjs-issue6106-javascript.pdf"), "print.pdf");
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ format: "pdf", width: 400, height: 200, pages: 1 });
  });

  it("a fuzzed page tree (MediaBox 2^31 pt, /Count 213804087) is read as pdf.js repairs it: one Letter page", async () => {
    const res = await upload(t.as(WS), sample("pdfjs-poppler-85140-huge-page-many-pages.pdf"), "fuzzed.pdf");
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ width: 612, height: 792, pages: 1 });
  });

  it("a file that only starts like a PDF is a 422 naming it", async () => {
    const res = await upload(t.as(WS), Buffer.from("%PDF-1.7\nnot a document"), "broken.pdf");
    expectProblem(res, 422);
    expect(res.body.detail).toMatch(/The PDF could not be read/);
  });
});

describe("a HEIC's rendering source through every lifecycle path", () => {
  const heic = () => sample("libheif-example-two-images.heic");

  it("trash and restore leave it in place (media reaches it only through the live original)", async () => {
    const id = (await upload(t.as(WS), heic(), "a.heic")).body.id as string;
    expect((await t.as(WS).delete(`/v1/assets/${id}`)).status).toBe(204);
    expect(await t.blobStore.head(originalKey(id))).toBeNull();
    expect((await t.blobStore.head(trashKey(id)))?.metadata?.[RENDERING_SOURCE_METADATA]).toBe(
      renderingSourceKey(id, 1),
    );
    expect(await t.blobStore.head(renderingSourceKey(id, 1))).not.toBeNull();
    expect((await t.as(WS).post(`/v1/assets/${id}/restore`)).status).toBe(200);
    expect((await t.blobStore.head(originalKey(id)))?.metadata?.[RENDERING_SOURCE_METADATA]).toBe(
      renderingSourceKey(id, 1),
    );
  });

  it("replace writes a new one, the version keeps its own, a version restore copies it, pruning and permanent delete remove them", async () => {
    const app = await createTestApp({ ownBlobStore: true, assetVersionsKept: 1 });
    try {
      const id = (await upload(app.as(WS), heic(), "a.heic")).body.id as string;
      // Replaced by a JPEG: version 1 (HEIC) keeps its source, the JPEG has none.
      const replaced = await app.as(WS).put(`/v1/assets/${id}/original`).attach("file", fixture("rocket.jpg"), "r.jpg");
      expect(replaced.status).toBe(200);
      expect((await app.blobStore.head(versionKey(id, 1)))?.metadata?.[RENDERING_SOURCE_METADATA]).toBe(
        renderingSourceKey(id, 1),
      );
      expect(await app.blobStore.head(renderingSourceKey(id, 1))).not.toBeNull();
      expect((await app.blobStore.head(originalKey(id)))?.metadata?.[RENDERING_SOURCE_METADATA]).toBeUndefined();
      // Version 1 restored as version 3: its source copied to v3, named by the original.
      const restored = await app.as(WS).post(`/v1/assets/${id}/versions/1/restore`);
      expect(restored.status).toBe(200);
      expect(restored.body).toMatchObject({ format: "heic", width: 1280, height: 854, version: 3 });
      expect((await app.blobStore.head(originalKey(id)))?.metadata?.[RENDERING_SOURCE_METADATA]).toBe(
        renderingSourceKey(id, 3),
      );
      const v3 = (await app.blobStore.get(renderingSourceKey(id, 3)))!;
      expect(await sharp(await buffer(v3.body)).metadata()).toMatchObject({ width: 1280, height: 854 });
      // One version kept (v2, the JPEG): version 1 and its source were pruned.
      expect(await app.blobStore.head(versionKey(id, 1))).toBeNull();
      expect(await app.blobStore.head(renderingSourceKey(id, 1))).toBeNull();
      // Replaced again by a HEIC: the new current original's source is v4, v3's stays with version 3.
      const again = await app.as(WS).put(`/v1/assets/${id}/original`).attach("file", heic(), "b.heic");
      expect(again.status).toBe(200);
      expect(await app.blobStore.head(renderingSourceKey(id, 4))).not.toBeNull();
      expect(await app.blobStore.head(renderingSourceKey(id, 3))).not.toBeNull();
      expect((await app.as(WS).delete(`/v1/assets/${id}?permanent=true`)).status).toBe(204);
      for (const version of [1, 2, 3, 4]) expect(await app.blobStore.head(renderingSourceKey(id, version))).toBeNull();
    } finally {
      await app.close();
    }
  });

  it("the orphan sweep removes a source no row names (a crash between its write and the commit) and keeps the rest", async () => {
    const id = (await upload(t.as(WS), heic(), "a.heic")).body.id as string;
    const stray = "0b6a0a6e-5d0a-4c3e-9d59-1c1e8a2f0d11";
    const jpeg = await sharp({ create: { width: 4, height: 4, channels: 3, background: "#fff" } })
      .jpeg()
      .toBuffer();
    await t.blobStore.put(renderingSourceKey(stray, 1), jpeg, "image/jpeg");
    // A replace killed before its commit wrote version 2's source; the row is still at version 1.
    await t.blobStore.put(renderingSourceKey(id, 2), jpeg, "image/jpeg");
    const spoolDir = fs.mkdtempSync(path.join(os.tmpdir(), "spool-"));
    await sweepOrphans({ prisma: t.db.prisma, blobStore: t.blobStore }, { graceMs: 3_600_000, spoolDir });
    expect(await t.blobStore.head(renderingSourceKey(stray, 1))).not.toBeNull();
    await sweepOrphans({ prisma: t.db.prisma, blobStore: t.blobStore }, { graceMs: 0, spoolDir });
    expect(await t.blobStore.head(renderingSourceKey(stray, 1))).toBeNull();
    expect(await t.blobStore.head(renderingSourceKey(id, 2))).toBeNull();
    expect(await t.blobStore.head(renderingSourceKey(id, 1))).not.toBeNull();
  });
});
