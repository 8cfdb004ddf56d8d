import { Router } from "express";
import { collectionIdParamsSchema, createCollectionSchema } from "@media-platform/contracts";
import { principalOf } from "../auth/middleware";
import type { AppContext } from "../context";
import { notFound, parseOr400 } from "../problem";
import { requireJson } from "../http";
import { createCollection, deleteCollection, listCollections } from "./service";

export function collectionsRouter(ctx: AppContext): Router {
  const r = Router();
  r.get("/", async (req, res) => {
    res.json(await listCollections(ctx, principalOf(req)));
  });
  r.post("/", requireJson, async (req, res) => {
    const input = parseOr400(createCollectionSchema, req.body, "body");
    const created = await createCollection(ctx, principalOf(req), input);
    res.status(201).location(`/v1/asset-collections/${created.id}`).json(created);
  });
  r.delete("/:id", async (req, res) => {
    const params = collectionIdParamsSchema.safeParse(req.params);
    if (!params.success) throw notFound("Collection not found");
    await deleteCollection(ctx, principalOf(req), params.data.id);
    res.status(204).end();
  });
  return r;
}
