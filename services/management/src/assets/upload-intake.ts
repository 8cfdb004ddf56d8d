import { createHash, randomUUID } from "node:crypto";
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { NextFunction, Request, RequestHandler, Response } from "express";
import multer from "multer";
import { StorageUnavailableError } from "@media-platform/storage";
import { SPOOL_PREFIX, uploadsPerWorkspace, type UploadSettings } from "../config/uploads";
import { badRequest, problem } from "../problem";

/**
 * The HTTP intake of an upload (POST /v1/assets/upload and PUT /v1/assets/:id/original): the
 * multipart body streamed to a spool file with its size and SHA-256, the size, idle-time and
 * concurrency limits. What the bytes are is image-analysis.ts' question.
 */

/** Multipart overhead tolerated on top of MAX_UPLOAD_BYTES before a Content-Length is refused outright. */
const MULTIPART_SLACK = 64 * 1024;

const tooLarge = (max: number) =>
  problem("too-large", `The file exceeds the upload limit of ${max} bytes`, { headers: { Connection: "close" } });

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
    this.maxPerWorkspace = uploadsPerWorkspace({
      maxConcurrentUploads: max,
      maxConcurrentUploadsPerWorkspace: maxPerWorkspace,
    });
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

/** The process's one count of uploads in flight: multipart and resumable ones share it. */
export const uploadGateOf = (settings: UploadSettings): UploadGate =>
  new UploadGate(settings.maxConcurrentUploads, settings.maxConcurrentUploadsPerWorkspace);

/** The 503 of a full gate, naming the limit reached. */
export function uploadsBusy(gate: UploadGate, reached: "instance" | "workspace") {
  const limit =
    reached === "workspace"
      ? `at most ${gate.maxPerWorkspace} per workspace on this instance`
      : `at most ${gate.max} per instance`;
  return problem("uploads-busy", `Too many uploads in progress (${limit}); retry later`);
}

/**
 * multer with a hard size cap (busboy stops reading the part once the cap is passed), the body
 * streamed to a spool file, an idle timeout on the body (408) and a per-process cap on concurrent
 * uploads (503 + Retry-After, checked before any byte is read). Exactly one `file` part; text
 * fields are returned in req.body; the spooled file in req.file (`path`, `size`, `sha256`).
 */
export function uploadMiddleware(
  maxUploadBytes: number,
  settings: UploadSettings,
  gate: UploadGate = uploadGateOf(settings),
): RequestHandler {
  // Upload bodies are private until stored: owner-only folder (also when it already existed) and files.
  fs.mkdirSync(settings.spoolDir, { recursive: true, mode: 0o700 });
  fs.chmodSync(settings.spoolDir, 0o700);
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
      next(uploadsBusy(gate, admitted));
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
      finish(problem("upload-idle", `No upload data received for ${settings.bodyIdleTimeoutMs / 1000} s`));
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
