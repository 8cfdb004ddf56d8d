import exifReader from "exif-reader";
import sharp from "sharp";
import type { AssetExif } from "@media-platform/contracts";
import { Prisma } from "../generated/prisma/client";
import { nativeRequire } from "../native-require";

// thumbhash is ESM-only: loaded through Node's require(esm), outside jest's CommonJS sandbox.
type ThumbHash = typeof import("thumbhash", { with: { "resolution-mode": "import" } });
let thumbhashModule: ThumbHash | undefined;
const thumbhash = (): ThumbHash => (thumbhashModule ??= nativeRequire<ThumbHash>("thumbhash"));

/**
 * Side of the thumbnail the placeholder and the dominant colour are computed from. ThumbHash takes
 * at most 100x100 and keeps only the lowest frequencies (<= 7 terms per axis): from 32 px the decoded
 * placeholders of the fixture photos differ from the 100 px ones by at most 3.6/255 on average,
 * while its JavaScript DCT runs ~10x faster (bench/upload-metadata.ts).
 */
const PLACEHOLDER_MAX_SIDE = 32;

/** Placeholder and metadata stored with an asset (all computed from the original's bytes). */
export interface ImageMetadata {
  /** ThumbHash of the (auto-oriented) first frame, base64. */
  placeholder: string;
  /** The placeholder decoded to a PNG data URL (~1-2.5 KB). */
  placeholderDataUrl: string;
  /** `#rrggbb`, sharp's dominant colour of the placeholder thumbnail. */
  dominantColor: string;
  hasAlpha: boolean;
  animated: boolean;
  pages: number;
  /** Sum of the frame delays (ms) of an animated original; null for a still image. */
  durationMs: number | null;
  /** Selected EXIF fields; null when the image carries no EXIF block. */
  exif: AssetExif | null;
}

export interface MetadataOptions {
  /** KEEP_GPS: keep the GPS position in `exif.gps` (left out by default). */
  keepGps: boolean;
}

/**
 * The first frame's size as displayed: EXIF orientations 5-8 turn the image a quarter turn, so
 * width and height swap. The blob's header (contracts' OriginalHeader) keeps the stored size beside
 * the oriented one, because media plans its decode from both.
 */
export function displayedSize(meta: sharp.Metadata): { width: number; height: number } {
  const width = meta.width ?? 0;
  const height = meta.pageHeight ?? meta.height ?? 0;
  return (meta.orientation ?? 1) >= 5 ? { width: height, height: width } : { width, height };
}

const hex = (n: number) => n.toString(16).padStart(2, "0");

/**
 * sharp's stats().dominant algorithm (the fullest bin of a 16x16x16 RGB histogram, reported as the
 * bin's centre) over the thumbnail's RGBA pixels, leaving out transparent ones (alpha < 128) so a
 * logo's background does not win. Done here because stats() costs a fixed ~10 ms per call
 * (bench/upload-metadata.ts), more than the rest of the metadata work together.
 */
function dominantColor(rgba: Buffer): string {
  const bins = new Uint32Array(4096);
  let best = -1;
  let bestCount = 0;
  for (const opaqueOnly of [true, false]) {
    for (let i = 0; i < rgba.length; i += 4) {
      if (opaqueOnly && rgba[i + 3]! < 128) continue;
      const bin = ((rgba[i]! >> 4) << 8) | ((rgba[i + 1]! >> 4) << 4) | (rgba[i + 2]! >> 4);
      if (++bins[bin]! > bestCount) [best, bestCount] = [bin, bins[bin]!];
    }
    // A fully transparent image: fall back to every pixel's colour.
    if (best >= 0) break;
  }
  return `#${hex(((best >> 8) << 4) | 8)}${hex((((best >> 4) & 15) << 4) | 8)}${hex(((best & 15) << 4) | 8)}`;
}

/**
 * Reads the metadata from the header already parsed (`meta`) and builds the placeholder from a
 * <=100x100 RGBA thumbnail of the first frame (sharp's shrink-on-load keeps this cheap).
 */
export async function extractImageMetadata(
  input: string | Buffer,
  meta: sharp.Metadata,
  limitInputPixels: number,
  options: MetadataOptions,
): Promise<ImageMetadata> {
  const { data, info } = await sharp(input, { limitInputPixels, failOn: "error" })
    .rotate()
    .resize(PLACEHOLDER_MAX_SIDE, PLACEHOLDER_MAX_SIDE, { fit: "inside", withoutEnlargement: true })
    .ensureAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  const hash = thumbhash().rgbaToThumbHash(info.width, info.height, data);
  // thumbHashToDataURL writes an uncompressed PNG (~6 KB as a data URL); sharp's is ~3x smaller.
  const decoded = thumbhash().thumbHashToRGBA(hash);
  const png = await sharp(Buffer.from(decoded.rgba), { raw: { width: decoded.w, height: decoded.h, channels: 4 } })
    .png({ compressionLevel: 9, adaptiveFiltering: true })
    .toBuffer();
  const pages = meta.pages ?? 1;
  return {
    placeholder: Buffer.from(hash).toString("base64"),
    placeholderDataUrl: `data:image/png;base64,${png.toString("base64")}`,
    dominantColor: dominantColor(data),
    hasAlpha: meta.hasAlpha === true,
    animated: pages > 1,
    pages,
    durationMs: pages > 1 && meta.delay ? meta.delay.reduce((sum, ms) => sum + ms, 0) : null,
    exif: meta.exif ? readExif(meta.exif, options) : null,
  };
}

/** An EXIF string without its NUL bytes (padding, or inside: Postgres text and jsonb cannot hold \0). */
const text = (v: unknown): string | null => {
  const clean = typeof v === "string" ? v.replace(/\0/g, "").trim() : "";
  return clean ? clean : null;
};
const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);
const date = (v: unknown): string | null => (v instanceof Date && !Number.isNaN(v.getTime()) ? v.toISOString() : null);

/** GPS rationals (degrees, minutes, seconds) + hemisphere -> signed decimal degrees. */
function degrees(dms: unknown, ref: unknown): number | null {
  if (!Array.isArray(dms) || dms.length !== 3 || !dms.every((n) => typeof n === "number" && Number.isFinite(n)))
    return null;
  const [d, m, s] = dms as number[];
  const value = d + m / 60 + s / 3600;
  return Number((ref === "S" || ref === "W" ? -value : value).toFixed(7));
}

/**
 * The EXIF fields we expose. exif-reader returns DateTime* as Dates read as UTC (EXIF has no
 * zone unless OffsetTime* is set), so `takenAt` is the camera's wall-clock time in ISO form.
 * A malformed EXIF block yields null rather than refusing the upload.
 */
export function readExif(buffer: Buffer, options: MetadataOptions): AssetExif | null {
  let tags: exifReader.Exif;
  try {
    tags = exifReader(buffer);
  } catch {
    return null;
  }
  return exifFields(tags, options);
}

/** The exposed fields of tags exif-reader read (from one EXIF block, or put together from a camera RAW's). */
export function exifFields(
  tags: Pick<exifReader.Exif, "Image" | "Photo" | "GPSInfo">,
  options: MetadataOptions,
): AssetExif {
  const image = tags.Image ?? {};
  const photo = tags.Photo ?? {};
  const gpsInfo = tags.GPSInfo ?? {};
  const iso = photo.ISOSpeedRatings as unknown;
  const exif: AssetExif = {
    make: text(image.Make),
    model: text(image.Model),
    lens: text(photo.LensModel) ?? text(photo.LensMake),
    takenAt: date(photo.DateTimeOriginal) ?? date(photo.DateTimeDigitized) ?? date(image.DateTime),
    orientation: num(image.Orientation),
    exposureTime: num(photo.ExposureTime),
    fNumber: num(photo.FNumber),
    iso: num(Array.isArray(iso) ? iso[0] : iso) ?? num(photo.PhotographicSensitivity),
  };
  if (options.keepGps) {
    const latitude = degrees(gpsInfo.GPSLatitude, gpsInfo.GPSLatitudeRef);
    const longitude = degrees(gpsInfo.GPSLongitude, gpsInfo.GPSLongitudeRef);
    if (latitude !== null && longitude !== null) {
      const altitude = num(gpsInfo.GPSAltitude);
      exif.gps = {
        latitude,
        longitude,
        altitude: altitude === null ? null : gpsInfo.GPSAltitudeRef === 1 ? -altitude : altitude,
      };
    }
  }
  return exif;
}

/** The same metadata from bytes already stored (version restore, backfill). */
export async function imageMetadataFromBytes(
  bytes: Buffer,
  limitInputPixels: number,
  options: MetadataOptions,
): Promise<ImageMetadata> {
  const meta = await sharp(bytes, { limitInputPixels, failOn: "error" }).metadata();
  return extractImageMetadata(bytes, meta, limitInputPixels, options);
}

/** ImageMetadata -> the asset row's columns (no EXIF block = SQL NULL). */
export function metadataColumns(m: ImageMetadata) {
  return {
    placeholder: m.placeholder,
    placeholderDataUrl: m.placeholderDataUrl,
    dominantColor: m.dominantColor,
    hasAlpha: m.hasAlpha,
    animated: m.animated,
    pages: m.pages,
    durationMs: m.durationMs,
    exif: m.exif === null ? Prisma.DbNull : (m.exif as Prisma.InputJsonObject),
  };
}
