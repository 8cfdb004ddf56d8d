import { createHash, randomUUID } from "node:crypto";
import fs from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable, Transform, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { Router, type NextFunction, type Request, type Response } from "express";
import type { FileStore as FileStoreType } from "@tus/file-store" with { "resolution-mode": "import" };
import type { S3Store as S3StoreType } from "@tus/s3-store" with { "resolution-mode": "import" };
import type { Server as TusServerType } from "@tus/server" with { "resolution-mode": "import" };
import type { DataStore, Locker, Upload } from "@tus/utils" with { "resolution-mode": "import" };
import Redis from "ioredis";
import {
  PROBLEM_CONTENT_TYPE,
  ProblemError,
  resumableUploadMetadataSchema,
  type ResumableUploadMetadata,
} from "@media-platform/contracts";
import { requireAuth } from "../auth/middleware";
import { requireScope } from "../auth/scopes";
import { SPOOL_PREFIX } from "../config/uploads";
import { defaultTransportsConfig, TUS_S3_PREFIX, type TransportsConfig } from "../config/transports";
import type { AppContext } from "../context";
import type { Principal, TokenVerifier } from "../auth/keys";
import { zodErrors } from "../domain-errors";
import { badRequest, notFound, problem, toProblem, type ManagementProblemCode } from "../problem";
import { defaultUploadSettings } from "../config/uploads";
import { ASSETS_PATH } from "./routes";
import { assertCollectionInWorkspace, patchAsset, uploadAsset } from "./service";
import { findUploadReceipt, recordUploadReceipt, sweepUploadReceipts } from "./upload-receipts";
import { RedisUploadLocker } from "./tus-lock";
import { uploadGateOf, uploadsBusy, type UploadGate } from "./upload-intake";
import { nativeRequire } from "../native-require";

// ESM-only packages, loaded through Node's require(esm) (native-require.ts says why not jest's).
const { FileStore } = nativeRequire<{ FileStore: typeof FileStoreType }>("@tus/file-store");
const { S3Store } = nativeRequire<{ S3Store: typeof S3StoreType }>("@tus/s3-store");
const { Server: TusServer } = nativeRequire<{ Server: typeof TusServerType }>("@tus/server");

/**
 * tus 1.0 at /v1/assets/tus (@tus/server with its file or S3 store): creation, creation-with-upload,
 * termination, expiration and checksum (sha1, sha256). OPTIONS answers without a token; every other
 * request needs the bearer token and reaches only its own workspace's uploads. The last byte runs
 * the multipart upload's intake (uploadAsset), then the upload's bytes are removed and a receipt
 * names the asset (Asset-Id, Link), also to a later HEAD.
 */
export const TUS_PATH = `${ASSETS_PATH}/tus`;

const CHECKSUM_ALGORITHMS = { sha1: "sha1", sha256: "sha256" } as const;
/** Headers a browser client must be allowed to read (CORS), besides tus' own. */
const EXPOSED = ["Asset-Id", "Link", "Content-Location", "Upload-Expires"];
const UPLOAD_ID = /^[0-9a-f]{32}$/;

/** Metadata keys the service writes itself; a client's own values for them are replaced. */
const OWNER_KEY = "workspaceId";
const USER_KEY = "userId";

/** What a tus request carries besides the web Request tus sees. */
const principals = new WeakMap<object, Principal>();

function tusProblemCode(status: number): ManagementProblemCode | undefined {
  return (
    {
      400: "invalid-input",
      404: "not-found",
      409: "upload-offset-mismatch",
      410: "upload-expired",
      412: "tus-version",
      413: "too-large",
      415: "upload-content-type",
      423: "upload-locked",
      460: "checksum-mismatch",
    } as Record<number, ManagementProblemCode>
  )[status];
}

/** A tus error answer ({status_code, body}) carrying a problem document. */
const tusError = (p: ProblemError, instance: string) => ({
  status_code: p.status,
  body: JSON.stringify(p.toBody(instance)),
});

function decodeMetadata(upload: Upload): ResumableUploadMetadata {
  const raw = Object.fromEntries(
    Object.entries(upload.metadata ?? {}).filter(
      ([k, v]) => v !== null && k !== OWNER_KEY && k !== USER_KEY && k in resumableUploadMetadataSchema.shape,
    ),
  );
  const parsed = resumableUploadMetadataSchema.safeParse(raw);
  if (!parsed.success) throw badRequest("Invalid Upload-Metadata", zodErrors(parsed.error, "Upload-Metadata"));
  return parsed.data;
}

export interface ResumableUploads {
  router: Router;
  /** Removes expired uploads' bytes and their receipts; returns how many uploads. */
  sweep(): Promise<number>;
  close(): Promise<void>;
}

function storeOf(ctx: AppContext, settings: TransportsConfig): DataStore {
  if (ctx.s3) {
    return new S3Store({
      expirationPeriodInMilliseconds: settings.tus.expiryMs,
      // Objects tagged with their expiry are what a bucket lifecycle rule on staging/tus/ matches.
      useTags: false,
      s3ClientConfig: {
        bucket: ctx.s3.bucket,
        region: ctx.s3.region,
        endpoint: ctx.s3.endpoint,
        forcePathStyle: ctx.s3.forcePathStyle,
        credentials: ctx.s3.credentials,
        // As the blob store (packages/storage s3.ts): plain bodies, which every S3 stores as sent.
        requestChecksumCalculation: "WHEN_REQUIRED",
        responseChecksumValidation: "WHEN_REQUIRED",
      },
    });
  }
  fs.mkdirSync(settings.tus.dir, { recursive: true, mode: 0o700 });
  return new FileStore({ directory: settings.tus.dir, expirationPeriodInMilliseconds: settings.tus.expiryMs });
}

/** The store's id of an upload's URL segment: S3 keeps unfinished uploads under the staging prefix. */
const storeIdOf = (ctx: AppContext, segment: string) => (ctx.s3 ? `${TUS_S3_PREFIX}${segment}` : segment);
const segmentOf = (id: string) => id.slice(id.lastIndexOf("/") + 1);

export function resumableUploads(
  ctx: AppContext,
  verifier: TokenVerifier,
  gate: UploadGate = uploadGateOf(ctx.uploads ?? defaultUploadSettings()),
  apiKeys?: TokenVerifier,
): ResumableUploads {
  const settings = ctx.transports ?? defaultTransportsConfig(path.join(os.tmpdir(), "media-platform"));
  const spoolDir = (ctx.uploads ?? defaultUploadSettings()).spoolDir;
  fs.mkdirSync(spoolDir, { recursive: true, mode: 0o700 });
  const datastore = storeOf(ctx, settings);
  const redis = settings.redisUrl ? new Redis(settings.redisUrl, { maxRetriesPerRequest: 2 }) : undefined;
  const locker: Locker | undefined = redis ? new RedisUploadLocker(redis) : undefined;

  const principalOfTus = (req: object): Principal => {
    const principal = principals.get(req);
    if (!principal) throw { status_code: 401, body: "Not authenticated\n" };
    return principal;
  };

  /** The file the intake reads: the file store's own, else the S3 object copied to a spool file. */
  async function spooled(upload: Upload): Promise<{ path: string; sha256: string; owned: boolean }> {
    const hash = createHash("sha256");
    const measure = new Transform({
      transform(chunk: Buffer, _enc, done) {
        hash.update(chunk);
        done(null, chunk);
      },
    });
    if (datastore instanceof FileStore) {
      const file = path.join(settings.tus.dir, upload.id);
      await pipeline(fs.createReadStream(file), measure, new Writable({ write: (_chunk, _enc, done) => done() }));
      return { path: file, sha256: hash.digest("hex"), owned: false };
    }
    const target = path.join(spoolDir, `${SPOOL_PREFIX}${randomUUID()}`);
    try {
      await pipeline(
        await (datastore as S3StoreType).read(upload.id),
        measure,
        fs.createWriteStream(target, { flags: "wx", mode: 0o600 }),
      );
    } catch (err) {
      await fsp.rm(target, { force: true });
      throw err;
    }
    return { path: target, sha256: hash.digest("hex"), owned: true };
  }

  const tus = new TusServer({
    path: TUS_PATH,
    datastore,
    ...(locker ? { locker } : {}),
    maxSize: ctx.maxUploadBytes,
    relativeLocation: true,
    exposedHeaders: EXPOSED,
    allowedHeaders: ["Upload-Checksum", "Authorization"],
    disableTerminationForFinishedUploads: true,
    namingFunction: () => storeIdOf(ctx, randomUUID().replaceAll("-", "")),
    generateUrl: (_req, { path: base, id }) => `${base}/${segmentOf(id)}`,
    getFileIdFromRequest: (_req, lastPath) =>
      lastPath && UPLOAD_ID.test(lastPath) ? storeIdOf(ctx, lastPath) : undefined,
    async onUploadCreate(req, upload) {
      const principal = principalOfTus(req);
      const instance = TUS_PATH;
      try {
        const metadata = decodeMetadata(upload);
        if (metadata.collectionId) {
          await assertCollectionInWorkspace(
            ctx,
            principal.workspaceId,
            metadata.collectionId,
            "Upload-Metadata.collectionId",
          );
        }
      } catch (err) {
        throw tusError(toProblem(err), instance);
      }
      return {
        metadata: { ...upload.metadata, [OWNER_KEY]: principal.workspaceId, [USER_KEY]: principal.userId ?? null },
      };
    },
    async onIncomingRequest(req, id) {
      if (req.method === "POST") return;
      const principal = principalOfTus(req);
      let upload: Upload;
      try {
        upload = await datastore.getUpload(id);
      } catch {
        return; // tus answers the unknown upload itself (404, or 410 when expired)
      }
      // Another workspace's upload: the same answer as an unknown one.
      if (upload.metadata?.[OWNER_KEY] !== principal.workspaceId) {
        throw tusError(notFound("Upload not found"), `${TUS_PATH}/${segmentOf(id)}`);
      }
    },
    async onUploadFinish(req, upload) {
      const principal = principalOfTus(req);
      const instance = `${TUS_PATH}/${segmentOf(upload.id)}`;
      let file: Awaited<ReturnType<typeof spooled>> | undefined;
      try {
        const metadata = decodeMetadata(upload);
        file = await spooled(upload);
        const created = await uploadAsset(
          ctx,
          principal,
          {
            path: file.path,
            size: upload.size ?? upload.offset,
            sha256: file.sha256,
            originalname: metadata.filename ?? "upload",
          },
          { collectionId: metadata.collectionId },
        );
        if (metadata.title !== undefined || metadata.tags !== undefined) {
          await patchAsset(ctx, principal, created.id, {
            ...(metadata.title !== undefined ? { userTitle: metadata.title } : {}),
            ...(metadata.tags !== undefined ? { userTags: metadata.tags } : {}),
          });
        }
        ctx.metrics?.observeUpload(created.bytes);
        await recordUploadReceipt(ctx, {
          uploadId: segmentOf(upload.id),
          workspaceId: principal.workspaceId,
          assetId: created.id,
          size: upload.size ?? upload.offset,
        });
        await datastore
          .remove(upload.id)
          .catch((err: unknown) =>
            ctx.log.warn({ err, upload: upload.id }, "finished upload's bytes not removed; the expiry sweep will"),
          );
        return { headers: assetHeaders(created.id) };
      } catch (err) {
        const answer = toProblem(err);
        // Refused (not an image, too many pixels, ...): nothing of it is kept. A 5xx keeps the
        // bytes, so the client's retry of the last PATCH runs the intake again.
        if (answer.status < 500) await datastore.remove(upload.id).catch(() => undefined);
        else ctx.log.error({ err, upload: upload.id }, "resumable upload's intake failed");
        throw tusError(answer, instance);
      } finally {
        if (file?.owned) await fsp.rm(file.path, { force: true });
      }
    },
  });

  const router = Router();
  const handle = async (req: Request, res: Response, next: NextFunction) => {
    try {
      res.setHeader("Cache-Control", "no-store");
      // A finished upload is gone from the store; its receipt still answers HEAD.
      if (req.method === "HEAD" && req.principal && typeof req.params.uploadId === "string") {
        const receipt = await findUploadReceipt(ctx, req.principal.workspaceId, req.params.uploadId);
        if (receipt) {
          res.status(200).set({
            "Tus-Resumable": "1.0.0",
            "Upload-Offset": String(receipt.size),
            "Upload-Length": String(receipt.size),
            ...assetHeaders(receipt.assetId),
          });
          res.end();
          return;
        }
      }
      // A request carrying bytes holds one of the uploads' slots (MAX_CONCURRENT_UPLOADS), shared
      // with multipart uploads, until it is answered.
      const workspaceId = req.principal?.workspaceId;
      if (workspaceId !== undefined && (req.method === "PATCH" || req.method === "POST")) {
        const admitted = gate.tryEnter(workspaceId);
        if (admitted !== "ok") throw uploadsBusy(gate, admitted);
        res.once("close", () => gate.leave(workspaceId));
      }
      const checked = await checkedBody(req, spoolDir);
      if (checked.refusal) {
        sendAnswer(
          res,
          checked.refusal.status,
          corsHeaders(req),
          JSON.stringify(checked.refusal.toBody(req.originalUrl.split("?")[0]!)),
        );
        return;
      }
      const url = `http://${req.headers.host ?? "localhost"}${req.originalUrl}`;
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) {
        if (value !== undefined && name !== "upload-checksum")
          headers.set(name, Array.isArray(value) ? value.join(", ") : value);
      }
      const hasBody = req.method === "PATCH" || req.method === "POST";
      const webReq = new globalThis.Request(url, {
        method: req.method,
        headers,
        body: hasBody ? (Readable.toWeb(checked.body ?? req) as unknown as ReadableStream) : undefined,
        duplex: "half",
      } as RequestInit);
      if (req.principal) principals.set(webReq, req.principal);
      try {
        const response = await tus.handleWeb(webReq);
        await sendTusResponse(req, res, response);
      } finally {
        if (checked.file) await fsp.rm(checked.file, { force: true });
      }
    } catch (err) {
      next(err);
    }
  };
  // OPTIONS (CORS preflight, capability discovery) answers without a token.
  const optionsFirst = (req: Request, res: Response, next: NextFunction) => {
    if (req.method === "OPTIONS") void handle(req, res, next);
    else next();
  };
  // A bearer token or an API key, with the write scope (the route table names it).
  const auth = [requireAuth(verifier, apiKeys), requireScope()];
  const upload = `${TUS_PATH}/:uploadId`;
  router.options(TUS_PATH, optionsFirst);
  router.options(upload, optionsFirst);
  router.post(TUS_PATH, auth, handle);
  router.head(upload, auth, handle);
  router.patch(upload, auth, handle);
  router.delete(upload, auth, handle);

  return {
    router,
    async sweep() {
      const removed = await tus.cleanUpExpiredUploads();
      await sweepUploadReceipts(ctx, settings.tus.expiryMs);
      return removed;
    },
    async close() {
      redis?.disconnect();
    },
  };
}

function assetHeaders(assetId: string): Record<string, string> {
  const location = `${ASSETS_PATH}/${assetId}`;
  return { "Asset-Id": assetId, Link: `<${location}>; rel="asset"`, "Content-Location": location };
}

function corsHeaders(req: Request): Record<string, string> {
  return req.headers.origin
    ? {
        "Access-Control-Allow-Origin": "*",
        "Access-Control-Expose-Headers": EXPOSED.join(", "),
        "Tus-Resumable": "1.0.0",
      }
    : { "Tus-Resumable": "1.0.0" };
}

function sendAnswer(res: Response, status: number, headers: Record<string, string>, problemBody: string) {
  res.status(status).set(headers).type(PROBLEM_CONTENT_TYPE).send(problemBody);
}

/**
 * The body of a PATCH (or a POST with creation-with-upload) that names an Upload-Checksum: spooled
 * to a file while hashed, so a mismatch (460) stores nothing of it; the file is then what tus reads.
 */
async function checkedBody(
  req: Request,
  spoolDir: string,
): Promise<{ body?: Readable; file?: string; refusal?: ProblemError }> {
  const header = req.headers["upload-checksum"];
  if (typeof header !== "string" || (req.method !== "PATCH" && req.method !== "POST")) return {};
  const m = /^([a-z0-9-]+) ([A-Za-z0-9+/=]+)$/.exec(header.trim());
  if (!m) return { refusal: badRequest("Upload-Checksum must be `<algorithm> <base64 digest>`") };
  const algorithm = CHECKSUM_ALGORITHMS[m[1] as keyof typeof CHECKSUM_ALGORITHMS];
  if (!algorithm) return { refusal: badRequest(`Upload-Checksum algorithm ${m[1]} is not supported (sha1, sha256)`) };
  const file = path.join(spoolDir, `${SPOOL_PREFIX}${randomUUID()}`);
  const hash = createHash(algorithm);
  const measure = new Transform({
    transform(chunk: Buffer, _enc, done) {
      hash.update(chunk);
      done(null, chunk);
    },
  });
  try {
    await pipeline(req, measure, fs.createWriteStream(file, { flags: "wx", mode: 0o600 }));
  } catch (err) {
    await fsp.rm(file, { force: true });
    throw err;
  }
  if (hash.digest("base64") !== m[2]) {
    await fsp.rm(file, { force: true });
    return {
      refusal: problem(
        "checksum-mismatch",
        `The body does not match its Upload-Checksum (${m[1]}); nothing of it was stored`,
      ),
    };
  }
  return { body: fs.createReadStream(file), file };
}

/** Sends tus' answer; its plain-text errors become problem documents of the same status. */
async function sendTusResponse(req: Request, res: Response, response: globalThis.Response): Promise<void> {
  res.status(response.status);
  response.headers.forEach((value, name) => {
    if (name !== "content-length" && name !== "content-type") res.setHeader(name, value);
  });
  if (req.method === "OPTIONS") {
    res.setHeader("Tus-Extension", `${response.headers.get("tus-extension") ?? ""},checksum`.replace(/^,/, ""));
    res.setHeader("Tus-Checksum-Algorithm", Object.keys(CHECKSUM_ALGORITHMS).join(","));
  }
  const text = response.body ? await response.text() : "";
  if (response.status < 400) {
    res.end(text);
    return;
  }
  const instance = req.originalUrl.split("?")[0]!;
  if (text.startsWith("{")) {
    res.type(PROBLEM_CONTENT_TYPE).send(text);
    return;
  }
  const code = tusProblemCode(response.status);
  const p = code
    ? problem(code, text.trim() || "Refused")
    : new ProblemError(response.status, "upload-refused", text.trim() || "Refused");
  for (const [k, v] of Object.entries(p.headers)) if (k !== "Connection") res.setHeader(k, v);
  res.type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(p.toBody(instance)));
}
