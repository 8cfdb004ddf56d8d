import { Router, type RequestHandler } from "express";
import {
  assetVersionParamsSchema,
  batchRequestSchema,
  deleteAssetQuerySchema,
  replaceFieldsSchema,
} from "@media-platform/contracts";
import { ASSETS_PATH, assetIdOf, uploadedFileOf } from "../assets/routes";
import { principalOf } from "../auth/middleware";
import type { AppContext } from "../context";
import { requireJson } from "../http";
import { notFound, parseOr400 } from "../problem";
import {
  deleteAssetPermanently,
  listVersions,
  replaceOriginal,
  restoreAsset,
  restoreVersion,
  runBatch,
  trashAsset,
} from "./service";
import { trashThumbnail } from "./trash-thumbnail";

/**
 * The lifecycle routes of /v1/assets (trash, restore, permanent delete, replace, versions, batch),
 * registered with their full paths as assetsRouter's are. `upload` is the upload intake shared
 * with POST /v1/assets/upload.
 */
export function lifecycleRouter(ctx: AppContext, upload: RequestHandler): Router {
  const r = Router();

  r.delete(`${ASSETS_PATH}/:assetId`, async (req, res) => {
    const id = assetIdOf(req.params);
    const query = parseOr400(deleteAssetQuerySchema, req.query, "query");
    if (query.permanent) await deleteAssetPermanently(ctx, principalOf(req), id);
    else await trashAsset(ctx, principalOf(req), id);
    res.status(204).end();
  });

  r.post(`${ASSETS_PATH}/:assetId/restore`, async (req, res) => {
    res.json(await restoreAsset(ctx, principalOf(req), assetIdOf(req.params)));
  });

  // The trash's own thumbnails: media answers 404 for a trashed asset, by design.
  r.get(`${ASSETS_PATH}/:assetId/trash-thumbnail`, async (req, res) => {
    const thumbnail = await trashThumbnail(ctx, principalOf(req), assetIdOf(req.params));
    // The owner's browser may keep it while paging the trash; no shared cache may.
    res.setHeader("Cache-Control", "private, max-age=600");
    res.type(thumbnail.contentType).send(thumbnail.body);
  });

  r.put(`${ASSETS_PATH}/:assetId/original`, upload, async (req, res) => {
    const id = assetIdOf(req.params);
    const file = uploadedFileOf(req);
    parseOr400(replaceFieldsSchema, req.body ?? {}, "body");
    const replaced = await replaceOriginal(ctx, principalOf(req), id, file);
    ctx.metrics?.observeUpload(replaced.bytes);
    res.json(replaced);
  });

  r.get(`${ASSETS_PATH}/:assetId/versions`, async (req, res) => {
    res.json(await listVersions(ctx, principalOf(req), assetIdOf(req.params)));
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
