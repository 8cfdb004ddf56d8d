import { Router, type Request, type RequestHandler } from "express";
import {
  assetIdParamsSchema,
  fullTextQuerySchema,
  importFromUrlSchema,
  completeDirectUploadSchema,
  createDirectUploadSchema,
  directUploadParamsSchema,
  listAssetsQuerySchema,
  patchAssetSchema,
  uploadFieldsSchema,
} from "@media-platform/contracts";
import { principalOf } from "../auth/middleware";
import type { AppContext } from "../context";
import { requireJson } from "../http";
import { badRequest, notFound, parseOr400 } from "../problem";
import { getAsset, listAssets, patchAsset, searchAssetsFullText, uploadAsset, type UploadedFile } from "./service";
import { defaultUploadSettings } from "../config/uploads";
import { uploadMiddleware, type UploadGate } from "./upload-intake";
import { importFromUrl } from "./url-import";
import { abortDirectUpload, completeDirectUpload, createDirectUpload } from "./direct-uploads";

/** The :assetId of a route; a malformed id is a 404. */
export const assetIdOf = (params: unknown): string => {
  const parsed = assetIdParamsSchema.safeParse(params);
  // A malformed id cannot name an asset: same answer as an unknown one.
  if (!parsed.success) throw notFound("Asset not found");
  return parsed.data.assetId;
};

/** The :uploadId of a direct upload's route; a malformed id is a 404 (as an unknown one). */
const directUploadIdOf = (params: unknown): string => {
  const parsed = directUploadParamsSchema.safeParse(params);
  if (!parsed.success) throw notFound("Direct upload not found");
  return parsed.data.uploadId;
};

/** The file part of an upload (the spool storage engine adds sha256 to multer's path, size, originalname). */
export function uploadedFileOf(req: Request): UploadedFile {
  if (!req.file)
    throw badRequest("Missing file part", [{ path: "body.file", message: "a file part named file is required" }]);
  return req.file as Express.Multer.File & { sha256: string };
}

/** The upload middleware of both upload and replace, so MAX_CONCURRENT_UPLOADS counts both. */
export const uploadIntake = (ctx: AppContext, gate?: UploadGate): RequestHandler =>
  uploadMiddleware(ctx.maxUploadBytes, ctx.uploads ?? defaultUploadSettings(), gate);

/** Where the routes live. Full paths, not a mount point, so `req.route.path` is the documented pattern. */
export const ASSETS_PATH = "/v1/assets";

/**
 * The /v1/assets routes, registered with their full paths (mount with `app.use(assetsRouter(ctx, upload))`
 * after the /v1 auth middleware): the access log and the latency histogram label each request with
 * `req.route.path` exactly as documented (`/v1/assets/:assetId`), also when a handler fails (a
 * mounted router's `req.baseUrl` is gone by the time an error response finishes).
 */
export function assetsRouter(ctx: AppContext, upload: RequestHandler): Router {
  const r = Router();
  r.post(`${ASSETS_PATH}/upload`, upload, async (req, res) => {
    const file = uploadedFileOf(req);
    const fields = parseOr400(uploadFieldsSchema, req.body ?? {}, "body");
    const created = await uploadAsset(ctx, principalOf(req), file, fields);
    ctx.metrics?.observeUpload(created.bytes);
    res.status(201).location(`${ASSETS_PATH}/${created.id}`).json(created);
  });

  r.post(`${ASSETS_PATH}/import`, requireJson, async (req, res) => {
    const body = parseOr400(importFromUrlSchema, req.body, "body");
    const created = await importFromUrl(ctx, principalOf(req), body);
    ctx.metrics?.observeUpload(created.bytes);
    res.status(201).location(`${ASSETS_PATH}/${created.id}`).json(created);
  });

  r.post(`${ASSETS_PATH}/direct-uploads`, requireJson, async (req, res) => {
    const body = parseOr400(createDirectUploadSchema, req.body, "body");
    res.status(201).json(await createDirectUpload(ctx, principalOf(req), body));
  });

  r.post(`${ASSETS_PATH}/direct-uploads/:uploadId/complete`, requireJson, async (req, res) => {
    const id = directUploadIdOf(req.params);
    const body = parseOr400(completeDirectUploadSchema, req.body, "body");
    const created = await completeDirectUpload(ctx, principalOf(req), id, body);
    ctx.metrics?.observeUpload(created.bytes);
    res.status(201).location(`${ASSETS_PATH}/${created.id}`).json(created);
  });

  r.delete(`${ASSETS_PATH}/direct-uploads/:uploadId`, async (req, res) => {
    await abortDirectUpload(ctx, principalOf(req), directUploadIdOf(req.params));
    res.status(204).end();
  });

  r.get(`${ASSETS_PATH}/search/full-text`, async (req, res) => {
    const query = parseOr400(fullTextQuerySchema, req.query, "query");
    res.json(await searchAssetsFullText(ctx, principalOf(req), query));
  });

  r.get(ASSETS_PATH, async (req, res) => {
    const query = parseOr400(listAssetsQuerySchema, req.query, "query");
    res.json(await listAssets(ctx, principalOf(req), query));
  });

  r.get(`${ASSETS_PATH}/:assetId`, async (req, res) => {
    res.json(await getAsset(ctx, principalOf(req), assetIdOf(req.params)));
  });

  r.patch(`${ASSETS_PATH}/:assetId`, requireJson, async (req, res) => {
    const id = assetIdOf(req.params);
    const patch = parseOr400(patchAssetSchema, req.body, "body");
    // `{}` would be a successful no-op: almost always a client bug (wrong Content-Type, a dropped field).
    if (Object.keys(patch).length === 0) {
      throw badRequest("The body must name at least one field to change", [
        {
          path: "body",
          message:
            "must contain at least one of userTitle, userTags, userCaption, userDescription, collectionId, focalPoint",
        },
      ]);
    }
    res.json(await patchAsset(ctx, principalOf(req), id, patch));
  });

  return r;
}
