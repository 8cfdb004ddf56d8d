import { Router } from "express";
import { signMediaUrlRequestSchema } from "@media-platform/contracts";
import { principalOf } from "../auth/middleware";
import type { AppContext } from "../context";
import { requireJson } from "../http";
import { parseOr400 } from "../problem";
import { signMediaUrl } from "./service";

export const MEDIA_URLS_PATH = "/v1/media-urls";

/** POST /v1/media-urls/sign (mounted after the /v1 auth middleware, full paths like the other routers). */
export function mediaUrlsRouter(ctx: AppContext): Router {
  const r = Router();
  r.post(`${MEDIA_URLS_PATH}/sign`, requireJson, async (req, res) => {
    const input = parseOr400(signMediaUrlRequestSchema, req.body, "body");
    res.json(await signMediaUrl(ctx, principalOf(req), input));
  });
  return r;
}
