import type { IncomingMessage, ServerResponse } from "node:http";
import { ifNoneMatchMatches } from "../cache/entry";
import type { MemoryCache } from "../cache/memory-cache";
import type { MediaCounters } from "./counters";
import type { UrlSigner } from "./signing";

/**
 * The HIT path: a bare node:http handler that runs before Express. For a GET/HEAD whose
 * request-target is in the in-process LRU it writes the stored bytes with precomputed headers
 * and returns true; anything else (miss, bad signature, other methods) returns false and the
 * request goes to the Express app. No URL parsing, no Redis, no Express.
 */
export function createHotPath(deps: {
  memory: MemoryCache;
  signer: UrlSigner | undefined;
  counters: MediaCounters;
}): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { memory, signer, counters } = deps;
  return (req, res) => {
    const method = req.method;
    if (method !== "GET" && method !== "HEAD") return false;
    const key = req.url;
    if (key === undefined) return false;
    const entry = memory.get(key);
    if (entry === undefined) return false;
    // Entries are only stored after a valid signature, but the key may have been rotated since.
    if (signer && signer.check(key) !== "ok") return false;
    counters.inc("hits_memory");
    if (ifNoneMatchMatches(req.headers["if-none-match"], entry.etag)) {
      counters.inc("not_modified");
      res.writeHead(304, entry.notModifiedHeaders);
      res.end();
      return true;
    }
    res.writeHead(200, entry.hitHeaders);
    res.end(method === "HEAD" ? undefined : entry.body);
    return true;
  };
}
