/**
 * Reference for the HIT path: the least a Node server can do to send the same bytes with the
 * same headers (BARE_HEADERS: the media service's HIT response headers as JSON, minus Date,
 * Connection, Keep-Alive and X-Request-Id). Like the service it echoes a fresh X-Request-Id
 * (randomUUID) and answers If-None-Match with a 304.
 *  - BODY_FILE: the bytes, read once (memory-tier reference);
 *  - BARE_REDIS_URL + BARE_REDIS_KEY instead: one Redis GET per request, then the bytes of the
 *    stored value after its "<content type>\n<etag>\n" prefix (Redis-tier reference, same value
 *    format as services/media/src/cache/redis-cache.ts).
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type ServerResponse } from "node:http";
import { Redis } from "ioredis";

const headers = JSON.parse(process.env.BARE_HEADERS!) as Record<string, string>;
const etag = headers.etag!;
const notModified: Record<string, string> = { etag, "cache-control": headers["cache-control"]!, "x-cache": "HIT" };
if (headers["x-content-type-options"]) notModified["x-content-type-options"] = headers["x-content-type-options"];

// Flat [name, value, ...] lists: writeHead's cheapest form (validated once, no header map).
const flat = (h: Record<string, string>) => Object.entries(h).flat();
const okList = flat(headers);
const notModifiedList = flat(notModified);

function send(ifNoneMatch: string | undefined, res: ServerResponse, body: Buffer): void {
  if (ifNoneMatch === etag) {
    res.writeHead(304, [...notModifiedList, "x-request-id", randomUUID()]);
    res.end();
  } else {
    res.writeHead(200, [...okList, "x-request-id", randomUUID()]);
    res.end(body);
  }
}

const port = Number(process.env.PORT);
if (process.env.BARE_REDIS_URL) {
  const redis = new Redis(process.env.BARE_REDIS_URL, { enableAutoPipelining: false });
  const key = process.env.BARE_REDIS_KEY!;
  createServer((req, res) => {
    redis.getBuffer(key).then(
      (value) => {
        if (!value) {
          res.writeHead(404).end();
          return;
        }
        // `<content type>\n<etag>\n<bytes>` (services/media/src/cache/redis-cache.ts): the bytes start after the ETag line.
        send(req.headers["if-none-match"], res, value.subarray(value.indexOf(10, value.indexOf(10) + 1) + 1));
      },
      () => res.writeHead(503).end(),
    );
  }).listen(port, "127.0.0.1");
} else {
  const body = readFileSync(process.env.BODY_FILE!);
  createServer((req, res) => send(req.headers["if-none-match"], res, body)).listen(port, "127.0.0.1");
}
