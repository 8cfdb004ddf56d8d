import { Router, type NextFunction, type Request, type Response } from "express";
import { LRUCache } from "lru-cache";
import sharp from "sharp";
import { nativeRequire } from "@media-platform/runtime";
import { cacheControlFor, etagOf, ifNoneMatchMatches, type CachePolicy } from "../cache/entry";
import type { MediaAdmission } from "../delivery/admission";
import type { RenditionService } from "../delivery/rendition-service";
import type { FormatNegotiator } from "../negotiation";
import { planRendition, type RenderDeps } from "../render/pipeline/render";

/*
 * GET|HEAD /info/<steps>/<assetId>.<ext>[?render=1][&sig=...]: the facts of the rendition the
 * image URL /<steps>/<assetId>.<ext> produces, as JSON.
 *
 *   planned (always, from the original's header, nothing decoded): width, height, format,
 *     contentType, animated, frames
 *   rendered (?render=1 only): the result's bytes, width, height, dominantColor (#rrggbb) and
 *     thumbHash (base64). The render is the image URL's own: served from, or stored in, the
 *     same cache entry.
 *
 * The same rules as the image URL: presets and MEDIA_PRESETS_ONLY, signing (with signing on the
 * info URL itself is signed, `render` covered by the signature), format negotiation (Vary:
 * Accept), and the same problems (400, 403, 404, 413, 422, 503). Planned facts may be larger
 * than a max-bytes result that had to shrink; the rendered ones are the result's.
 */

export const INFO_PREFIX = "/info";

// thumbhash is ESM-only: loaded through Node's require(esm), outside jest's CommonJS sandbox.
type ThumbHash = typeof import("thumbhash", { with: { "resolution-mode": "import" } });
let thumbhashModule: ThumbHash | undefined;
const thumbhash = (): ThumbHash => (thumbhashModule ??= nativeRequire<ThumbHash>(require.resolve("thumbhash")));

export interface InfoDeps {
  service: RenditionService;
  /** The image URL's admission rules (presets, signing, negotiation, limits). */
  admission: MediaAdmission;
  /** MEDIA_AUTO_FORMAT on: responses Vary: Accept. */
  negotiator?: FormatNegotiator;
  /** Cache-Control of unversioned URLs, as the image URL's. */
  cachePolicy?: CachePolicy;
  /** The render's planning settings (the real render's, so the plan is the render's). */
  plan: Pick<RenderDeps, "limitInputPixels" | "maxAnimationFrames" | "limits" | "avifEffort">;
}

export interface RenderedFacts {
  bytes: number;
  width: number;
  height: number;
  contentType: string;
  dominantColor: string;
  thumbHash: string;
}

const hex = (n: number) => n.toString(16).padStart(2, "0");

/** ThumbHash and dominant colour of a <=100x100 thumbnail of the result (its first frame). */
export async function renderedFacts(body: Buffer, contentType: string): Promise<RenderedFacts> {
  const meta = await sharp(body).metadata();
  const { data, info } = await sharp(body)
    .resize(100, 100, { fit: "inside", withoutEnlargement: true })
    .ensureAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  const hash = thumbhash().rgbaToThumbHash(info.width, info.height, data);
  const { dominant } = await sharp(data, { raw: { width: info.width, height: info.height, channels: 4 } }).stats();
  return {
    bytes: body.length,
    width: meta.width,
    height: meta.pageHeight ?? meta.height,
    contentType,
    dominantColor: `#${hex(dominant.r)}${hex(dominant.g)}${hex(dominant.b)}`,
    thumbHash: Buffer.from(hash).toString("base64"),
  };
}

/** `GET /info/<steps>/<assetId>.<ext>`: mount on the media app before the media URL space. */
export function infoRouter(deps: InfoDeps): Router {
  // Rendered facts by the rendition's ETag: content-addressed, so never stale after a purge.
  const rendered = new LRUCache<string, RenderedFacts>({ max: 4096 });
  const router = Router();
  const handler = async (req: Request, res: Response, next: NextFunction) => {
    try {
      const target = req.url;
      if (!target.startsWith(`${INFO_PREFIX}/`)) return next();
      if (deps.negotiator) res.setHeader("Vary", "Accept");
      const { request, render } = deps.admission.admitInfo(target, req.headers.accept, INFO_PREFIX);
      const { cacheControl, convertTo } = request;
      const { header, contentType } = await deps.service.originalHeader(request.assetId);
      const planned = planRendition({ header, contentType, steps: [...request.steps], convertTo }, deps.plan);
      const body: Record<string, unknown> = {
        assetId: request.assetId,
        url: request.canonical,
        width: planned.width,
        height: planned.height,
        format: planned.format,
        contentType: `image/${planned.format}`,
        animated: planned.animated,
        frames: planned.frames,
      };
      let cacheControlOut = cacheControl ?? cacheControlFor(target, deps.cachePolicy);
      if (render) {
        // The image URL's own delivery: its cache key (the query left out, as the image URL's
        // unsigned spelling; negotiated as it would be), its entry, its single flight.
        const { entry } = await deps.service.deliver(request, { log: req.log });
        let facts = rendered.get(entry.etag);
        if (!facts) {
          facts = await renderedFacts(entry.body, entry.contentType);
          rendered.set(entry.etag, facts);
        }
        body.rendered = facts;
        cacheControlOut = cacheControl ?? entry.hitHeaders["Cache-Control"] ?? cacheControlOut;
      }
      const json = Buffer.from(JSON.stringify(body));
      const etag = etagOf(json);
      res.setHeader("ETag", etag);
      res.setHeader("Cache-Control", cacheControlOut);
      res.setHeader("Surrogate-Key", request.assetId);
      res.setHeader("Cache-Tag", request.assetId);
      if (ifNoneMatchMatches(req.headers["if-none-match"], etag)) {
        res.status(304).end();
        return;
      }
      res.type("application/json").send(json);
    } catch (err) {
      next(err);
    }
  };
  router.get(/^\/info\//, handler);
  return router;
}
