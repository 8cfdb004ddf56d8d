import type { IncomingMessage, ServerResponse } from "node:http";
import { mediaAssetIdOf } from "@media-platform/contracts";
import { recordRawRequest, REQUEST_ID_HEADER, resolveRequestId, ROUTE_HOT_PATH } from "@media-platform/observability";
import { ifNoneMatchMatches, type CacheEntry } from "../cache/entry";
import type { MemoryCache } from "../cache/memory-cache";
import type { MediaMetrics } from "../metrics";
import type { FormatNegotiator } from "../negotiation";
import { presetsOnlyGate } from "../presets";
import { queryRefused } from "./query-policy";
import type { RenditionService, SharedMiss } from "./rendition-service";
import type { UrlSigner } from "./signing";

/**
 * What the hot path does not answer goes on here, with its Redis-tier miss when it looked the
 * target up in Redis and found nothing (so the MISS path does not ask again).
 */
export type HotPathNext = (req: IncomingMessage, res: ServerResponse, sharedMiss?: SharedMiss) => void;

/** Answers the request, or hands it to `next` (the media route or the Express app). */
export type HotPath = (req: IncomingMessage, res: ServerResponse, next: HotPathNext) => void;

/**
 * The HIT path: a bare node:http handler that runs before Express. For a GET/HEAD whose
 * request-target is in the in-process LRU it writes the stored bytes with precomputed headers;
 * with Redis configured and connected, a target the LRU lacks is looked up in Redis (one round
 * trip, RenditionService.lookupShared) and a hit is answered the same way (and kept in the LRU).
 * Anything else (miss, bad signature, other methods) goes to `next`, the Express app. No URL
 * parsing (only the asset id is cut out of the target for the Redis key), no Express, no logger.
 *
 * Only targets that were valid, canonical and (when signing) signed are ever stored, so a hit
 * needs no parse; another spelling of a cached URL misses here and the media route answers it
 * from the canonical key. What can change between the store and the hit is checked again here: the
 * signature (key rotated, `exp` passed) and, for the Redis tier that other replicas write, this
 * replica's own URL policy (presets only, query strings refused); the Express path answers those.
 *
 * Observability stays allocation-light: the request id (X-Request-Id accepted or generated),
 * one memory-tier hit (or a memory-tier miss and a Redis-tier hit) on `media_cache_lookups_total`
 * and one latency sample under the route
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
  /** Cuts a response its client does not take in time (MEDIA_SEND_TIMEOUT_MS); unset = no limit. */
  guardSend?: (res: ServerResponse) => void;
  signer: UrlSigner | undefined;
  metrics: Pick<MediaMetrics, "cacheLookupSeries" | "observeHttp">;
  /** MEDIA_AUTO_FORMAT on: the key carries the Accept bucket and responses Vary: Accept. */
  negotiator?: FormatNegotiator;
  /** The Redis tier (unset: memory only), with this replica's URL policy. */
  shared?: { service: RenditionService; ready: () => boolean; presetsOnly: boolean; allowQuery: boolean };
}): HotPath {
  const { memory, signer, metrics, negotiator, shared, guardSend } = deps;
  const memoryHit = metrics.cacheLookupSeries("memory", "hit");
  const memoryMiss = metrics.cacheLookupSeries("memory", "miss");
  const redisHit = metrics.cacheLookupSeries("redis", "hit");

  const send = (
    req: IncomingMessage,
    res: ServerResponse,
    entry: CacheEntry,
    cacheControl: string | undefined,
    start: number,
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
    }
    recordRawRequest(metrics, ROUTE_HOT_PATH, req, res, start);
  };

  // The Redis tier, for a target the memory tier lacks: only when this replica would accept the
  // URL as it stands, and while Redis is connected (else the Express path's own lookup counts
  // the fault once).
  const fromShared = (
    req: IncomingMessage,
    res: ServerResponse,
    next: HotPathNext,
    target: string,
    cacheKey: string,
    start: number,
  ): void => {
    if (!shared?.ready()) return next(req, res);
    if (shared.presetsOnly && presetsOnlyGate(target, signer !== undefined)) return next(req, res);
    if (queryRefused(target.includes("?"), shared.allowQuery, signer !== undefined)) return next(req, res);
    const assetId = mediaAssetIdOf(target);
    if (assetId === undefined) return next(req, res);
    const verdict = signer?.verify(target);
    if (verdict && verdict.status !== "ok") return next(req, res);
    shared.service.lookupShared(cacheKey, assetId).then(
      (found) => {
        if (found === undefined) return next(req, res);
        if ("miss" in found) return next(req, res, found.miss);
        memoryMiss.inc();
        redisHit.inc();
        send(req, res, found.entry, verdict?.cacheControl, start);
      },
      () => next(req, res),
    );
  };

  return (req, res, next) => {
    const method = req.method;
    if (method !== "GET" && method !== "HEAD") return next(req, res);
    const target = req.url;
    if (target === undefined) return next(req, res);
    const start = performance.now();
    const cacheKey = negotiator ? negotiator.cacheKey(target, req.headers.accept) : target;
    const entry = memory.get(cacheKey);
    if (entry === undefined) return fromShared(req, res, next, target, cacheKey, start);
    // Entries are only stored after a valid signature, but the key may have been rotated since,
    // or its `exp` passed: the Express path answers those 403s.
    const verdict = signer?.verify(target);
    if (verdict && verdict.status !== "ok") return next(req, res);
    memoryHit.inc();
    send(req, res, entry, verdict?.cacheControl, start);
  };
}
