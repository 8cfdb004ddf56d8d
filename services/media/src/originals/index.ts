import { pipeline } from "node:stream/promises";
import contentDisposition from "content-disposition";
import type { NextFunction, Request, Response } from "express";
import {
  downloadFilenameFor,
  downloadFilenameProblem,
  formatOfExtension,
  formatOfMimeType,
  isOriginalPath,
  DomainError,
  MediaUrlError,
  parseOriginalPath,
  type OriginalRequest,
} from "@media-platform/contracts";
import type { Metrics } from "@media-platform/observability";
import { originalKey, StorageUnavailableError, type BlobStore } from "@media-platform/storage";
import { cacheControlFor, type CachePolicy } from "../cache/entry";
import { requireSignature, type UrlSigner } from "../delivery/signing";
import { instanceOf, problem } from "../problem";

/** Route label of originals in `http_request_duration_seconds`. */
export const ROUTE_ORIGINAL = "/original/:assetId.:ext";

export interface OriginalsDeps {
  store: BlobStore;
  signer: UrlSigner | undefined;
  metrics: Pick<Metrics, "dependencyError">;
  /** Refuses the request before anything else (presets-only mode); undefined lets it through. */
  gate?: (target: string) => DomainError | undefined;
  /** Freshness of unversioned URLs, the same as renditions' (MEDIA_CACHE_MAX_AGE, MEDIA_STALE_WHILE_REVALIDATE). */
  cachePolicy?: CachePolicy;
}

/** The `download` query parameter: undefined when absent, the filename ("" = default) otherwise. */
function downloadName(target: string, request: OriginalRequest): string | undefined {
  const q = target.indexOf("?");
  if (q < 0) return undefined;
  const values = new URLSearchParams(target.slice(q + 1)).getAll("download");
  if (values.length === 0) return undefined;
  if (values.length > 1) {
    throw new MediaUrlError([{ path: "download", message: "parameter is repeated" }]);
  }
  const name = values[0] === "" ? `${request.assetId}.${request.extension}` : values[0]!;
  const problem = downloadFilenameProblem(name);
  if (problem) throw new MediaUrlError([{ path: "download", message: problem }]);
  return name;
}

/** The `inline` query parameter (SVG originals): true when present, empty or `true`. */
function inlineAsked(target: string): boolean {
  const q = target.indexOf("?");
  if (q < 0) return false;
  const values = new URLSearchParams(target.slice(q + 1)).getAll("inline");
  if (values.length === 0) return false;
  if (values.length > 1) throw new MediaUrlError([{ path: "inline", message: "parameter is repeated" }]);
  if (values[0] !== "" && values[0] !== "true") {
    throw new MediaUrlError([{ path: "inline", message: "must be empty or true" }]);
  }
  return true;
}

/**
 * An SVG is a document a browser runs in the media service's origin: even sanitised, it is
 * served with a policy that lets it load and run nothing, and as an attachment unless `?inline`.
 */
export const SVG_ORIGINAL_CSP = "default-src 'none'; style-src 'unsafe-inline'";

/** A PDF original downloads as an attachment, and a browser that shows it anyway runs nothing of it. */
export const PDF_ORIGINAL_CSP = "default-src 'none'; sandbox";

/**
 * `GET|HEAD /original/<assetId>.<ext>[?download=<filename>|?inline]`: the stored bytes, streamed
 * unchanged with their stored Content-Type, never decoded and never put in the rendition cache
 * (a CDN in front caches them by the same Cache-Control as renditions). Signed like media URLs
 * when MEDIA_SIGNING_KEY is set; `download` and `inline` are then covered by the signature.
 * An SVG original (stored sanitised) carries SVG_ORIGINAL_CSP and downloads as an attachment
 * unless `inline` is asked; a PDF always downloads as an attachment, with PDF_ORIGINAL_CSP.
 */
export function originalsHandler(deps: OriginalsDeps) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const target = req.url;
    if (!isOriginalPath(instanceOf(target))) return next();
    if (req.method !== "GET" && req.method !== "HEAD") {
      return next(problem("method-not-allowed", `${req.method} is not allowed; originals answer GET and HEAD`));
    }
    try {
      const refused = deps.gate?.(target);
      if (refused) throw refused;
      const cacheControl = deps.signer ? requireSignature(deps.signer, target) : undefined;
      const request = parseOriginalPath(instanceOf(target));
      let download = downloadName(target, request);
      const inline = inlineAsked(target);
      if (inline && download !== undefined) {
        throw new MediaUrlError([{ path: "inline", message: "cannot be combined with download" }]);
      }
      let blob;
      try {
        blob = await deps.store.get(originalKey(request.assetId));
      } catch (err) {
        if (err instanceof StorageUnavailableError) deps.metrics.dependencyError("storage");
        throw err;
      }
      if (!blob) {
        throw problem("asset-not-found", `No asset ${request.assetId} exists`);
      }
      const headers: Record<string, string | number> = {
        "Content-Type": blob.contentType,
        "Content-Length": blob.size,
        // An original can be replaced or deleted: cached like a rendition of the same URL.
        "Cache-Control": cacheControl ?? cacheControlFor(target, deps.cachePolicy),
        // The stored type is the one upload sniffed; browsers must not guess another.
        "X-Content-Type-Options": "nosniff",
      };
      const format = formatOfMimeType(blob.contentType) ?? formatOfExtension(request.extension) ?? "jpeg";
      if (format === "svg") {
        headers["Content-Security-Policy"] = SVG_ORIGINAL_CSP;
        if (inline) headers["Content-Disposition"] = "inline";
        else download ??= `${request.assetId}.${request.extension}`;
      } else if (format === "pdf") {
        // A PDF may carry scripts: never opened in the media service's origin, always downloaded.
        headers["Content-Security-Policy"] = PDF_ORIGINAL_CSP;
        download ??= `${request.assetId}.pdf`;
      }
      if (download !== undefined) {
        const name = downloadFilenameFor(download, format);
        // Pure-ASCII fallback for old clients; the exact name travels in filename* (RFC 5987).
        headers["Content-Disposition"] = contentDisposition(name, {
          fallback: name.replace(/[^\x20-\x7e]/g, "_"),
        });
      }
      res.writeHead(200, headers);
      if (req.method === "HEAD") {
        blob.body.destroy();
        res.end();
        return;
      }
      // Headers are out: a store failure mid-stream can only cut the response short.
      await pipeline(blob.body, res).catch(() => res.destroy());
    } catch (err) {
      next(err);
    }
  };
}
