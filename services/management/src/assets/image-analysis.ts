import fsp from "node:fs/promises";
import sharp from "sharp";
import phash from "sharp-phash";
import {
  IMAGE_FORMATS,
  ImagePixelLimitError,
  originalHeaderOf,
  UndecodableImageError,
  UnsupportedImageError,
  type AssetFormat,
  type OriginalHeader,
} from "@media-platform/contracts";
import { InvalidInputError, MetadataRemovalError } from "../domain-errors";
import {
  displayedSize,
  extractImageMetadata,
  readExif,
  type ImageMetadata,
  type MetadataOptions,
} from "./image-metadata";
import { heicRenderingSource, looksLikePdf, mayBeCameraRaw, readCameraRaw, readPdf } from "./decoded-formats";
import {
  MalformedMetadataError,
  metadataContainerOf,
  removePrivateMetadata,
  type OriginalMetadataPolicy,
} from "./original-privacy";
import { isGzip, looksLikeSvg, sanitiseSvg } from "./svg-original";

/** The spooled upload, hashed and measured while it streamed to disk. */
export interface SpooledFile {
  path: string;
  size: number;
  sha256: string;
}

export interface AnalysedImage {
  format: AssetFormat;
  mimeType: string;
  /** Displayed size: after the EXIF orientation, as every client coordinate is. */
  width: number;
  height: number;
  bytes: number;
  sha256: string;
  /** 64-bit DCT perceptual hash as a signed BIGINT value. */
  phash: bigint;
  /** Placeholder, dominant colour, alpha, frames and EXIF; null when not asked for (benchmark baseline). */
  metadata: ImageMetadata | null;
  /** The header facts the media service plans from, stored with the blob (contracts' OriginalHeader). */
  header: OriginalHeader | undefined;
  /**
   * HEIC and camera RAW: the JPEG renders read instead of the original (decoded-formats.ts),
   * stored beside it (blobs.ts renderingSourceKey); `header` and the size are its.
   */
  renderingSource?: Buffer;
}

export interface AnalyseOptions extends MetadataOptions {
  /** Compute the placeholder and metadata (default true; false only to measure their cost). */
  metadata?: boolean;
  /** What of the original's metadata is stored (original-privacy.ts); default private. */
  originalMetadata?: OriginalMetadataPolicy;
}

/** "0101..." (64 chars) -> signed 64-bit value for a Postgres BIGINT column. */
export const phashToBigInt = (bits: string): bigint => BigInt.asIntN(64, BigInt(`0b${bits}`));

/**
 * Sniffs the format from the bytes (never from the filename or client Content-Type), checks the
 * declared pixel count against the limit from the header alone, then fully decodes the image once
 * (through the perceptual hash), reading from the spool file. Size and SHA-256 were measured while
 * the body streamed in. 415: not an image or not an accepted format. 422: recognised but
 * undecodable, or above the pixel limit. An SVG is sanitised first (svg-original.ts) and sized
 * by librsvg from its width/height/viewBox (at 72 dpi, one user unit per pixel). Then the placeholder and metadata
 * (image-metadata.ts) from the header already read and a <=100 px thumbnail.
 */
export async function analyseImage(
  file: SpooledFile,
  limitInputPixels: number,
  options: AnalyseOptions = { keepGps: false },
): Promise<AnalysedImage> {
  if (file.size === 0)
    throw new InvalidInputError("The file is empty", [{ path: "body.file", message: "must not be empty" }]);
  const head = await readHead(file.path);
  // An SVG is sanitised in place before librsvg reads a byte of it (svg-original.ts).
  const svg = await sanitiseIfSvg(file, head);
  if (svg === undefined && looksLikePdf(head)) return analysePdf(file, limitInputPixels, options);
  if (svg === undefined && mayBeCameraRaw(head)) {
    const raw = await readCameraRaw(await fsp.readFile(file.path), limitInputPixels, options);
    // Else a TIFF from a camera maker's software: read as any TIFF below.
    if (raw) {
      return analyseRendered(file, raw, limitInputPixels, options);
    }
  }
  let meta: sharp.Metadata;
  try {
    // Header only: the pixel limit is checked below from the declared size, before any decode.
    meta = await sharp(file.path, { limitInputPixels: false, failOn: "error" }).metadata();
  } catch (err) {
    const message = err instanceof Error ? err.message : "";
    if (/unsupported image format/i.test(message)) {
      throw new UnsupportedImageError(`The file is not a supported image (accepted: ${ACCEPTED})`);
    }
    throw new UndecodableImageError();
  }
  if (svg === undefined && meta.format === "heif" && meta.compression === "hevc") {
    const source = await heicRenderingSource(await fsp.readFile(file.path), meta, limitInputPixels);
    const exif = meta.exif ? readExif(meta.exif, options) : null;
    return analyseRendered(file, { format: "heic", source, exif }, limitInputPixels, options);
  }
  const format = acceptedFormat(meta, svg !== undefined);
  if (!format) {
    throw new UnsupportedImageError(`Image format ${meta.format ?? "unknown"} is not accepted (accepted: ${ACCEPTED})`);
  }
  if (!meta.width || !meta.height) throw new UndecodableImageError("The image has no dimensions");
  const frameHeight = meta.pageHeight ?? meta.height;
  if (meta.width * frameHeight > limitInputPixels)
    throw new ImagePixelLimitError(limitInputPixels, { width: meta.width, height: frameHeight }, "body.file");
  let hashBits: string;
  try {
    // Decodes every pixel of the first frame: a truncated or corrupt body fails here.
    hashBits = await phash(file.path, { limitInputPixels, failOn: "error" });
  } catch (err) {
    const message = err instanceof Error ? err.message : "";
    if (/pixel limit/i.test(message))
      throw new ImagePixelLimitError(limitInputPixels, { width: meta.width, height: frameHeight }, "body.file");
    throw new UndecodableImageError();
  }
  let metadata: ImageMetadata | null = null;
  if (options.metadata !== false) {
    try {
      metadata = await extractImageMetadata(file.path, meta, limitInputPixels, options);
    } catch {
      // The first frame decoded above; a later failure here means a corrupt body all the same.
      throw new UndecodableImageError();
    }
  }
  // The stored original is served publicly: the location (and, by default, serial numbers) go
  // first, found by walking the container itself. An SVG is stored as sanitised, which keeps no
  // metadata but its markup.
  const storedBytes = svg ?? (await privateMetadataRemoved(file, format, options));
  return {
    format,
    mimeType: IMAGE_FORMATS[format].mimeType,
    // As displayed (after the EXIF orientation): what a client reserves layout space from.
    ...displayedSize(meta),
    bytes: storedBytes,
    // Of the bytes as uploaded (an upload of the same file is an exact duplicate), even when the
    // stored original lost its GPS position.
    sha256: file.sha256,
    phash: phashToBigInt(hashBits),
    metadata,
    header: originalHeaderOf(meta),
  };
}

const ACCEPTED =
  "JPEG, PNG, WebP, GIF, AVIF, TIFF, SVG, HEIC, PDF, camera RAW (DNG, CR2, CR3, NEF, ARW, RAF, RW2, ORF)";

/** The first bytes of the spooled file (sniffing: SVG, gzip, PDF, camera RAW signatures). */
async function readHead(filePath: string): Promise<Buffer> {
  const head = Buffer.alloc(64 * 1024);
  const handle = await fsp.open(filePath, "r");
  try {
    const { bytesRead } = await handle.read(head, 0, head.length, 0);
    return head.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/**
 * The stored original without the metadata the policy drops (original-privacy.ts: the location,
 * and by default serial numbers, found by walking the container itself); its size.
 */
async function privateMetadataRemoved(
  file: SpooledFile,
  format: AssetFormat,
  options: AnalyseOptions,
): Promise<number> {
  const container = metadataContainerOf(format);
  if (container === undefined) return file.size;
  return removePrivateMetadata(file.path, container, {
    policy: options.originalMetadata ?? "private",
    keepGps: options.keepGps,
  }).then(
    (size) => size ?? file.size,
    (err: unknown) => {
      if (!(err instanceof MalformedMetadataError)) throw err;
      throw new MetadataRemovalError(
        `The image's metadata could not be read to remove its location and serial numbers (${err.message}); ` +
          "re-save the image (or export it without location data) and upload it again",
        { cause: err },
      );
    },
  );
}

/**
 * An original rendered from a rendering source (HEIC, camera RAW): the size, placeholder,
 * perceptual hash and header of the source, the EXIF of the original, the original stored as
 * uploaded but for its private metadata.
 */
async function analyseRendered(
  file: SpooledFile,
  original: { format: AssetFormat; source: Buffer; exif: ImageMetadata["exif"] },
  limitInputPixels: number,
  options: AnalyseOptions,
): Promise<AnalysedImage> {
  const { format, source } = original;
  const meta = await sharp(source, { limitInputPixels, failOn: "error" }).metadata();
  const hashBits = await phash(source, { limitInputPixels, failOn: "error" });
  let metadata: ImageMetadata | null = null;
  if (options.metadata !== false) {
    metadata = { ...(await extractImageMetadata(source, meta, limitInputPixels, options)), exif: original.exif };
  }
  const bytes = await privateMetadataRemoved(file, format, options);
  return {
    format,
    mimeType: IMAGE_FORMATS[format].mimeType,
    ...displayedSize(meta),
    bytes,
    sha256: file.sha256,
    phash: phashToBigInt(hashBits),
    metadata,
    header: originalHeaderOf(meta),
    renderingSource: source,
  };
}

/**
 * A PDF: page 1's size in points, the placeholder and perceptual hash from page 1 drawn small;
 * stored as uploaded (media draws its pages). Refused (422) over PDF_LIMITS or the pixel limit.
 */
async function analysePdf(
  file: SpooledFile,
  limitInputPixels: number,
  options: AnalyseOptions,
): Promise<AnalysedImage> {
  const pdf = await readPdf(await fsp.readFile(file.path), limitInputPixels);
  const previewMeta = await sharp(pdf.preview).metadata();
  const hashBits = await phash(pdf.preview);
  let metadata: ImageMetadata | null = null;
  if (options.metadata !== false) {
    const drawn = await extractImageMetadata(pdf.preview, previewMeta, limitInputPixels, options);
    metadata = { ...drawn, hasAlpha: false, animated: false, pages: pdf.pages, durationMs: null, exif: null };
  }
  const size = { width: pdf.width, height: pdf.height };
  return {
    format: "pdf",
    mimeType: IMAGE_FORMATS.pdf.mimeType,
    ...size,
    bytes: file.size,
    sha256: file.sha256,
    phash: phashToBigInt(hashBits),
    metadata,
    header: {
      ...size,
      orientedWidth: size.width,
      orientedHeight: size.height,
      pages: pdf.pages,
      hasAlpha: false,
      channels: 3,
      space: "srgb",
      depth: "uchar",
    },
  };
}

/**
 * Markup is checked as SVG and replaced by its sanitised form (the spool file is rewritten)
 * before anything else reads it; returns the sanitised size, or undefined for any other file.
 * A gzip body is refused here: libvips would read it as a compressed SVG, unsanitised.
 */
async function sanitiseIfSvg(file: SpooledFile, head: Buffer): Promise<number | undefined> {
  if (isGzip(head)) throw new UnsupportedImageError(`A compressed file is not accepted (accepted: ${ACCEPTED})`);
  if (!looksLikeSvg(head)) return undefined;
  const sanitised = await sanitiseSvg(await fsp.readFile(file.path));
  await fsp.writeFile(file.path, sanitised);
  return sanitised.length;
}

/** The format of an accepted image; SVG only when this upload's bytes were sanitised first. */
function acceptedFormat(meta: sharp.Metadata, sanitisedSvg: boolean): AssetFormat | null {
  if (sanitisedSvg) return meta.format === "svg" ? "svg" : null;
  switch (meta.format) {
    case "jpeg":
    case "png":
    case "webp":
    case "gif":
    case "tiff":
      return meta.format;
    case "heif":
      // libheif reports AVIF as heif + av1 (HEIC, hevc, is decoded above, into a rendering source).
      return meta.compression === "av1" ? "avif" : null;
    default:
      return null;
  }
}
