import fs from "node:fs";
import path from "node:path";
import exifReader from "exif-reader";
import sharp from "sharp";
import { UnsupportedImageError } from "@media-platform/contracts";
import { cameraRawContents } from "../src/assets/camera-raw";
import { readCameraRaw } from "../src/assets/decoded-formats";
import { withoutPrivateMetadata } from "../src/assets/original-privacy";
import { tiffCameraRaw } from "./support/metadata-fixtures";

/**
 * Camera RAW files read in process (assets/camera-raw.ts): the embedded JPEGs found in each
 * sample of test/fixtures/formats (what each really holds), the one rendered from, and the
 * camera's tags; then made-up TIFF-based files for the places a preview may sit.
 */

const FORMATS = path.resolve(__dirname, "../../../test/fixtures/formats");
const sample = (name: string) => fs.readFileSync(path.join(FORMATS, name));
const LIMIT = 268_402_689;
const PRIVATE = { keepGps: false };

/** The decoded size of each embedded JPEG found, or "x" for one that does not decode. */
async function previewSizes(file: Buffer): Promise<string[]> {
  const contents = cameraRawContents(file);
  return Promise.all(
    (contents?.previews ?? []).map((jpeg) =>
      sharp(jpeg, { failOn: "error" })
        .metadata()
        .then((m) => `${m.width}x${m.height}`)
        .catch(() => "x"),
    ),
  );
}

const jpeg = (width: number, height: number) =>
  sharp({ create: { width, height, channels: 3, background: { r: 200, g: 80, b: 40 } } })
    .jpeg()
    .toBuffer();

describe("the format samples", () => {
  it.each([
    ["canon-r6-pruned.cr3", "cr3", ["160x120", "1620x1080"]],
    ["exiftool-fujifilm-s5pro.raf", "raf", ["8x8", "160x120"]],
    ["exiftool-panasonic-lx3.rw2", "rw2", ["8x8"]],
    ["exiftool-nikon-d70.nef", "nef", []],
    ["exiftool-canon-350d.dng", "dng", []],
    ["iphone12pro-pruned-no-preview.dng", "dng", []],
  ])("%s is a %s holding the JPEGs %j", async (name, format, sizes) => {
    const file = sample(name);
    expect(cameraRawContents(file)?.format).toBe(format);
    expect(await previewSizes(file)).toEqual(sizes);
  });

  it("a CR3: rendered from its 1620x1080 PRVW, with the EXIF of CMT1 and CMT2", async () => {
    const raw = (await readCameraRaw(sample("canon-r6-pruned.cr3"), LIMIT, PRIVATE))!;
    expect(raw.format).toBe("cr3");
    expect(await sharp(raw.source).metadata()).toMatchObject({ format: "jpeg", width: 1620, height: 1080 });
    expect(raw.exif).toEqual({
      make: "Canon",
      model: "Canon EOS R6",
      lens: "RF70-200mm F2.8 L IS USM",
      takenAt: "2021-05-12T12:21:21.000Z",
      orientation: 1,
      exposureTime: 0.25,
      fNumber: expect.any(Number),
      iso: 100,
    });
  });

  it("a RAF: rendered from the 160x120 thumbnail of its JPEG's EXIF, with that EXIF", async () => {
    const raw = (await readCameraRaw(sample("exiftool-fujifilm-s5pro.raf"), LIMIT, PRIVATE))!;
    expect(await sharp(raw.source).metadata()).toMatchObject({ width: 160, height: 120 });
    expect(raw.exif).toMatchObject({ make: "FUJIFILM", model: "FinePix S5Pro", exposureTime: 0.004, iso: 100 });
  });

  it.each([
    ["exiftool-panasonic-lx3.rw2", "RW2", "8 x 8"],
    ["exiftool-nikon-d70.nef", "NEF", "none"],
    ["exiftool-canon-350d.dng", "DNG", "none"],
    ["iphone12pro-pruned-no-preview.dng", "DNG", "none"],
  ])("%s: no usable preview, a 415 naming the largest found", async (name, type, largest) => {
    const read = readCameraRaw(sample(name), LIMIT, PRIVATE);
    await expect(read).rejects.toBeInstanceOf(UnsupportedImageError);
    await expect(read).rejects.toThrow(`This ${type} file has no usable embedded JPEG preview (largest: ${largest};`);
  });

  it("a plain TIFF is no camera RAW", async () => {
    const tiff = await sharp({ create: { width: 8, height: 8, channels: 3, background: "white" } })
      .tiff()
      .toBuffer();
    expect(cameraRawContents(tiff)).toBeUndefined();
  });
});

describe("made-up TIFF-based files", () => {
  it("a NEF: the JPEG-coded SubIFD strip beats IFD1's thumbnail, turned by the camera's orientation", async () => {
    const file = tiffCameraRaw({
      make: "NIKON CORPORATION",
      model: "NIKON Z 6",
      orientation: 6,
      preview: await jpeg(640, 480),
      thumbnail: await jpeg(160, 120),
    });
    expect(await previewSizes(file)).toEqual(["640x480", "160x120"]);
    const raw = (await readCameraRaw(file, LIMIT, PRIVATE))!;
    expect(raw.format).toBe("nef");
    // The preview has no orientation of its own: the camera's (6, a quarter turn) is applied.
    expect(await sharp(raw.source).metadata()).toMatchObject({ width: 480, height: 640 });
    expect(raw.exif).toMatchObject({ make: "NIKON CORPORATION", model: "NIKON Z 6", orientation: 6 });
    expect(raw.exif.gps).toBeUndefined();
    const kept = (await readCameraRaw(file, LIMIT, { keepGps: true }))!;
    expect(kept.exif.gps).toEqual({ latitude: 48.8566667, longitude: 2.35, altitude: null });
  });

  it("a TIFF with a camera maker's name but no sensor data is no camera RAW (read as a TIFF)", async () => {
    const file = tiffCameraRaw({
      make: "NIKON",
      model: "LS-5000",
      orientation: 1,
      preview: await jpeg(640, 480),
      thumbnail: await jpeg(160, 120),
      sensorData: false,
    });
    expect(cameraRawContents(file)).toBeUndefined();
  });

  it("an RW2 (magic 0x55): its JpgFromRaw entry, tags read despite the magic", async () => {
    const file = tiffCameraRaw({
      make: "Panasonic",
      model: "DC-S5",
      orientation: 1,
      preview: await jpeg(600, 400),
      thumbnail: await jpeg(160, 120),
      magic: 0x55,
    });
    const raw = (await readCameraRaw(file, LIMIT, PRIVATE))!;
    expect(raw.format).toBe("rw2");
    expect(await sharp(raw.source).metadata()).toMatchObject({ width: 600, height: 400 });
    expect(raw.exif).toMatchObject({ make: "Panasonic", model: "DC-S5" });
  });

  it("the stored original loses the GPS IFD and the serial number, and its previews are still found", async () => {
    const file = tiffCameraRaw({
      make: "NIKON CORPORATION",
      model: "NIKON Z 6",
      orientation: 1,
      preview: await jpeg(640, 480),
      thumbnail: await jpeg(160, 120),
    });
    const { bytes } = withoutPrivateMetadata(file, "camera-raw", { policy: "private", keepGps: false })!;
    const tags = exifReader(bytes);
    expect(tags.GPSInfo).toBeUndefined();
    expect(tags.Photo?.BodySerialNumber).toBeUndefined();
    expect(tags.Image?.Model).toBe("NIKON Z 6");
    expect(await previewSizes(bytes)).toEqual(["640x480", "160x120"]);
  });
});
