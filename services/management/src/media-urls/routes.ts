import { Router } from "express";
import { signMediaUrlRequestSchema, signMediaUrlsRequestSchema } from "@media-platform/contracts";
import { principalOf } from "../auth/middleware";
import type { AppContext } from "../context";
import { requireJson } from "../http";
import { parseOr400 } from "../problem";
import { signMediaUrl, signMediaUrls } from "./service";

export const MEDIA_URLS_PATH = "/v1/media-urls";

/** POST /v1/media-urls/sign and /sign-batch (mounted after the /v1 auth middleware, full paths like the other routers). */
export function mediaUrlsRouter(ctx: AppContext): Router {
  const r = Router();
  r.post(`${MEDIA_URLS_PATH}/sign`, requireJson, async (req, res) => {
    const input = parseOr400(signMediaUrlRequestSchema, req.body, "body");
    res.json(await signMediaUrl(ctx, principalOf(req), input));
  });
  r.post(`${MEDIA_URLS_PATH}/sign-batch`, requireJson, async (req, res) => {
    const input = parseOr400(signMediaUrlsRequestSchema, req.body, "body");
    res.json(await signMediaUrls(ctx, principalOf(req), input));
  });
  return r;
}
