import exifReader from "exif-reader";
import sharp from "sharp";
import { encodeChunk } from "../../src/assets/metadata-containers/png";

/**
 * Files carrying private metadata, made from sharp's output plus the metadata blocks sharp does
 * not write itself (a second EXIF block, IPTC, extended XMP, a TIFF's GPS IFD, a GIF's XMP, PNG
 * raw profiles), each assembled by the container's own framing rules.
 */

export const GPS_EXIF = {
  IFD0: { Make: "Acme", Model: "Phone 9", Copyright: "Jane Doe" },
  IFD2: { BodySerialNumber: "SN-0042", LensSerialNumber: "LENS-7" },
  IFD3: {
    GPSLatitudeRef: "N",
    GPSLatitude: "48/1 51/1 2400/100",
    GPSLongitudeRef: "E",
    GPSLongitude: "2/1 21/1 300/100",
  },
};

/** An XMP packet with the position in every spelling writers use, location fields and kept ones. */
export const PRIVATE_XMP = `<?xpacket begin="\uFEFF" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/">
 <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <rdf:Description rdf:about=""
    xmlns:exif="http://ns.adobe.com/exif/1.0/"
    xmlns:aux="http://ns.adobe.com/exif/1.0/aux/"
    xmlns:dc="http://purl.org/dc/elements/1.1/"
    xmlns:photoshop="http://ns.adobe.com/photoshop/1.0/"
    xmlns:Iptc4xmpCore="http://iptc.org/std/Iptc4xmpCore/1.0/xmlns/"
    xmlns:Iptc4xmpExt="http://iptc.org/std/Iptc4xmpExt/2008-02-29/"
    xmlns:drone-dji="http://www.dji.com/drone-dji/1.0/"
    exif:GPSLatitude="48,51.4N"
    drone-dji:GpsLatitude="+48.857"
    drone-dji:GpsLongtitude="+2.351"
    drone-dji:AbsoluteAltitude="+35.2"
    drone-dji:RelativeAltitude="+20.1"
    aux:SerialNumber="CAM-123"
    photoshop:City="Paris"
    photoshop:Headline="Kept headline">
   <exif:GPSDestLatitude>48,51.5N</exif:GPSDestLatitude>
   <exif:GpsLongitude>2,21.1E</exif:GpsLongitude>
   <Iptc4xmpExt:LocationShown>
    <rdf:Bag><rdf:li Iptc4xmpExt:City="Paris" Iptc4xmpExt:CountryName="France"/></rdf:Bag>
   </Iptc4xmpExt:LocationShown>
   <Iptc4xmpCore:Location>Montmartre</Iptc4xmpCore:Location>
   <Iptc4xmpCore:CreatorContactInfo Iptc4xmpCore:CiAdrCity="Lyon"/>
   <dc:title><rdf:Alt><rdf:li xml:lang="x-default">Kept title</rdf:li></rdf:Alt></dc:title>
  </rdf:Description>
 </rdf:RDF>
</x:xmpmeta>
${" ".repeat(200)}
<?xpacket end="w"?>`;

/** What of PRIVATE_XMP must be gone, and what must stay, by default. */
export const XMP_GONE = [
  "GPSLatitude",
  "GpsLatitude",
  "GpsLongtitude",
  "AbsoluteAltitude",
  "GPSDestLatitude",
  "GpsLongitude",
  "SerialNumber",
  "photoshop:City",
  "LocationShown",
  "Montmartre",
];
export const XMP_KEPT = ["RelativeAltitude", "Kept headline", "Kept title", "CiAdrCity"];

export const photo = (width = 96, height = 64) =>
  sharp({ create: { width, height, channels: 3, background: { r: 200, g: 120, b: 40 } } });

/** A JPEG segment: marker, length, body. */
export function jpegSegment(marker: number, body: Buffer): Buffer {
  const head = Buffer.from([0xff, marker, 0, 0]);
  head.writeUInt16BE(body.length + 2, 2);
  return Buffer.concat([head, body]);
}

/** The JPEG with `segments` inserted right after its SOI. */
export const withSegments = (jpeg: Buffer, ...segments: Buffer[]): Buffer =>
  Buffer.concat([jpeg.subarray(0, 2), ...segments, jpeg.subarray(2)]);

/** The JPEG's segments before the scan: [marker, body]. */
export function jpegSegments(jpeg: Buffer): Array<[number, Buffer]> {
  const out: Array<[number, Buffer]> = [];
  let at = 2;
  while (at + 4 <= jpeg.length && jpeg[at + 1] !== 0xda) {
    const length = jpeg.readUInt16BE(at + 2);
    out.push([jpeg[at + 1]!, jpeg.subarray(at + 4, at + 2 + length)]);
    at += 2 + length;
  }
  return out;
}

/** From the first scan to the end: the entropy-coded image data. */
export function scanData(jpeg: Buffer): Buffer {
  let at = 2;
  while (jpeg[at + 1] !== 0xda) at += 2 + jpeg.readUInt16BE(at + 2);
  return jpeg.subarray(at);
}

/** Every APP1 EXIF block of a JPEG, parsed. */
export const exifBlocks = (jpeg: Buffer) =>
  jpegSegments(jpeg)
    .filter(([marker, body]) => marker === 0xe1 && body.toString("latin1", 0, 6) === "Exif\0\0")
    .map(([, body]) => exifReader(body));

/** The APP1 EXIF body sharp writes for `exif`. */
export async function exifSegmentBody(exif: typeof GPS_EXIF | Record<string, Record<string, string>>): Promise<Buffer> {
  const jpeg = await photo(8, 8).withExif(exif).jpeg().toBuffer();
  return jpegSegments(jpeg).find(([m, b]) => m === 0xe1 && b.toString("latin1", 0, 4) === "Exif")![1];
}

/** IPTC-IIM datasets of the application record. */
export function iptcDatasets(datasets: Array<[number, string]>): Buffer {
  return Buffer.concat(
    datasets.map(([id, value]) => {
      const data = Buffer.from(value, "utf8");
      const head = Buffer.from([0x1c, 2, id, 0, 0]);
      head.writeUInt16BE(data.length, 3);
      return Buffer.concat([head, data]);
    }),
  );
}

/** A Photoshop image resource block holding `iptc` (APP13's body after its signature). */
export function photoshopIptc(iptc: Buffer): Buffer {
  const head = Buffer.alloc(12);
  head.write("8BIM", 0, "latin1");
  head.writeUInt16BE(0x0404, 4);
  head.writeUInt32BE(iptc.length, 8);
  return Buffer.concat([head, iptc, Buffer.alloc(iptc.length % 2)]);
}

/** Extended XMP parts (APP1 bodies) carrying `packet`, split into `parts` pieces. */
export function extendedXmpBodies(packet: Buffer, parts: number): Buffer[] {
  const guid = "0123456789ABCDEF0123456789ABCDEF";
  const size = Math.ceil(packet.length / parts);
  return Array.from({ length: parts }, (_, i) => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(packet.length, 0);
    head.writeUInt32BE(i * size, 4);
    return Buffer.concat([
      Buffer.from("http://ns.adobe.com/xmp/extension/\0", "latin1"),
      Buffer.from(guid, "latin1"),
      head,
      packet.subarray(i * size, (i + 1) * size),
    ]);
  });
}

/** A PNG chunk with its CRC. */
export const pngChunk = encodeChunk;

/** The PNG with `chunks` inserted after IHDR. */
export const withPngChunks = (png: Buffer, ...chunks: Buffer[]): Buffer =>
  Buffer.concat([png.subarray(0, 33), ...chunks, png.subarray(33)]);

/** The PNG's chunks: [type, data]. */
export function pngChunks(png: Buffer): Array<[string, Buffer]> {
  const out: Array<[string, Buffer]> = [];
  for (let at = 8; at + 12 <= png.length;) {
    const length = png.readUInt32BE(at);
    out.push([png.toString("latin1", at + 4, at + 8), png.subarray(at + 8, at + 8 + length)]);
    at += 12 + length;
  }
  return out;
}

/** ImageMagick's "Raw profile type <name>" text: the block in hexadecimal, 36 bytes a line. */
export function rawProfileText(name: string, block: Buffer): Buffer {
  const hex = block
    .toString("hex")
    .match(/.{1,72}/g)!
    .join("\n");
  return Buffer.from(`\n${name}\n${String(block.length).padStart(8)}\n${hex}\n`, "latin1");
}

/**
 * A little-endian TIFF with a GPS IFD, a serial number (DNG's CameraSerialNumber) and a maker
 * note in IFD0, which libvips does not report as EXIF: IFD0 is copied to the end with the
 * two entries added and the header pointed at it.
 */
export async function tiffWithGps(): Promise<Buffer> {
  const tiff = await photo().tiff({ compression: "lzw" }).toBuffer();
  if (tiff.toString("latin1", 0, 2) !== "II") throw new Error("expected a little-endian TIFF");
  const ifd0 = tiff.readUInt32LE(4);
  const count = tiff.readUInt16LE(ifd0);
  const entries = Array.from({ length: count }, (_, i) => tiff.subarray(ifd0 + 2 + i * 12, ifd0 + 14 + i * 12));
  const gpsAt = tiff.length + (tiff.length % 2);
  // GPS IFD: GPSLatitudeRef "N", GPSLatitude 48/1 51/1 24/1 (3 rationals, out of line).
  const gps = Buffer.alloc(2 + 2 * 12 + 4 + 24);
  gps.writeUInt16LE(2, 0);
  entry(1, 2, 2, Buffer.from("N\0\0\0", "latin1").readUInt32LE(0)).copy(gps, 2);
  entry(2, 5, 3, gpsAt + 30).copy(gps, 14);
  [48, 1, 51, 1, 24, 1].forEach((v, i) => gps.writeUInt32LE(v, 30 + i * 4));
  const serial = Buffer.from("DNG-SERIAL-9\0", "latin1");
  const makerNote = Buffer.from("MAKER-SN-55\0", "latin1");
  const serialAt = gpsAt + gps.length;
  const makerNoteAt = serialAt + serial.length;
  const newIfdAt = makerNoteAt + makerNote.length + ((makerNoteAt + makerNote.length) % 2);
  const added = [
    entry(34853, 4, 1, gpsAt),
    entry(50735, 2, serial.length, serialAt),
    entry(37500, 7, makerNote.length, makerNoteAt),
  ];
  const all = [...entries, ...added].sort((a, b) => a.readUInt16LE(0) - b.readUInt16LE(0));
  const ifd = Buffer.alloc(2 + all.length * 12 + 4);
  ifd.writeUInt16LE(all.length, 0);
  all.forEach((e, i) => e.copy(ifd, 2 + i * 12));
  const out = Buffer.concat([
    tiff,
    Buffer.alloc(gpsAt - tiff.length),
    gps,
    serial,
    makerNote,
    Buffer.alloc(newIfdAt - makerNoteAt - makerNote.length),
    ifd,
  ]);
  out.writeUInt32LE(newIfdAt, 4);
  return out;
}

function entry(tag: number, type: number, count: number, value: number): Buffer {
  const e = Buffer.alloc(12);
  e.writeUInt16LE(tag, 0);
  e.writeUInt16LE(type, 2);
  e.writeUInt32LE(count, 4);
  e.writeUInt32LE(value, 8);
  return e;
}

/** A GIF with an XMP application extension (packet, then the 258-byte magic trailer) before its image. */
export async function gifWithXmp(xmp: string): Promise<Buffer> {
  const gif = await photo(16, 16).gif().toBuffer();
  const packed = gif[10]!;
  const headerEnd = 13 + (packed & 0x80 ? 3 << ((packed & 7) + 1) : 0);
  const trailer = Buffer.from([0x01, ...Array.from({ length: 256 }, (_, i) => 255 - i), 0x00]);
  const extension = Buffer.concat([
    Buffer.from([0x21, 0xff]),
    Buffer.from("\x0bXMP DataXMP", "latin1"),
    Buffer.from(xmp, "utf8"),
    trailer,
  ]);
  return Buffer.concat([gif.subarray(0, headerEnd), extension, gif.subarray(headerEnd)]);
}

/** The TIFF IFD0 entries' tags (little-endian file), and whether it points to a GPS IFD. */
export function tiffIfd0Tags(tiff: Buffer): number[] {
  const at = tiff.readUInt32LE(4);
  return Array.from({ length: tiff.readUInt16LE(at) }, (_, i) => tiff.readUInt16LE(at + 2 + i * 12));
}

/**
 * A little-endian TIFF-based camera RAW made up of what the preview finder reads: IFD0 with Make,
 * Model, Orientation, SubIFDs holding `preview` as one JPEG-coded strip (Compression 7, as DNG
 * writes its previews) and the sensor data's CFA directory, a GPS IFD (48°51'24" N 2°21' E) and a BodySerialNumber in an Exif IFD, and IFD1
 * with `thumbnail` as JPEGInterchangeFormat. With `magic` 0x55 (Panasonic RW2) the preview is
 * IFD0's JpgFromRaw entry instead.
 */
export function tiffCameraRaw(options: {
  make: string;
  model: string;
  orientation: number;
  preview: Buffer;
  thumbnail: Buffer;
  magic?: number;
  /** false: no CFA directory (a TIFF of a camera maker's software rather than a RAW). */
  sensorData?: boolean;
}): Buffer {
  const magic = options.magic ?? 42;
  const parts: Buffer[] = [];
  let end = 8;
  /** Appends `bytes` (word-aligned) and returns where they start. */
  const put = (bytes: Buffer): number => {
    const at = end;
    parts.push(bytes, Buffer.alloc(bytes.length % 2));
    end += bytes.length + (bytes.length % 2);
    return at;
  };
  const ascii = (text: string) => Buffer.from(`${text}\0`, "latin1");
  const ifd = (entries: Buffer[], next = 0): Buffer => {
    const sorted = [...entries].sort((a, b) => a.readUInt16LE(0) - b.readUInt16LE(0));
    const out = Buffer.alloc(2 + sorted.length * 12 + 4);
    out.writeUInt16LE(sorted.length, 0);
    sorted.forEach((e, i) => e.copy(out, 2 + i * 12));
    out.writeUInt32LE(next, 2 + sorted.length * 12);
    return out;
  };
  const short = (tag: number, value: number) => entry(tag, 3, 1, value);
  const makeAt = put(ascii(options.make));
  const modelAt = put(ascii(options.model));
  const previewAt = put(options.preview);
  const thumbnailAt = put(options.thumbnail);
  const rationals = (values: number[]) => {
    const out = Buffer.alloc(values.length * 4);
    values.forEach((v, i) => out.writeUInt32LE(v, i * 4));
    return out;
  };
  const latitudeAt = put(rationals([48, 1, 51, 1, 24, 1]));
  const longitudeAt = put(rationals([2, 1, 21, 1, 0, 1]));
  const ref = (letter: string) => Buffer.from(`${letter}\0\0\0`, "latin1").readUInt32LE(0);
  const gpsAt = put(
    ifd([entry(1, 2, 2, ref("N")), entry(2, 5, 3, latitudeAt), entry(3, 2, 2, ref("E")), entry(4, 5, 3, longitudeAt)]),
  );
  const serialAt = put(ascii("BODY-SN-4711"));
  const exifAt = put(ifd([entry(42033, 2, 13, serialAt)]));
  const ifd1At = put(ifd([short(259, 6), entry(513, 4, 1, thumbnailAt), entry(514, 4, 1, options.thumbnail.length)]));
  // The sensor data's directory: a CFA image (its strips left out), as NEF and DNG have one.
  const cfaAt = put(ifd([entry(254, 4, 1, 0), short(259, 1), short(262, 32803)]));
  const previewIfdAt = put(
    ifd([entry(254, 4, 1, 1), short(259, 7), entry(273, 4, 1, previewAt), entry(279, 4, 1, options.preview.length)]),
  );
  const subIfds = Buffer.alloc(8);
  subIfds.writeUInt32LE(previewIfdAt, 0);
  subIfds.writeUInt32LE(cfaAt, 4);
  const previewEntries =
    magic === 0x55
      ? [entry(46, 7, options.preview.length, previewAt)]
      : [
          entry(
            330,
            4,
            options.sensorData === false ? 1 : 2,
            options.sensorData === false ? previewIfdAt : put(subIfds),
          ),
        ];
  const ifd0At = put(
    ifd(
      [
        entry(271, 2, options.make.length + 1, makeAt),
        entry(272, 2, options.model.length + 1, modelAt),
        short(274, options.orientation),
        entry(34665, 4, 1, exifAt),
        entry(34853, 4, 1, gpsAt),
        ...previewEntries,
      ],
      ifd1At,
    ),
  );
  const header = Buffer.alloc(8);
  header.write("II", 0, "latin1");
  header.writeUInt16LE(magic, 2);
  header.writeUInt32LE(ifd0At, 4);
  return Buffer.concat([header, ...parts]);
}
