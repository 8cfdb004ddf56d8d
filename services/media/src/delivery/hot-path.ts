import type { IncomingMessage, ServerResponse } from "node:http";
import type { UsageReporter } from "../usage/usage-reports";
import { recordRawRequest, REQUEST_ID_HEADER, resolveRequestId, ROUTE_HOT_PATH } from "@media-platform/observability";
import { ifNoneMatchMatches, type CacheEntry } from "../cache/entry";
import type { MemoryCache } from "../cache/memory-cache";
import type { MediaMetrics } from "../metrics";
import type { FormatNegotiator } from "../negotiation";
import { renditionKey } from "./admission";
import type { UrlSigner } from "./signing";

/**
 * What the hot path does not answer goes on here. `memoryKey`: the key it looked up in the memory
 * tier and did not find (so the miss path does not ask again); `start`: when the request began.
 */
export type HotPathNext = (req: IncomingMessage, res: ServerResponse, memoryKey?: string, start?: number) => void;

/** Answers the request, or hands it to `next` (the media route or the Express app). */
export type HotPathHandler = (req: IncomingMessage, res: ServerResponse, next: HotPathNext) => void;

/** An entry served without Express: a memory-tier hit, or a Redis-tier hit the media route found. */
export interface HotAnswer {
  req: IncomingMessage;
  res: ServerResponse;
  entry: CacheEntry;
  /** A per-URL Cache-Control (expiring signature); undefined: the entry's. */
  cacheControl: string | undefined;
  /** performance.now() when the request began. */
  start: number;
}

export interface HotPath {
  /** The memory tier, first stage of every request (server.ts). */
  handle: HotPathHandler;
  /** Answers a Redis-tier hit the way a memory hit is answered (route `hot_path`), counted as both lookups. */
  answerShared(answer: HotAnswer): void;
}

/**
 * The HIT path: a bare node:http handler that runs before Express. For a GET/HEAD whose
 * request-target is in the in-process LRU it writes the stored bytes with precomputed headers.
 * Anything else (miss, bad signature, other methods) goes to `next`. No URL parsing, no Express,
 * no logger. A Redis-tier hit is found after admission (the media route, app.ts) and answered
 * here the same way.
 *
 * Only targets that were valid, canonical and (when signing) signed are ever stored, so a hit
 * needs no parse; another spelling of a cached URL misses here and the media route answers it
 * from the canonical key. What can change between the store and the hit is checked again here: the
 * signature (key rotated, `exp` passed); the media route answers those.
 *
 * Observability stays allocation-light: the request id (X-Request-Id accepted or generated),
 * one memory-tier hit (or a memory-tier miss and a Redis-tier hit) on `media_cache_lookups_total`
 * and one latency sample under the route
 * label `hot_path` (pre-resolved series, no label objects). The head goes out in one writeHead
 * with the entry's precomputed header list plus the request id: no setHeader, so Node validates
 * each header once and builds no header map.
 * A lookup that misses here (or that the signature declines) is not counted: the request
 * continues to the media route, which counts the memory-tier miss (RenditionService.deliver)
 * once it is known to be a valid media URL (so /metrics scrapes and other routes never count as
 * cache misses). Either way a request counts one memory-tier lookup.
 */
export function createHotPath(deps: {
  memory: MemoryCache;
  /** Cuts a response its client does not take in time (MEDIA_SEND_TIMEOUT_MS); unset = no limit. */
  guardSend?: (res: ServerResponse) => void;
  signer: UrlSigner | undefined;
  metrics: Pick<MediaMetrics, "cacheLookupSeries" | "observeHttp">;
  /** MEDIA_AUTO_FORMAT on: the key carries the Accept bucket and responses Vary: Accept. */
  negotiator?: FormatNegotiator;
  /** Counts the bytes sent per asset (usage/usage-reports.ts); unset = not counted. */
  usage?: Pick<UsageReporter, "sent">;
}): HotPath {
  const { memory, signer, metrics, negotiator, guardSend, usage } = deps;
  const memoryHit = metrics.cacheLookupSeries("memory", "hit");
  const memoryMiss = metrics.cacheLookupSeries("memory", "miss");
  const redisHit = metrics.cacheLookupSeries("redis", "hit");

  const send = (
    req: IncomingMessage,
    res: ServerResponse,
    entry: CacheEntry,
    cacheControl: string | undefined,
  ) => {
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
      res.end(req.method === "HEAD" ? undefined : entry.body);
      guardSend?.(res);
      if (req.method !== "HEAD") usage?.sent(entry.assetId, entry.body.length);
    }
  };

  return {
    handle: (req, res, next) => {
      const method = req.method;
      if (method !== "GET" && method !== "HEAD") return next(req, res);
      const target = req.url;
      if (target === undefined) return next(req, res);
      const start = performance.now();
      const cacheKey = negotiator ? renditionKey(target, negotiator.bucket(req.headers.accept)) : target;
      const entry = memory.get(cacheKey);
      if (entry === undefined) return next(req, res, cacheKey, start);
      // Entries are only stored after a valid signature, but the key may have been rotated since,
      // or its `exp` passed: the media route answers those 403s.
      const verdict = signer?.verify(target);
      if (verdict && verdict.status !== "ok") return next(req, res);
      memoryHit.inc();
      send(req, res, entry, verdict?.cacheControl);
      // Before the direct entry: no request span exists yet (traceRequests starts it there).
      recordRawRequest(metrics, ROUTE_HOT_PATH, req, res, start, false);
    },
    answerShared({ req, res, entry, cacheControl, start }) {
      memoryMiss.inc();
      redisHit.inc();
      send(req, res, entry, cacheControl);
      recordRawRequest(metrics, ROUTE_HOT_PATH, req, res, start);
    },
  };
}
