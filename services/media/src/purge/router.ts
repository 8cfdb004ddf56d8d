import { timingSafeEqual, createHash } from "node:crypto";
import express, { Router, type RequestHandler } from "express";
import { PURGE_PATH, purgeRequestSchema } from "@media-platform/contracts";
import { problem } from "../problem";
import type { AssetPurger } from "./asset-purger";

/** GET /internal/generation/<assetId> (see purgeRouter). */
export const GENERATION_PATH = "/internal/generation";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const digest = (s: string) => createHash("sha256").update(s).digest();

/**
 * The internal endpoints' check of `Authorization: Bearer <MEDIA_PURGE_SECRET>`, before the body
 * is read; compared in constant time (hashes of equal length).
 */
export function bearerAuthorization(secret: string): RequestHandler {
  const expected = digest(`Bearer ${secret}`);
  return (req, _res, next) => {
    if (timingSafeEqual(digest(req.headers.authorization ?? ""), expected)) return next();
    next(problem("internal-unauthorized", "The internal endpoints need the shared purge secret"));
  };
}

/**
 * POST /internal/purge {assetIds: [...]} with `Authorization: Bearer <MEDIA_PURGE_SECRET>`:
 * management calls it after a delete or replace. 204 once this replica's memory tier is purged and,
 * with Redis, the generations are bumped and the other replicas notified. Compared in constant
 * time (hashes of equal length); never cached; not part of the public URL space (route it to the
 * internal network only, the CDN must not forward it).
 */
export function purgeRouter(purger: AssetPurger, secret: string): Router {
  const authorize = bearerAuthorization(secret);
  const r = Router();
  const json = express.json({ limit: "100kb" });
  const parseJson: RequestHandler = (req, res, next) =>
    json(req, res, (err?: unknown) =>
      next(err ? problem("invalid-purge-request", "The body is not valid JSON") : undefined),
    );
  // For edge caches that cannot purge by tag (nginx without a purge module): the CDN asks for the
  // asset's generation (cached by it for 1 s, which nginx counts in whole seconds) and puts it in
  // its cache key, so a purge here reaches the edge within two seconds. Public information (a
  // counter), so no secret.
  r.get(`${GENERATION_PATH}/:assetId`, async (req, res) => {
    const id = String(req.params.assetId ?? "");
    const generation = UUID.test(id) ? await purger.edgeGeneration(id) : "0";
    res.setHeader("X-Asset-Generation", generation);
    res.setHeader("Cache-Control", "public, max-age=1");
    res.status(204).end();
  });
  r.get(`${GENERATION_PATH}/`, (_req, res) => {
    // Not a media URL (no asset id): a constant generation.
    res.setHeader("X-Asset-Generation", "0");
    res.setHeader("Cache-Control", "public, max-age=60");
    res.status(204).end();
  });

  r.post(PURGE_PATH, authorize, parseJson, async (req, res) => {
    const parsed = purgeRequestSchema.safeParse(req.body);
    if (!parsed.success) {
      throw problem("invalid-purge-request", 'Expected {"assetIds": [1-1000 lowercase UUIDs]}', {
        errors: parsed.error.issues.map((i) => ({ path: ["body", ...i.path].join("."), message: i.message })),
      });
    }
    await purger.purge(parsed.data.assetIds);
    res.setHeader("Cache-Control", "no-store");
    res.status(204).end();
  });
  return r;
}
