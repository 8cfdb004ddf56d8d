import { Router } from "express";
import {
  collectionIdParamsSchema,
  createCollectionSchema,
  deleteCollectionQuerySchema,
} from "@media-platform/contracts";
import { principalOf } from "../auth/middleware";
import type { AppContext } from "../context";
import { notFound, parseOr400 } from "../problem";
import { requireJson } from "../http";
import { createCollection, deleteCollection, listCollections } from "./service";

/** Where the routes live. Full paths, not a mount point (see assetsRouter). */
export const COLLECTIONS_PATH = "/v1/asset-collections";

/** The /v1/asset-collections routes, with their full paths: mount with `app.use(collectionsRouter(ctx))`. */
export function collectionsRouter(ctx: AppContext): Router {
  const r = Router();
  r.get(COLLECTIONS_PATH, async (req, res) => {
    res.json(await listCollections(ctx, principalOf(req)));
  });
  r.post(COLLECTIONS_PATH, requireJson, async (req, res) => {
    const input = parseOr400(createCollectionSchema, req.body, "body");
    const created = await createCollection(ctx, principalOf(req), input);
    res.status(201).location(`${COLLECTIONS_PATH}/${created.id}`).json(created);
  });
  r.delete(`${COLLECTIONS_PATH}/:id`, async (req, res) => {
    const params = collectionIdParamsSchema.safeParse(req.params);
    if (!params.success) throw notFound("Collection not found");
    const query = parseOr400(deleteCollectionQuerySchema, req.query, "query");
    await deleteCollection(ctx, principalOf(req), params.data.id, query);
    res.status(204).end();
  });
  return r;
}
