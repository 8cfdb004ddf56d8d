import exifReader from "exif-reader";
import sharp from "sharp";
import {
  ImagePixelLimitError,
  PDF_LIMITS,
  UndecodableImageError,
  UnsupportedImageError,
  type AssetExif,
  type CameraRawFormat,
} from "@media-platform/contracts";
import { formatTaskRefusal, formatWorkers } from "./format-workers";
import { cameraRawContents } from "./camera-raw";
import { exifFields, type MetadataOptions } from "./image-metadata";

/**
 * The upload formats libvips does not decode itself: HEIC (HEVC), camera RAW and PDF. HEIC and
 * PDF decoders run in worker threads (format-workers.ts), bounded in pixels before decoding and in
 * time; a camera RAW is read in process (camera-raw.ts: its embedded JPEGs and tags, found by
 * walking its container). HEIC and RAW give a rendering source: a JPEG made once here, stored beside the original
 * (blobs.ts), which every render reads instead of the original. A PDF is drawn by media itself
 * (its pages at any size); here it is checked against PDF_LIMITS and page 1 drawn small for the
 * placeholder and the perceptual hash.
 */

/** Quality of a rendering source: high enough that renditions from it match ones from the original. */
const SOURCE_QUALITY = 92;
/** Time limits of the decoders (a 12 MP HEIC decodes in 1.5-3.5 s). */
const HEIC_TIMEOUT_MS = 60_000;
const PDF_TIMEOUT_MS = 20_000;
/** An embedded JPEG smaller than this (longer side) is a stub, not a preview to render from. */
export const MIN_PREVIEW_SIDE = 160;
/** Side of the drawing of a PDF's page 1 that the placeholder and perceptual hash come from. */
const PDF_PREVIEW_SIDE = 256;

const timeoutAsUndecodable = (err: unknown): never =>
  formatTaskRefusal(err, (seconds) => `The file took longer than ${seconds} s to decode`);

// ---------------------------------------------------------------------------------------------
// Sniffing

const startsWith = (head: Buffer, text: string, at = 0): boolean =>
  head.length >= at + text.length && head.toString("latin1", at, at + text.length) === text;

/** A PDF: `%PDF-` within the first KiB (the specification lets a few bytes come before it). */
export const looksLikePdf = (head: Buffer): boolean => head.subarray(0, 1024).includes("%PDF-", 0, "latin1");

/**
 * Whether the bytes may be a camera RAW, from their signature: RAF, RW2, ORF and CR3 have their
 * own; CR2, NEF, ARW and DNG are TIFF files, told apart from a TIFF by their first directory
 * (a DNGVersion tag, a camera maker's name). camera-raw.ts then names the type.
 */
export function mayBeCameraRaw(head: Buffer): boolean {
  if (startsWith(head, "FUJIFILMCCD-RAW")) return true;
  if (startsWith(head, "IIU\0") || startsWith(head, "IIRO") || startsWith(head, "IIRS") || startsWith(head, "MMOR"))
    return true;
  if (startsWith(head, "ftypcrx ", 4)) return true;
  if (!(startsWith(head, "II*\0") || startsWith(head, "MM\0*"))) return false;
  if (startsWith(head, "CR", 8)) return true;
  try {
    const image = exifReader(head).Image ?? {};
    const make = typeof image.Make === "string" ? image.Make.toUpperCase() : "";
    return "DNGVersion" in image || /^(NIKON|SONY|CANON|OLYMPUS|OM DIGITAL|PANASONIC|FUJIFILM|LEICA)/.test(make);
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------------------------
// HEIC

/**
 * The rendering source of a HEIC (HEVC) original: its primary image (the first of a burst or
 * a Live Photo's still), decoded with libheif (irot/imir applied, so the JPEG needs no EXIF
 * orientation) and encoded as JPEG with the original's ICC profile. `meta` is sharp's header
 * read (libheif parses it without the HEVC decoder): its size is checked before decoding.
 */
export async function heicRenderingSource(
  bytes: Buffer,
  meta: sharp.Metadata,
  limitInputPixels: number,
): Promise<Buffer> {
  const declared = { width: meta.width ?? 0, height: meta.height ?? 0 };
  if (declared.width * declared.height > limitInputPixels)
    throw new ImagePixelLimitError(limitInputPixels, declared, "body.file");
  const decoded = await formatWorkers()
    .run<
      | { width: number; height: number; data: Uint8Array }
      | { error: "pixel-limit"; width: number; height: number }
      | { error: "undecodable"; message: string }
    >("heic", { bytes, maxPixels: limitInputPixels }, HEIC_TIMEOUT_MS)
    .catch(timeoutAsUndecodable);
  if ("error" in decoded) {
    if (decoded.error === "pixel-limit")
      throw new ImagePixelLimitError(limitInputPixels, { width: decoded.width, height: decoded.height }, "body.file");
    throw new UndecodableImageError(`The HEIC image could not be decoded (${decoded.message})`);
  }
  const data = Buffer.from(decoded.data.buffer, decoded.data.byteOffset, decoded.data.byteLength);
  let image = sharp(data, { raw: { width: decoded.width, height: decoded.height, channels: 4 } });
  if (!meta.hasAlpha) image = image.removeAlpha();
  // 4:2:0 like the HEVC it comes from: decodes as fast as the phone's own JPEG would.
  const jpeg = await image.jpeg({ quality: SOURCE_QUALITY }).toBuffer();
  return meta.icc ? withIccProfile(jpeg, meta.icc) : jpeg;
}

/**
 * `jpeg` (as sharp encoded it: no ICC profile) with `icc` in APP2 ICC_PROFILE segments right
 * after SOI (ICC.1 Annex B.4). sharp attaches a profile only by converting into it; the decoded
 * pixels are already in the original's colour space, so the profile is added as it is.
 */
export function withIccProfile(jpeg: Buffer, icc: Buffer): Buffer {
  const CHUNK = 65_519;
  const count = Math.ceil(icc.length / CHUNK);
  if (count > 255) return jpeg;
  const segments: Buffer[] = [];
  for (let i = 0; i < count; i++) {
    const data = icc.subarray(i * CHUNK, (i + 1) * CHUNK);
    const header = Buffer.alloc(18);
    header.writeUInt16BE(0xffe2, 0);
    header.writeUInt16BE(2 + 14 + data.length, 2);
    header.write("ICC_PROFILE\0", 4, "latin1");
    header[16] = i + 1;
    header[17] = count;
    segments.push(header, data);
  }
  return Buffer.concat([jpeg.subarray(0, 2), ...segments, jpeg.subarray(2)]);
}

// ---------------------------------------------------------------------------------------------
// Camera RAW

export interface CameraRaw {
  format: CameraRawFormat;
  /** The rendering source: the largest usable embedded JPEG, turned upright, re-encoded without metadata. */
  source: Buffer;
  /** The camera's EXIF, from the RAW file's own tag blocks. */
  exif: AssetExif;
}

/** sharp's rotation and flips for an EXIF orientation (as its own auto-orientation applies them). */
const ORIENTATIONS: Record<number, { rotate: number; flip?: boolean; flop?: boolean }> = {
  1: { rotate: 0 },
  2: { rotate: 0, flop: true },
  3: { rotate: 180 },
  4: { rotate: 180, flop: true },
  5: { rotate: 270, flip: true },
  6: { rotate: 90 },
  7: { rotate: 90, flip: true },
  8: { rotate: 270 },
};

/**
 * A camera RAW's rendering source and EXIF, or undefined when the file is none (a TIFF from a
 * camera maker's software). Read in process (camera-raw.ts walks the container; sharp reads each
 * embedded JPEG's header). 415 when no embedded JPEG of at least MIN_PREVIEW_SIDE decodes: the
 * platform renders RAW files from their previews, never demosaics.
 */
export async function readCameraRaw(
  bytes: Buffer,
  limitInputPixels: number,
  options: MetadataOptions,
): Promise<CameraRaw | undefined> {
  const read = cameraRawContents(bytes);
  if (!read) return undefined;
  const { format } = read;
  let best: { data: Buffer; meta: sharp.Metadata } | undefined;
  let largest = "none";
  for (const data of read.previews) {
    const meta = await sharp(data, { failOn: "error" })
      .metadata()
      .catch(() => undefined);
    if (meta?.format !== "jpeg" || !meta.width || !meta.height) continue;
    const pixels = meta.width * meta.height;
    if (!best || pixels > best.meta.width! * best.meta.height!) best = { data, meta };
  }
  if (best) largest = `${best.meta.width} x ${best.meta.height}`;
  if (!best || Math.max(best.meta.width!, best.meta.height!) < MIN_PREVIEW_SIDE) {
    throw new UnsupportedImageError(
      `This ${format.toUpperCase()} file has no usable embedded JPEG preview (largest: ${largest}; at least ${MIN_PREVIEW_SIDE} px on its longer side is needed); camera RAW files are shown from their preview`,
    );
  }
  if (best.meta.width! * best.meta.height! > limitInputPixels) {
    throw new ImagePixelLimitError(
      limitInputPixels,
      { width: best.meta.width!, height: best.meta.height! },
      "body.file",
    );
  }
  const exif = exifFields(read.tags, options);
  // A preview with its own orientation is turned by it; one without takes the camera's.
  const orientation = best.meta.orientation ?? exif.orientation ?? 1;
  const turn = ORIENTATIONS[orientation] ?? ORIENTATIONS[1]!;
  let image = sharp(best.data, { failOn: "error", limitInputPixels, autoOrient: false }).keepIccProfile();
  if (turn.rotate) image = image.rotate(turn.rotate);
  if (turn.flip) image = image.flip();
  if (turn.flop) image = image.flop();
  let source: Buffer;
  try {
    source = await image.jpeg({ quality: SOURCE_QUALITY }).toBuffer();
  } catch {
    throw new UnsupportedImageError(
      `The embedded JPEG preview of this ${format.toUpperCase()} file does not decode; camera RAW files are shown from their preview`,
    );
  }
  return { format, source, exif: { ...exif, orientation } };
}

// ---------------------------------------------------------------------------------------------
// PDF

export interface PdfFacts {
  pages: number;
  /** Page 1 in points (its /Rotate applied): the asset's width and height, 1 pt = 1 px at 72 dpi. */
  width: number;
  height: number;
  /** Page 1 drawn to fit PDF_PREVIEW_SIDE, as PNG. */
  preview: Buffer;
}

/** A PDF checked against PDF_LIMITS and the pixel limit (page 1 at 72 dpi), with page 1 drawn small. */
export async function readPdf(bytes: Buffer, limitInputPixels: number): Promise<PdfFacts> {
  const read = await formatWorkers()
    .run<
      | { pages: number; width: number; height: number; png: Uint8Array }
      | { error: "pdf-limit" | "undecodable"; message: string }
    >(
      "pdf",
      {
        bytes,
        maxPages: PDF_LIMITS.maxPages,
        maxPageSide: PDF_LIMITS.maxPageSidePoints,
        thumbnailSide: PDF_PREVIEW_SIDE,
      },
      PDF_TIMEOUT_MS,
    )
    .catch(timeoutAsUndecodable);
  if ("error" in read) {
    throw new UndecodableImageError(
      read.error === "pdf-limit" ? read.message : `The PDF could not be read (${read.message})`,
    );
  }
  if (read.width * read.height > limitInputPixels) {
    throw new ImagePixelLimitError(limitInputPixels, { width: read.width, height: read.height }, "body.file");
  }
  return {
    pages: read.pages,
    width: read.width,
    height: read.height,
    preview: Buffer.from(read.png.buffer, read.png.byteOffset, read.png.byteLength),
  };
}
