import { buffer } from "node:stream/consumers";
import exifReader from "exif-reader";
import sharp from "sharp";
import { backfillPrivacy } from "../src/assets/backfill";
import { originalKey } from "../src/assets/blobs";
import { createTestApp, upload, type TestApp } from "./helpers";
import {
  exifBlocks,
  exifSegmentBody,
  GPS_EXIF,
  jpegSegment,
  photo,
  PRIVATE_XMP,
  scanData,
  tiffIfd0Tags,
  tiffWithGps,
  withSegments,
  XMP_GONE,
} from "./support/metadata-fixtures";

/**
 * The stored original is what `{media}/original/<id>.<ext>` serves to anyone: a phone photo's GPS
 * position and the camera's serial numbers are removed from it at upload (ORIGINAL_METADATA=private,
 * KEEP_GPS=false), losslessly; orientation, colour profile and copyright stay.
 */
async function phonePhoto(): Promise<Buffer> {
  return photo(120, 80)
    .withIccProfile("p3")
    .withExif({ ...GPS_EXIF, IFD0: { ...GPS_EXIF.IFD0, Artist: "Jane" } })
    .jpeg({ quality: 90 })
    .toBuffer();
}

async function stored(t: TestApp, id: string): Promise<Buffer> {
  const blob = await t.blobStore.get(originalKey(id));
  if (!blob) throw new Error("no stored original");
  return buffer(blob.body);
}

describe("privacy of stored originals", () => {
  let t: TestApp;
  let keep: TestApp;
  let keepAll: TestApp;
  beforeAll(async () => {
    [t, keep, keepAll] = await Promise.all([
      createTestApp(),
      createTestApp({ keepGps: true }),
      createTestApp({ originalMetadata: "keep" }),
    ]);
  });
  afterAll(() => Promise.all([t.close(), keep.close(), keepAll.close()]));

  it("removes GPS and serial numbers by default, keeps orientation, ICC and copyright, and leaves the image data as it was", async () => {
    const photo = await phonePhoto();
    expect(exifReader((await sharp(photo).metadata()).exif!).GPSInfo).toBeDefined();
    const res = await upload(t.as("ws-privacy"), photo, "phone.jpg");
    expect(res.status).toBe(201);
    const bytes = await stored(t, res.body.id);
    const meta = await sharp(bytes).metadata();
    const exif = exifReader(meta.exif!);
    expect(exif.GPSInfo ?? {}).toEqual({});
    expect(exif.Photo?.BodySerialNumber).toBeUndefined();
    expect(exif.Photo?.LensSerialNumber).toBeUndefined();
    expect(exif.Image?.Copyright).toBe("Jane Doe");
    expect(exif.Image?.Make).toBe("Acme");
    expect(meta.icc?.length).toBe((await sharp(photo).metadata()).icc?.length);
    expect(bytes.includes(Buffer.from("SN-0042"))).toBe(false);
    // Lossless: the coded image is the same, pixel for pixel.
    expect((await sharp(bytes).raw().toBuffer()).equals(await sharp(photo).raw().toBuffer())).toBe(true);
    expect(res.body.bytes).toBe(bytes.length);
  });

  it("keeps the position with KEEP_GPS=true", async () => {
    const res = await upload(keep.as("ws-privacy"), await phonePhoto(), "phone.jpg");
    expect(res.status).toBe(201);
    const exif = exifReader((await sharp(await stored(keep, res.body.id)).metadata()).exif!);
    expect(exif.GPSInfo?.GPSLatitudeRef).toBe("N");
    expect(exif.Photo?.BodySerialNumber).toBeUndefined();
  });

  it("keeps serial numbers with ORIGINAL_METADATA=keep, and still removes GPS", async () => {
    const res = await upload(keepAll.as("ws-privacy"), await phonePhoto(), "phone.jpg");
    expect(res.status).toBe(201);
    const exif = exifReader((await sharp(await stored(keepAll, res.body.id)).metadata()).exif!);
    expect(exif.GPSInfo ?? {}).toEqual({});
    expect(exif.Photo?.BodySerialNumber).toBe("SN-0042");
  });

  it("stores a photo without private metadata byte for byte", async () => {
    const plain = await sharp({ create: { width: 40, height: 30, channels: 3, background: "blue" } })
      .withExif({ IFD0: { Copyright: "Jane Doe" } })
      .jpeg()
      .toBuffer();
    const res = await upload(t.as("ws-privacy"), plain, "plain.jpg");
    expect(res.status).toBe(201);
    expect((await stored(t, res.body.id)).equals(plain)).toBe(true);
  });

  it("backfill:metadata cleans originals stored before, keeping their blob facts, and is idempotent", async () => {
    const photo = await phonePhoto();
    const res = await upload(keep.as("ws-privacy-old"), photo, "old.jpg");
    expect(res.status).toBe(201);
    const before = await keep.blobStore.get(originalKey(res.body.id));
    await before!.body.destroy();
    const options = { batchSize: 2, policy: "private" as const, keepGps: false };
    const summary = await backfillPrivacy(keep.db.prisma, keep.blobStore, options);
    expect(summary.failed).toBe(0);
    expect(summary.cleaned).toBeGreaterThanOrEqual(1);
    const blob = await keep.blobStore.get(originalKey(res.body.id));
    const bytes = await buffer(blob!.body);
    expect(exifReader((await sharp(bytes).metadata()).exif!).GPSInfo ?? {}).toEqual({});
    expect([blob!.contentType, blob!.metadata]).toEqual([before!.contentType, before!.metadata]);
    expect((await keep.as("ws-privacy-old").get(`/v1/assets/${res.body.id}`)).body.bytes).toBe(bytes.length);
    expect((await backfillPrivacy(keep.db.prisma, keep.blobStore, options)).cleaned).toBe(0);
  });

  // The findings of the security review, each through an upload.
  it("removes the GPS IFD of a TIFF whose EXIF libvips does not report", async () => {
    const tiff = await tiffWithGps();
    expect((await sharp(tiff).metadata()).exif).toBeUndefined();
    const res = await upload(t.as("ws-privacy"), tiff, "scan.tif");
    expect(res.status).toBe(201);
    const bytes = await stored(t, res.body.id);
    expect(tiffIfd0Tags(bytes)).not.toContain(34853);
    expect(bytes.length).toBe(tiff.length);
  });

  it("removes the GPS of every EXIF block of a JPEG, the first included", async () => {
    const jpeg = await photo().withExif(GPS_EXIF).jpeg().toBuffer();
    const twice = withSegments(jpeg, jpegSegment(0xe1, await exifSegmentBody(GPS_EXIF)));
    const res = await upload(t.as("ws-privacy"), twice, "two-blocks.jpg");
    expect(res.status).toBe(201);
    const bytes = await stored(t, res.body.id);
    expect(exifBlocks(bytes).map((e) => e.GPSInfo ?? null)).toEqual([null, null]);
    expect(scanData(bytes).equals(scanData(twice))).toBe(true);
  });

  it("removes XMP positions however they are spelled (GPSDest*, DJI's GpsLatitude) and XMP location fields", async () => {
    const jpeg = await photo().withXmp(PRIVATE_XMP).jpeg().toBuffer();
    const res = await upload(t.as("ws-privacy"), jpeg, "drone.jpg");
    expect(res.status).toBe(201);
    const xmp = (await sharp(await stored(t, res.body.id)).metadata()).xmp!.toString("utf8");
    for (const gone of XMP_GONE) expect([gone, xmp.includes(gone)]).toEqual([gone, false]);
  });
});
