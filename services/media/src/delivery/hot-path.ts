import type { IncomingMessage, ServerResponse } from "node:http";
import { recordRawRequest, REQUEST_ID_HEADER, resolveRequestId, ROUTE_HOT_PATH } from "@media-platform/observability";
import { ifNoneMatchMatches } from "../cache/entry";
import type { MemoryCache } from "../cache/memory-cache";
import type { MediaMetrics } from "../metrics";
import type { FormatNegotiator } from "../negotiation";
import type { UrlSigner } from "./signing";

/**
 * The HIT path: a bare node:http handler that runs before Express. For a GET/HEAD whose
 * request-target is in the in-process LRU it writes the stored bytes with precomputed headers
 * and returns true; anything else (miss, bad signature, other methods) returns false and the
 * request goes to the Express app. No URL parsing, no Redis, no Express, no logger.
 *
 * Observability stays allocation-light: the request id (X-Request-Id accepted or generated),
 * one memory-tier hit on `media_cache_lookups_total` and one latency sample under the route
 * label `hot_path` (pre-resolved series, no label objects). The head goes out in one writeHead
 * with the entry's precomputed header list plus the request id: no setHeader, so Node validates
 * each header once and builds no header map.
 * A lookup that misses here (or that the signature declines) is not counted: the request
 * continues to the Express path, whose own memory lookup (RenditionService.deliver) records the
 * outcome once it is known to be a valid media URL (so /metrics scrapes and other routes never
 * count as cache misses). Either way a request counts one memory-tier lookup.
 */
export function createHotPath(deps: {
  memory: MemoryCache;
  signer: UrlSigner | undefined;
  metrics: Pick<MediaMetrics, "cacheLookupSeries" | "observeHttp">;
  /** MEDIA_AUTO_FORMAT on: the key carries the Accept bucket and responses Vary: Accept. */
  negotiator?: FormatNegotiator;
}): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { memory, signer, metrics, negotiator } = deps;
  const memoryHit = metrics.cacheLookupSeries("memory", "hit");
  return (req, res) => {
    const method = req.method;
    if (method !== "GET" && method !== "HEAD") return false;
    const key = req.url;
    if (key === undefined) return false;
    const start = performance.now();
    const entry = memory.get(negotiator ? negotiator.cacheKey(key, req.headers.accept) : key);
    if (entry === undefined) return false;
    // Entries are only stored after a valid signature, but the key may have been rotated since,
    // or its `exp` passed: the Express path answers those 403s.
    const verdict = signer?.verify(key);
    if (verdict && verdict.status !== "ok") return false;
    const cacheControl = verdict?.cacheControl;
    memoryHit.inc();
    const headers = req.headers;
    const requestId = resolveRequestId(headers["x-request-id"]);
    const notModified = ifNoneMatchMatches(headers["if-none-match"], entry.etag);
    if (cacheControl === undefined && !negotiator) {
      const list = notModified ? entry.notModifiedHeaderList : entry.hitHeaderList;
      res.writeHead(notModified ? 304 : 200, [...list, REQUEST_ID_HEADER, requestId]);
    } else {
      // A per-URL Cache-Control (expiring signature) or Vary (negotiation) on top of the entry's headers.
      res.writeHead(notModified ? 304 : 200, {
        ...(notModified ? entry.notModifiedHeaders : entry.hitHeaders),
        ...(cacheControl !== undefined && { "Cache-Control": cacheControl }),
        ...(negotiator && { Vary: "Accept" }),
        [REQUEST_ID_HEADER]: requestId,
      });
    }
    if (notModified) {
      res.end();
    } else {
      res.end(method === "HEAD" ? undefined : entry.body);
    }
    recordRawRequest(metrics, ROUTE_HOT_PATH, req, res, start);
    return true;
  };
}
