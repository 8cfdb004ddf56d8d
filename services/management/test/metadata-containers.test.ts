import zlib from "node:zlib";
import exifReader from "exif-reader";
import sharp from "sharp";
import { SaxesParser } from "saxes";
import {
  MalformedMetadataError,
  withoutPrivateMetadata,
  type MetadataContainer,
  type OriginalPrivacyOptions,
} from "../src/assets/original-privacy";
import {
  exifBlocks,
  exifSegmentBody,
  extendedXmpBodies,
  GPS_EXIF,
  gifWithXmp,
  iptcDatasets,
  jpegSegment,
  jpegSegments,
  photo,
  photoshopIptc,
  pngChunk,
  pngChunks,
  PRIVATE_XMP,
  rawProfileText,
  scanData,
  tiffIfd0Tags,
  tiffWithGps,
  withPngChunks,
  withSegments,
  XMP_GONE,
  XMP_KEPT,
} from "./support/metadata-fixtures";

/**
 * The in-process metadata edits of every container (assets/metadata-containers/), on files made
 * by sharp plus the blocks sharp does not write: what goes, what stays, and that every byte that is
 * not metadata (the coded image) and the file's length stay as they were.
 */

const PRIVATE: OriginalPrivacyOptions = { policy: "private", keepGps: false };
const strip = (bytes: Buffer, container: MetadataContainer, options = PRIVATE) => {
  const before = Buffer.from(bytes);
  const result = withoutPrivateMetadata(bytes, container, options);
  // The caller's buffer is never modified.
  expect(bytes.equals(before)).toBe(true);
  return result;
};

/** The text of an XMP packet, checked to still be well-formed XML. */
function wellFormed(xmp: string): string {
  new SaxesParser({ xmlns: true }).write(xmp).close();
  return xmp;
}

function expectPrivateXmpCleaned(xmp: string): void {
  wellFormed(xmp);
  for (const gone of XMP_GONE) expect([gone, xmp.includes(gone)]).toEqual([gone, false]);
  for (const kept of XMP_KEPT) expect([kept, xmp.includes(kept)]).toEqual([kept, true]);
}

const pixels = (bytes: Buffer) => sharp(bytes).raw().toBuffer();

describe("metadata edits by container", () => {
  it("JPEG: GPS, serial numbers and XMP location go; scan data, length and the rest of EXIF stay", async () => {
    const jpeg = await photo().withExif(GPS_EXIF).withXmp(PRIVATE_XMP).jpeg().toBuffer();
    const result = strip(jpeg, "jpeg")!;
    expect(result.bytes.length).toBe(jpeg.length);
    expect(scanData(result.bytes).equals(scanData(jpeg))).toBe(true);
    const [exif] = exifBlocks(result.bytes);
    expect(exif!.GPSInfo ?? null).toBeNull();
    expect(exif!.Photo?.BodySerialNumber).toBeUndefined();
    expect(exif!.Image?.Copyright).toBe("Jane Doe");
    expectPrivateXmpCleaned((await sharp(result.bytes).metadata()).xmp!.toString("utf8"));
    expect(result.removed).toEqual(
      expect.arrayContaining(["JPEG EXIF GPS IFD", "JPEG EXIF BodySerialNumber", "XMP drone-dji:GpsLatitude"]),
    );
  });

  it("JPEG: KEEP_GPS keeps the position and location fields; ORIGINAL_METADATA=keep keeps serial numbers", async () => {
    const jpeg = await photo().withExif(GPS_EXIF).withXmp(PRIVATE_XMP).jpeg().toBuffer();
    const keepGps = strip(jpeg, "jpeg", { policy: "private", keepGps: true })!;
    const exif = exifBlocks(keepGps.bytes)[0]!;
    expect(exif.GPSInfo?.GPSLatitudeRef).toBe("N");
    expect(exif.Photo?.BodySerialNumber).toBeUndefined();
    const xmp = (await sharp(keepGps.bytes).metadata()).xmp!.toString();
    expect([xmp.includes("GpsLatitude"), xmp.includes("photoshop:City"), xmp.includes("aux:SerialNumber")]).toEqual([
      true,
      true,
      false,
    ]);
    const keepSerials = strip(jpeg, "jpeg", { policy: "keep", keepGps: false })!;
    expect(exifBlocks(keepSerials.bytes)[0]!.Photo?.BodySerialNumber).toBe("SN-0042");
    expect(exifBlocks(keepSerials.bytes)[0]!.GPSInfo ?? null).toBeNull();
    expect(strip(jpeg, "jpeg", { policy: "keep", keepGps: true })).toBeUndefined();
  });

  it("JPEG: every EXIF block loses its GPS, the first as well as the one libvips reads", async () => {
    const jpeg = await photo().withExif(GPS_EXIF).jpeg().toBuffer();
    const twice = withSegments(jpeg, jpegSegment(0xe1, await exifSegmentBody(GPS_EXIF)));
    expect(exifBlocks(twice).map((e) => e.GPSInfo?.GPSLatitudeRef)).toEqual(["N", "N"]);
    const result = strip(twice, "jpeg")!;
    expect(exifBlocks(result.bytes).map((e) => e.GPSInfo ?? null)).toEqual([null, null]);
    expect(scanData(result.bytes).equals(scanData(twice))).toBe(true);
  });

  it("JPEG: IPTC location datasets go, the other datasets stay, the segment keeps its length", async () => {
    const iptc = iptcDatasets([
      [5, "Title kept"],
      [90, "Paris"],
      [92, "Montmartre"],
      [95, "Ile-de-France"],
      [100, "FRA"],
      [101, "France"],
      [116, "Copyright kept"],
    ]);
    const app13 = Buffer.concat([Buffer.from("Photoshop 3.0\0", "latin1"), photoshopIptc(iptc)]);
    const jpeg = withSegments(await photo().jpeg().toBuffer(), jpegSegment(0xed, app13));
    const result = strip(jpeg, "jpeg")!;
    expect(result.removed).toEqual([
      "IPTC 2:90 City",
      "IPTC 2:92 Sub-location",
      "IPTC 2:95 Province/State",
      "IPTC 2:100 Country Code",
      "IPTC 2:101 Country",
    ]);
    const body = jpegSegments(result.bytes).find(([m]) => m === 0xed)![1];
    expect(body.length).toBe(app13.length);
    const text = body.toString("latin1");
    for (const gone of ["Paris", "Montmartre", "Ile-de-France", "FRA", "France"]) expect(text).not.toContain(gone);
    expect(text).toContain("Title kept");
    expect(text).toContain("Copyright kept");
    // libvips still reads the IPTC block, and the image.
    expect((await sharp(result.bytes).metadata()).iptc?.length).toBeGreaterThan(0);
    expect((await pixels(result.bytes)).equals(await pixels(jpeg))).toBe(true);
  });

  it("JPEG: extended XMP parts are rewritten as one packet, each part at its length", async () => {
    const packet = Buffer.from(PRIVATE_XMP.replace(/<\?xpacket[^>]*>/g, ""), "utf8");
    const parts = extendedXmpBodies(packet, 3);
    const jpeg = withSegments(await photo().jpeg().toBuffer(), ...parts.map((p) => jpegSegment(0xe1, p)));
    const result = strip(jpeg, "jpeg")!;
    expect(result.removed).toContain("XMP drone-dji:GpsLatitude (extended)");
    const header = 35 + 40;
    const rebuilt = Buffer.concat(
      jpegSegments(result.bytes)
        .filter(([m]) => m === 0xe1)
        .map(([, body]) => body.subarray(header)),
    );
    expect(rebuilt.length).toBe(packet.length);
    expectPrivateXmpCleaned(rebuilt.toString("utf8"));
  });

  it("JPEG: a secondary image listed by MPF (a gain map) loses its GPS too", async () => {
    const corpus = `${__dirname}/../../../../shared/fixtures/corpus/sharp/gain-map.jpg`;
    const original = await sharp(corpus).metadata();
    expect(original.format).toBe("jpeg");
    const { readFileSync } = await import("node:fs");
    const file = readFileSync(corpus);
    // Put an EXIF block with GPS right after the secondary image's SOI: its MPF offset stays valid
    // once the primary's MPF entry is moved by the same number of bytes, so the entry is rewritten.
    const gps = jpegSegment(0xe1, await exifSegmentBody(GPS_EXIF));
    const mpf = jpegSegments(file).find(([m, b]) => m === 0xe2 && b.toString("latin1", 0, 4) === "MPF\0")![1];
    const mpfTiff = mpf.byteOffset - file.byteOffset + 4;
    const le = file.toString("latin1", mpfTiff, mpfTiff + 2) === "II";
    const read32 = (at: number) => (le ? file.readUInt32LE(at) : file.readUInt32BE(at));
    const ifd = mpfTiff + read32(mpfTiff + 4);
    const count = le ? file.readUInt16LE(ifd) : file.readUInt16BE(ifd);
    let entries = -1;
    for (let i = 0; i < count; i++) {
      const at = ifd + 2 + i * 12;
      if ((le ? file.readUInt16LE(at) : file.readUInt16BE(at)) === 0xb002) entries = mpfTiff + read32(at + 8);
    }
    const secondary = mpfTiff + read32(entries + 16 + 8);
    expect(file.readUInt16BE(secondary)).toBe(0xffd8);
    const withGps = Buffer.concat([file.subarray(0, secondary + 2), gps, file.subarray(secondary + 2)]);
    const result = strip(withGps, "jpeg")!;
    expect(result.removed).toEqual([
      "JPEG MPF image 2 EXIF GPS IFD",
      "JPEG MPF image 2 EXIF BodySerialNumber",
      "JPEG MPF image 2 EXIF LensSerialNumber",
    ]);
    const secondaryExif = exifBlocks(result.bytes.subarray(secondary));
    expect(secondaryExif.map((e) => e.GPSInfo ?? null)).toEqual([null]);
  });

  it("PNG: eXIf, the XMP iTXt chunk and ImageMagick's raw profiles lose the position; IDAT stays", async () => {
    const png = await photo().withExif(GPS_EXIF).withXmp(PRIVATE_XMP).png().toBuffer();
    const exifBody = await exifSegmentBody(GPS_EXIF);
    const profile = zlib.deflateSync(rawProfileText("exif", exifBody));
    const iptcProfile = rawProfileText("iptc", photoshopIptc(iptcDatasets([[90, "Paris"]])));
    const withProfiles = withPngChunks(
      png,
      pngChunk("zTXt", Buffer.concat([Buffer.from("Raw profile type exif\0\0", "latin1"), profile])),
      pngChunk("tEXt", Buffer.concat([Buffer.from("Raw profile type iptc\0", "latin1"), iptcProfile])),
    );
    const result = strip(withProfiles, "png")!;
    expect(result.removed).toEqual(
      expect.arrayContaining([
        "PNG eXIf GPS IFD",
        "PNG raw profile EXIF GPS IFD",
        "IPTC 2:90 City",
        "XMP drone-dji:GpsLatitude",
      ]),
    );
    const chunks = pngChunks(result.bytes);
    const idat = (p: Buffer) =>
      Buffer.concat(
        pngChunks(p)
          .filter(([t]) => t === "IDAT")
          .map(([, d]) => d),
      );
    expect(idat(result.bytes).equals(idat(withProfiles))).toBe(true);
    expect(exifReader(chunks.find(([t]) => t === "eXIf")![1]).GPSInfo ?? null).toBeNull();
    const ztxt = chunks.find(([t]) => t === "zTXt")![1];
    const hex = zlib.inflateSync(ztxt.subarray(23)).toString("latin1").split("\n").slice(3).join("");
    expect(exifReader(Buffer.from(hex, "hex")).GPSInfo ?? null).toBeNull();
    expect(chunks.find(([t]) => t === "tEXt")![1].toString("latin1")).not.toContain(
      Buffer.from("Paris").toString("hex"),
    );
    expectPrivateXmpCleaned((await sharp(result.bytes).metadata()).xmp!.toString("utf8"));
    // Every chunk's CRC is right: libvips decodes it with failOn error.
    expect((await sharp(result.bytes, { failOn: "error" }).raw().toBuffer()).equals(await pixels(png))).toBe(true);
  });

  it("WebP: the EXIF and XMP chunks lose the position in place; the VP8 data and the length stay", async () => {
    const webp = await photo().withExif(GPS_EXIF).withXmp(PRIVATE_XMP).webp({ lossless: true }).toBuffer();
    const result = strip(webp, "webp")!;
    expect(result.bytes.length).toBe(webp.length);
    const meta = await sharp(result.bytes).metadata();
    expect(exifReader(meta.exif!).GPSInfo ?? null).toBeNull();
    expectPrivateXmpCleaned(meta.xmp!.toString("utf8"));
    expect((await pixels(result.bytes)).equals(await pixels(webp))).toBe(true);
  });

  it("AVIF (HEIF): the Exif item and the XMP mime item lose the position in place", async () => {
    const avif = await photo().withExif(GPS_EXIF).withXmp(PRIVATE_XMP).avif({ lossless: true }).toBuffer();
    const result = strip(avif, "heif")!;
    expect(result.bytes.length).toBe(avif.length);
    const meta = await sharp(result.bytes).metadata();
    expect(exifReader(meta.exif!).GPSInfo ?? null).toBeNull();
    expect(exifReader(meta.exif!).Photo?.BodySerialNumber).toBeUndefined();
    expectPrivateXmpCleaned(meta.xmp!.toString("utf8"));
    expect((await pixels(result.bytes)).equals(await pixels(avif))).toBe(true);
  });

  it("TIFF: the GPS IFD and CameraSerialNumber in IFD0 go although libvips reports no EXIF", async () => {
    const tiff = await tiffWithGps();
    expect((await sharp(tiff).metadata()).exif).toBeUndefined();
    expect(tiffIfd0Tags(tiff)).toEqual(expect.arrayContaining([34853, 37500, 50735]));
    const result = strip(tiff, "tiff")!;
    expect(result.removed).toEqual(["TIFF GPS IFD", "TIFF MakerNote", "TIFF CameraSerialNumber"]);
    expect(result.bytes.length).toBe(tiff.length);
    expect(tiffIfd0Tags(result.bytes)).toEqual(tiffIfd0Tags(tiff).filter((t) => ![34853, 37500, 50735].includes(t)));
    expect(result.bytes.includes(Buffer.from("DNG-SERIAL-9"))).toBe(false);
    expect(result.bytes.includes(Buffer.from("MAKER-SN-55"))).toBe(false);
    expect((await pixels(result.bytes)).equals(await pixels(tiff))).toBe(true);
  });

  it("camera RAW (TIFF-based): GPS and serial numbers go, the maker notes its decoders need stay", async () => {
    const raw = await tiffWithGps();
    const result = strip(raw, "camera-raw")!;
    expect(result.removed).toEqual(["RAW GPS IFD", "RAW CameraSerialNumber"]);
    expect(tiffIfd0Tags(result.bytes)).toContain(37500);
    expect(result.bytes.includes(Buffer.from("MAKER-SN-55"))).toBe(true);
  });

  it("GIF: the XMP application extension loses the position at its length", async () => {
    const gif = await gifWithXmp(PRIVATE_XMP);
    const result = strip(gif, "gif")!;
    expect(result.bytes.length).toBe(gif.length);
    const text = result.bytes.toString("utf8");
    expectPrivateXmpCleaned(text.slice(text.indexOf("<?xpacket"), text.indexOf('<?xpacket end="w"?>') + 19));
    expect((await pixels(result.bytes)).equals(await pixels(gif))).toBe(true);
  });

  it("leaves a file with nothing private alone, and refuses a malformed XMP packet that must be checked", async () => {
    const plain = await photo()
      .withExif({ IFD0: { Copyright: "Jane" } })
      .jpeg()
      .toBuffer();
    expect(strip(plain, "jpeg")).toBeUndefined();
    const broken = withSegments(
      plain,
      jpegSegment(
        0xe1,
        Buffer.from('http://ns.adobe.com/xap/1.0/\0<x:xmpmeta><rdf:RDF exif:GPSLatitude="1"></x:xmpmeta>', "latin1"),
      ),
    );
    expect(() => withoutPrivateMetadata(broken, "jpeg", PRIVATE)).toThrow(MalformedMetadataError);
  });
});
