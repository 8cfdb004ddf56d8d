import type { IncomingMessage, ServerResponse } from "node:http";
import {
  recordRawRequest,
  REQUEST_ID_HEADER,
  resolveRequestId,
  ROUTE_HOT_PATH,
  type Metrics,
} from "@media-platform/observability";
import { ifNoneMatchMatches } from "../cache/entry";
import type { MemoryCache } from "../cache/memory-cache";
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
 * each header once and builds no header map. A lookup that misses here is not
 * counted: the request continues to the Express path, whose own memory lookup
 * (RenditionService.deliver) records the outcome once it is known to be a valid media URL
 * (so /metrics scrapes and other routes never count as cache misses).
 */
export function createHotPath(deps: {
  memory: MemoryCache;
  signer: UrlSigner | undefined;
  metrics: Pick<Metrics, "cacheLookup" | "observeHttp">;
}): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { memory, signer, metrics } = deps;
  return (req, res) => {
    const method = req.method;
    if (method !== "GET" && method !== "HEAD") return false;
    const key = req.url;
    if (key === undefined) return false;
    const start = performance.now();
    const entry = memory.get(key);
    if (entry === undefined) return false;
    // Entries are only stored after a valid signature, but the key may have been rotated since.
    if (signer && signer.check(key) !== "ok") return false;
    metrics.cacheLookup("memory", "hit");
    const headers = req.headers;
    const requestId = resolveRequestId(headers["x-request-id"]);
    if (ifNoneMatchMatches(headers["if-none-match"], entry.etag)) {
      res.writeHead(304, [...entry.notModifiedHeaderList, REQUEST_ID_HEADER, requestId]);
      res.end();
    } else {
      res.writeHead(200, [...entry.hitHeaderList, REQUEST_ID_HEADER, requestId]);
      res.end(method === "HEAD" ? undefined : entry.body);
    }
    recordRawRequest(metrics, ROUTE_HOT_PATH, req, res, start);
    return true;
  };
}
