import { Router } from "express";
import {
  assetIdParamsSchema,
  assetVersionParamsSchema,
  batchRequestSchema,
  deleteAssetQuerySchema,
  replaceFieldsSchema,
  fullTextQuerySchema,
  listAssetsQuerySchema,
  patchAssetSchema,
  uploadFieldsSchema,
} from "@media-platform/contracts";
import { principalOf } from "../auth/middleware";
import type { AppContext } from "../context";
import { requireJson } from "../http";
import { badRequest, notFound, parseOr400 } from "../problem";
import { getAsset, listAssets, patchAsset, searchAssetsFullText, uploadAsset } from "./service";
import { defaultUploadSettings } from "../config/uploads";
import { uploadMiddleware } from "./upload-intake";
import {
  deleteAssetPermanently,
  listVersions,
  replaceOriginal,
  restoreAsset,
  restoreVersion,
  runBatch,
  trashAsset,
} from "../lifecycle/service";

const assetId = (params: unknown): string => {
  const parsed = assetIdParamsSchema.safeParse(params);
  // A malformed id cannot name an asset: same answer as an unknown one.
  if (!parsed.success) throw notFound("Asset not found");
  return parsed.data.assetId;
};

/** Where the routes live. Full paths, not a mount point, so `req.route.path` is the documented pattern. */
export const ASSETS_PATH = "/v1/assets";

/**
 * The /v1/assets routes, registered with their full paths (mount with `app.use(assetsRouter(ctx))`
 * after the /v1 auth middleware): the access log and the latency histogram label each request with
 * `req.route.path` exactly as documented (`/v1/assets/:assetId`), also when a handler fails (a
 * mounted router's `req.baseUrl` is gone by the time an error response finishes).
 */
export function assetsRouter(ctx: AppContext): Router {
  const r = Router();

  // One middleware for upload and replace, so MAX_CONCURRENT_UPLOADS counts both.
  const upload = uploadMiddleware(ctx.maxUploadBytes, ctx.uploads ?? defaultUploadSettings());
  r.post(`${ASSETS_PATH}/upload`, upload, async (req, res) => {
    if (!req.file)
      throw badRequest("Missing file part", [{ path: "body.file", message: "a file part named file is required" }]);
    const fields = parseOr400(uploadFieldsSchema, req.body ?? {}, "body");
    // The spool storage engine adds sha256 to multer's file (path, size, originalname).
    const file = req.file as Express.Multer.File & { sha256: string };
    const created = await uploadAsset(ctx, principalOf(req), file, fields);
    ctx.metrics?.observeUpload(created.bytes);
    res.status(201).location(`${ASSETS_PATH}/${created.id}`).json(created);
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
    res.json(await getAsset(ctx, principalOf(req), assetId(req.params)));
  });

  r.patch(`${ASSETS_PATH}/:assetId`, requireJson, async (req, res) => {
    const id = assetId(req.params);
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

  // Lifecycle (issue 10): trash, restore, permanent delete, replace, versions, batch.
  r.delete(`${ASSETS_PATH}/:assetId`, async (req, res) => {
    const id = assetId(req.params);
    const query = parseOr400(deleteAssetQuerySchema, req.query, "query");
    if (query.permanent) await deleteAssetPermanently(ctx, principalOf(req), id);
    else await trashAsset(ctx, principalOf(req), id);
    res.status(204).end();
  });

  r.post(`${ASSETS_PATH}/:assetId/restore`, async (req, res) => {
    res.json(await restoreAsset(ctx, principalOf(req), assetId(req.params)));
  });

  r.put(`${ASSETS_PATH}/:assetId/original`, upload, async (req, res) => {
    const id = assetId(req.params);
    if (!req.file)
      throw badRequest("Missing file part", [{ path: "body.file", message: "a file part named file is required" }]);
    parseOr400(replaceFieldsSchema, req.body ?? {}, "body");
    const file = req.file as Express.Multer.File & { sha256: string };
    const replaced = await replaceOriginal(ctx, principalOf(req), id, file);
    ctx.metrics?.observeUpload(replaced.bytes);
    res.json(replaced);
  });

  r.get(`${ASSETS_PATH}/:assetId/versions`, async (req, res) => {
    res.json(await listVersions(ctx, principalOf(req), assetId(req.params)));
  });

  r.post(`${ASSETS_PATH}/:assetId/versions/:version/restore`, async (req, res) => {
    const parsed = assetVersionParamsSchema.safeParse(req.params);
    if (!parsed.success) throw notFound("Asset version not found");
    res.json(await restoreVersion(ctx, principalOf(req), parsed.data.assetId, parsed.data.version));
  });

  r.post(`${ASSETS_PATH}/batch`, requireJson, async (req, res) => {
    const batch = parseOr400(batchRequestSchema, req.body, "body");
    res.json(await runBatch(ctx, principalOf(req), batch));
  });

  return r;
}
