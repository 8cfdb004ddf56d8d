import { createHash } from "node:crypto";
import type { NextFunction, Request, RequestHandler, Response } from "express";
import multer from "multer";
import sharp from "sharp";
import phash from "sharp-phash";
import { IMAGE_FORMATS, type AssetFormat } from "@media-platform/contracts";
import { HttpProblem, badRequest } from "../problem";

/** Multipart overhead tolerated on top of MAX_UPLOAD_BYTES before a Content-Length is refused outright. */
const MULTIPART_SLACK = 64 * 1024;

const tooLarge = (max: number) =>
  new HttpProblem(413, `The file exceeds the upload limit of ${max} bytes`, { headers: { Connection: "close" } });

/**
 * multer with a hard size cap: busboy stops reading the part once the cap is passed, so no more
 * than MAX_UPLOAD_BYTES is ever held. Exactly one `file` part; text fields are returned in req.body.
 */
export function uploadMiddleware(maxUploadBytes: number): RequestHandler {
  const upload = multer({
    storage: multer.memoryStorage(),
    // RFC 7578 filenames are UTF-8 (curl, browsers); busboy's default would read them as latin1.
    defParamCharset: "utf8",
    limits: { fileSize: maxUploadBytes, files: 1, fields: 20, fieldSize: 64 * 1024, parts: 30, headerPairs: 200 },
  }).single("file");

  return (req: Request, res: Response, next: NextFunction) => {
    if (!req.is("multipart/form-data")) {
      next(
        badRequest("Expected a multipart/form-data body with a file part", [
          { path: "body", message: "must be multipart/form-data" },
        ]),
      );
      return;
    }
    const declared = Number(req.headers["content-length"]);
    if (Number.isFinite(declared) && declared > maxUploadBytes + MULTIPART_SLACK) {
      next(tooLarge(maxUploadBytes));
      return;
    }
    upload(req, res, (err: unknown) => {
      if (!err) {
        next();
        return;
      }
      if (err instanceof multer.MulterError) {
        switch (err.code) {
          case "LIMIT_FILE_SIZE":
            next(tooLarge(maxUploadBytes));
            return;
          case "LIMIT_FILE_COUNT":
          case "LIMIT_UNEXPECTED_FILE":
            next(
              badRequest("Exactly one file part named `file` is allowed", [
                {
                  path: err.field ? `body.${err.field}` : "body.file",
                  message: "only one file part named file is allowed",
                },
              ]),
            );
            return;
          default:
            next(badRequest(`Malformed multipart body: ${err.message}`));
            return;
        }
      }
      // busboy parse errors ("Unexpected end of form", malformed boundary, ...)
      next(badRequest("Malformed multipart body"));
    });
  };
}

const pixelLimitExceeded = (width: number, height: number, limit: number) =>
  new HttpProblem(
    422,
    `The image is ${width}x${height} = ${width * height} pixels, above the limit of ${limit} pixels (LIMIT_INPUT_PIXELS)`,
  );

export interface AnalysedImage {
  format: AssetFormat;
  mimeType: string;
  width: number;
  height: number;
  bytes: number;
  sha256: string;
  /** 64-bit DCT perceptual hash as a signed BIGINT value. */
  phash: bigint;
}

/** "0101..." (64 chars) -> signed 64-bit value for a Postgres BIGINT column. */
export const phashToBigInt = (bits: string): bigint => BigInt.asIntN(64, BigInt(`0b${bits}`));

/**
 * Sniffs the format from the bytes (never from the filename or client Content-Type), fully decodes
 * the image once (through the perceptual hash) and computes its digests.
 * 415: not an image or not an accepted format (SVG included). 422: recognised but undecodable.
 */
export async function analyseImage(buffer: Buffer, limitInputPixels: number): Promise<AnalysedImage> {
  if (buffer.length === 0) throw badRequest("The file is empty", [{ path: "body.file", message: "must not be empty" }]);
  let meta: sharp.Metadata;
  try {
    // Header only: the pixel limit is checked below from the declared size, before any decode.
    meta = await sharp(buffer, { limitInputPixels: false, failOn: "error" }).metadata();
  } catch (err) {
    const message = err instanceof Error ? err.message : "";
    if (/unsupported image format/i.test(message)) {
      throw new HttpProblem(415, "The file is not a supported image (accepted: JPEG, PNG, WebP, GIF, AVIF, TIFF)");
    }
    throw new HttpProblem(422, "The image could not be decoded (truncated or corrupt)");
  }
  const format = acceptedFormat(meta);
  if (!format) {
    throw new HttpProblem(
      415,
      `Image format ${meta.format ?? "unknown"} is not accepted (accepted: JPEG, PNG, WebP, GIF, AVIF, TIFF)`,
    );
  }
  if (!meta.width || !meta.height) throw new HttpProblem(422, "The image has no dimensions");
  const frameHeight = meta.pageHeight ?? meta.height;
  if (meta.width * frameHeight > limitInputPixels) throw pixelLimitExceeded(meta.width, frameHeight, limitInputPixels);
  let hashBits: string;
  try {
    // Decodes every pixel of the first frame: a truncated or corrupt body fails here.
    hashBits = await phash(buffer, { limitInputPixels, failOn: "error" });
  } catch (err) {
    const message = err instanceof Error ? err.message : "";
    if (/pixel limit/i.test(message)) throw pixelLimitExceeded(meta.width, frameHeight, limitInputPixels);
    throw new HttpProblem(422, "The image could not be decoded (truncated or corrupt)");
  }
  return {
    format,
    mimeType: IMAGE_FORMATS[format].mimeType,
    width: meta.width,
    height: frameHeight,
    bytes: buffer.length,
    sha256: createHash("sha256").update(buffer).digest("hex"),
    phash: phashToBigInt(hashBits),
  };
}

function acceptedFormat(meta: sharp.Metadata): AssetFormat | null {
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
