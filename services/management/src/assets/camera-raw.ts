import exifReader from "exif-reader";
import type { CameraRawFormat } from "@media-platform/contracts";
import { cr3Contents } from "./metadata-containers/isobmff";
import { EXIF_PREFIX, embeddedJpegs } from "./metadata-containers/tiff";

/**
 * What a camera RAW file holds for the platform, read in place with the container walkers of
 * metadata-containers/ (no raw decoder): its type, every embedded JPEG (the caller keeps the
 * largest that decodes) and the camera's tags as exif-reader reads them.
 *
 * - TIFF-based files (DNG, CR2, NEF, ARW, ORF, RW2): the JPEGs IFD0, IFD1, the SubIFDs and the
 *   Exif IFD locate (JPEGInterchangeFormat, a JPEG-coded strip, RW2's JpgFromRaw), and the tags of
 *   IFD0 and its Exif and GPS IFDs. Previews kept only in maker notes (Olympus, Pentax) are not
 *   looked for.
 * - CR3: the PRVW box in its preview uuid box and the THMB box in moov's Canon box; the tags of
 *   CMT1 (IFD0), CMT2 (Exif IFD) and CMT4 (GPS IFD).
 * - RAF: the JPEG its header locates, and the thumbnail in that JPEG's EXIF; the tags of that EXIF.
 */

export type CameraTags = Pick<exifReader.Exif, "Image" | "Photo" | "GPSInfo">;

export interface CameraRawContents {
  format: CameraRawFormat;
  /** Embedded JPEGs (views of the file), unchecked. */
  previews: Buffer[];
  tags: CameraTags;
}

const RAF_MAGIC = "FUJIFILMCCD-RAW";
const TIFF_MAGIC = 42;

const startsWith = (bytes: Buffer, text: string, at = 0): boolean =>
  bytes.length >= at + text.length && bytes.toString("latin1", at, at + text.length) === text;

/** exif-reader's tags of a TIFF structure, or undefined when it cannot read them. */
function readTags(tiff: Buffer): exifReader.Exif | undefined {
  try {
    return exifReader(tiff);
  } catch {
    return undefined;
  }
}

/**
 * A TIFF-based RAW's tags. ORF and RW2 carry their own magic number where TIFF has 42, which
 * exif-reader refuses: it reads a copy of the header with 42 put back (the rest is the file itself).
 */
function tiffRawTags(file: Buffer): exifReader.Exif | undefined {
  const le = file[0] === 0x49;
  const magic = le ? file.readUInt16LE(2) : file.readUInt16BE(2);
  if (magic === TIFF_MAGIC) return readTags(file);
  const patched = Buffer.from(file);
  if (le) patched.writeUInt16LE(TIFF_MAGIC, 2);
  else patched.writeUInt16BE(TIFF_MAGIC, 2);
  return readTags(patched);
}

/**
 * The type of a TIFF-based RAW, from its signature and IFD0; NEF and ARW are TIFF files of their
 * maker that hold sensor data. Undefined for a plain TIFF.
 */
function tiffRawFormat(
  file: Buffer,
  image: exifReader.Exif["Image"],
  sensorData: boolean,
): CameraRawFormat | undefined {
  if (startsWith(file, "IIU\0")) return "rw2";
  if (startsWith(file, "IIRO") || startsWith(file, "IIRS") || startsWith(file, "MMOR")) return "orf";
  if (startsWith(file, "CR", 8)) return "cr2";
  if (image && "DNGVersion" in image) return "dng";
  if (!sensorData) return undefined;
  const make = typeof image?.Make === "string" ? image.Make.toUpperCase() : "";
  if (make.startsWith("NIKON")) return "nef";
  if (make.startsWith("SONY")) return "arw";
  return undefined;
}

/** The TIFF block of a JPEG's first APP1 EXIF segment. */
function jpegExif(jpeg: Buffer): Buffer | undefined {
  let at = 2;
  while (at + 4 <= jpeg.length && jpeg[at] === 0xff) {
    const marker = jpeg[at + 1]!;
    if (marker === 0xda || marker === 0xd9) return undefined;
    const length = jpeg.readUInt16BE(at + 2);
    if (length < 2) return undefined;
    const body = jpeg.subarray(at + 4, Math.min(jpeg.length, at + 2 + length));
    if (marker === 0xe1 && body.subarray(0, EXIF_PREFIX.length).equals(EXIF_PREFIX))
      return body.subarray(EXIF_PREFIX.length);
    at += 2 + length;
  }
  return undefined;
}

/** EXIF's numbered GPS tags (a CR3's CMT4 is read as a root IFD, which exif-reader names as IFD0). */
const GPS_TAG_NAMES: Record<number, string> = {
  1: "GPSLatitudeRef",
  2: "GPSLatitude",
  3: "GPSLongitudeRef",
  4: "GPSLongitude",
  5: "GPSAltitudeRef",
  6: "GPSAltitude",
};
/** Exif IFD tags exif-reader does not name when they sit in a root IFD (CR3's CMT2). */
const PHOTO_TAG_NAMES: Record<number, string> = { 42035: "LensMake", 42036: "LensModel", 36868: "DateTimeDigitized" };

function renamed(tags: Record<string, unknown> | undefined, names: Record<number, string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(tags ?? {})) out[names[Number(key)] ?? key] = value;
  return out;
}

/** The contents of a camera RAW file, or undefined when it is none (a TIFF from a maker's software). */
export function cameraRawContents(file: Buffer): CameraRawContents | undefined {
  if (startsWith(file, RAF_MAGIC)) {
    if (file.length < 92) return undefined;
    const start = file.readUInt32BE(84);
    const jpeg = file.subarray(start, Math.min(file.length, start + file.readUInt32BE(88)));
    if (jpeg[0] !== 0xff || jpeg[1] !== 0xd8) return { format: "raf", previews: [], tags: {} };
    const exif = jpegExif(jpeg);
    const thumbnails = exif ? safely(() => embeddedJpegs(exif)).jpegs : [];
    return { format: "raf", previews: [jpeg, ...thumbnails], tags: (exif && readTags(exif)) ?? {} };
  }
  if (startsWith(file, "ftypcrx ", 4)) {
    const { previews, cmt } = cr3Contents(file);
    const tags: CameraTags = {
      Image: cmt.CMT1 && readTags(cmt.CMT1)?.Image,
      Photo: cmt.CMT2 && (renamed(readTags(cmt.CMT2)?.Image, PHOTO_TAG_NAMES) as CameraTags["Photo"]),
      GPSInfo: cmt.CMT4 && (renamed(readTags(cmt.CMT4)?.Image, GPS_TAG_NAMES) as CameraTags["GPSInfo"]),
    };
    return { format: "cr3", previews, tags };
  }
  if (!(startsWith(file, "II") || startsWith(file, "MM")) || file.length < 8) return undefined;
  const tags = tiffRawTags(file);
  const { jpegs, sensorData } = safely(() => embeddedJpegs(file));
  const format = tiffRawFormat(file, tags?.Image, sensorData);
  if (!format) return undefined;
  return { format, previews: jpegs, tags: tags ?? {} };
}

/** A walk that fails on a malformed file finds nothing rather than refusing it: the 415 names what was found. */
function safely(find: () => ReturnType<typeof embeddedJpegs>): ReturnType<typeof embeddedJpegs> {
  try {
    return find();
  } catch {
    return { jpegs: [], sensorData: false };
  }
}
