import { createHash, randomUUID } from "node:crypto";
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { NextFunction, Request, RequestHandler, Response } from "express";
import multer from "multer";
import sharp from "sharp";
import phash from "sharp-phash";
import { removePrivateMetadata, type OriginalMetadataPolicy } from "./original-privacy";
import {
  IMAGE_FORMATS,
  ImagePixelLimitError,
  originalHeaderOf,
  UndecodableImageError,
  UnsupportedImageError,
  type AssetFormat,
  type OriginalHeader,
} from "@media-platform/contracts";
import { StorageUnavailableError } from "@media-platform/storage";
import { ProblemError, badRequest } from "../problem";
import type { UploadSettings } from "../config/uploads";
import { InvalidInputError } from "../domain-errors";
import { displayedSize, extractImageMetadata, type ImageMetadata, type MetadataOptions } from "./image-metadata";
import { isGzip, looksLikeSvg, sanitiseSvg } from "./svg-original";

/** Multipart overhead tolerated on top of MAX_UPLOAD_BYTES before a Content-Length is refused outright. */
const MULTIPART_SLACK = 64 * 1024;

/** Spool files are named `<prefix><uuid>` so a start-up sweep can recognise them. */
export const SPOOL_PREFIX = "upload-";

const tooLarge = (max: number) =>
  new ProblemError(413, "payload-too-large", `The file exceeds the upload limit of ${max} bytes`, {
    headers: { Connection: "close" },
  });

/** The spooled upload, hashed and measured while it streamed to disk. */
export interface SpooledFile {
  path: string;
  size: number;
  sha256: string;
}

/** Per-request state shared by the middleware and the storage engine. */
interface UploadState {
  spooled: string[];
  onData: () => void;
}
const uploadStates = new WeakMap<Request, UploadState>();

/**
 * multer storage engine: streams the file part to a spool file, computing its SHA-256 and size on
 * the way, so no upload is ever held in memory. The file is removed when the response closes.
 */
class SpoolStorage implements multer.StorageEngine {
  constructor(private readonly dir: string) {}

  _handleFile(
    req: Request,
    file: Express.Multer.File,
    cb: (error?: unknown, info?: Partial<Express.Multer.File>) => void,
  ) {
    const target = path.join(this.dir, `${SPOOL_PREFIX}${randomUUID()}`);
    uploadStates.get(req)?.spooled.push(target);
    const hash = createHash("sha256");
    let size = 0;
    const measure = new Transform({
      transform(chunk: Buffer, _enc, done) {
        hash.update(chunk);
        size += chunk.length;
        done(null, chunk);
      },
    });
    pipeline(file.stream, measure, fs.createWriteStream(target, { flags: "wx", mode: 0o600 })).then(
      () => cb(null, { path: target, size, sha256: hash.digest("hex") } as Partial<Express.Multer.File>),
      (err: unknown) => {
        void fsp.rm(target, { force: true }).finally(() => cb(err));
      },
    );
  }

  _removeFile(_req: Request, file: Express.Multer.File, cb: (error: Error | null) => void) {
    fsp.rm(file.path, { force: true }).then(
      () => cb(null),
      (err: unknown) => cb(err instanceof Error ? err : new Error(String(err))),
    );
  }
}

/** Counts uploads in flight in this process, in total and per workspace. */
export class UploadGate {
  private active = 0;
  private readonly byWorkspace = new Map<string, number>();
  readonly maxPerWorkspace: number;
  constructor(
    readonly max: number,
    maxPerWorkspace?: number,
  ) {
    this.maxPerWorkspace = Math.min(max, maxPerWorkspace ?? Math.max(1, Math.floor(max / 2)));
  }
  /** "ok", or which limit is reached (nothing is counted then). */
  tryEnter(workspaceId: string): "ok" | "instance" | "workspace" {
    const held = this.byWorkspace.get(workspaceId) ?? 0;
    if (this.active >= this.max) return "instance";
    if (held >= this.maxPerWorkspace) return "workspace";
    this.active++;
    this.byWorkspace.set(workspaceId, held + 1);
    return "ok";
  }
  leave(workspaceId: string): void {
    this.active = Math.max(0, this.active - 1);
    const held = (this.byWorkspace.get(workspaceId) ?? 1) - 1;
    if (held > 0) this.byWorkspace.set(workspaceId, held);
    else this.byWorkspace.delete(workspaceId);
  }
  get inFlight(): number {
    return this.active;
  }
}

/**
 * multer with a hard size cap (busboy stops reading the part once the cap is passed), the body
 * streamed to a spool file, an idle timeout on the body (408) and a per-process cap on concurrent
 * uploads (503 + Retry-After, checked before any byte is read). Exactly one `file` part; text
 * fields are returned in req.body; the spooled file in req.file (`path`, `size`, `sha256`).
 */
export function uploadMiddleware(maxUploadBytes: number, settings: UploadSettings): RequestHandler {
  // Upload bodies are private until stored: owner-only folder (also when it already existed) and files.
  fs.mkdirSync(settings.spoolDir, { recursive: true, mode: 0o700 });
  fs.chmodSync(settings.spoolDir, 0o700);
  const gate = new UploadGate(settings.maxConcurrentUploads, settings.maxConcurrentUploadsPerWorkspace);
  const upload = multer({
    storage: new SpoolStorage(settings.spoolDir),
    // RFC 7578 filenames are UTF-8 (curl, browsers); busboy's default would read them as latin1.
    defParamCharset: "utf8",
    limits: { fileSize: maxUploadBytes, files: 1, fields: 20, fieldSize: 64 * 1024, parts: 30, headerPairs: 200 },
    // Every body chunk restarts the idle timer of its request.
    streamHandler: (req: Request, busboy: NodeJS.WritableStream) => {
      req.pipe(busboy);
      const state = uploadStates.get(req);
      if (state) req.on("data", state.onData);
    },
  } as multer.Options).single("file");

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
    // Mounted after the auth middleware: every upload belongs to a workspace.
    const workspaceId = req.principal?.workspaceId ?? "";
    const admitted = gate.tryEnter(workspaceId);
    if (admitted !== "ok") {
      const limit =
        admitted === "workspace"
          ? `at most ${gate.maxPerWorkspace} per workspace on this instance`
          : `at most ${gate.max} per instance`;
      next(
        new ProblemError(503, "service-unavailable", `Too many uploads in progress (${limit}); retry later`, {
          headers: { "Retry-After": "2", Connection: "close" },
        }),
      );
      return;
    }

    let finished = false;
    let timer: NodeJS.Timeout | undefined;
    const state: UploadState = {
      spooled: [],
      onData: () => {
        clearTimeout(timer);
        if (!finished) timer = setTimeout(onIdle, settings.bodyIdleTimeoutMs);
      },
    };
    uploadStates.set(req, state);
    // The slot and the spool file live until the response is done (analysis and blob write included).
    res.on("close", () => {
      clearTimeout(timer);
      gate.leave(workspaceId);
      for (const file of state.spooled) void fsp.rm(file, { force: true });
    });
    const finish = (err?: unknown) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      req.off("data", state.onData);
      next(err);
    };
    const onIdle = () =>
      // Connection: close ends the socket after the answer, which also makes multer drop the part.
      finish(
        new ProblemError(408, "request-timeout", `No upload data received for ${settings.bodyIdleTimeoutMs / 1000} s`, {
          title: "Request Timeout",
          headers: { Connection: "close" },
        }),
      );
    state.onData();

    upload(req, res, (err: unknown) => {
      if (!err) {
        finish();
        return;
      }
      if (err instanceof multer.MulterError) {
        switch (err.code) {
          case "LIMIT_FILE_SIZE":
            finish(tooLarge(maxUploadBytes));
            return;
          case "LIMIT_FILE_COUNT":
          case "LIMIT_UNEXPECTED_FILE":
            finish(
              badRequest("Exactly one file part named `file` is allowed", [
                {
                  path: err.field ? `body.${err.field}` : "body.file",
                  message: "only one file part named file is allowed",
                },
              ]),
            );
            return;
          default:
            finish(badRequest(`Malformed multipart body: ${err.message}`));
            return;
        }
      }
      // Spool disk full or unwritable: the server's fault, not the client's.
      if (typeof (err as { code?: unknown }).code === "string" && /^E[A-Z]+$/.test((err as { code: string }).code)) {
        finish(new StorageUnavailableError(`upload spool: ${(err as Error).message}`, { cause: err }));
        return;
      }
      // busboy parse errors ("Unexpected end of form", malformed boundary, ...)
      finish(badRequest("Malformed multipart body"));
    });
  };
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
  // The stored original is served publicly: GPS (and, by default, serial numbers) go first.
  // An SVG is stored as sanitised, which keeps no metadata but its markup.
  const storedBytes =
    svg ??
    (await removePrivateMetadata(file.path, IMAGE_FORMATS[format].extensions[0], meta, {
      policy: options.originalMetadata ?? "private",
      keepGps: options.keepGps,
    }).then(
      (size) => size ?? file.size,
      () => {
        throw new UndecodableImageError("The image's metadata could not be rewritten without its GPS position");
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
