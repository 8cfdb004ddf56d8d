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
import { displayedSize, extractImageMetadata, type ImageMetadata, type MetadataOptions } from "./image-metadata";
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
  // An SVG is sanitised in place before librsvg reads a byte of it (svg-original.ts).
  const svg = await sanitiseIfSvg(file);
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
  const container = svg === undefined ? metadataContainerOf(format) : undefined;
  const storedBytes =
    svg ??
    (container === undefined
      ? file.size
      : await removePrivateMetadata(file.path, container, {
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
        ));
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

const ACCEPTED = "JPEG, PNG, WebP, GIF, AVIF, TIFF, SVG";

/**
 * Markup is checked as SVG and replaced by its sanitised form (the spool file is rewritten)
 * before anything else reads it; returns the sanitised size, or undefined for any other file.
 * A gzip body is refused here: libvips would read it as a compressed SVG, unsanitised.
 */
async function sanitiseIfSvg(file: SpooledFile): Promise<number | undefined> {
  const head = Buffer.alloc(64);
  const handle = await fsp.open(file.path, "r");
  try {
    await handle.read(head, 0, head.length, 0);
  } finally {
    await handle.close();
  }
  if (isGzip(head)) throw new UnsupportedImageError(`A compressed file is not accepted (accepted: ${ACCEPTED})`);
  if (!looksLikeSvg(head)) return undefined;
  const sanitised = sanitiseSvg(await fsp.readFile(file.path));
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
      // libheif reports AVIF as heif + av1; HEIC (hevc) is not accepted.
      return meta.compression === "av1" ? "avif" : null;
    default:
      return null;
  }
}
