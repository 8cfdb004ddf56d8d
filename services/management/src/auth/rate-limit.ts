import type { RequestHandler } from "express";
import { Redis } from "ioredis";
import type { Logger } from "pino";
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from "rate-limiter-flexible";
import type { Principal } from "./keys";
import { problem } from "../problem";

/** The window RATE_LIMIT_REQUESTS_PER_MINUTE counts in. */
const WINDOW_SECONDS = 60;
const POLICY = "per-credential";

export interface RateLimitOptions {
  requestsPerMinute: number;
  /** REDIS_URL: counters shared by every replica; unset = counted in this process. */
  redisUrl?: string;
  redisKeyPrefix?: string;
  log?: Logger;
}

export interface RateLimit {
  middleware: RequestHandler;
  close(): Promise<void>;
}

/**
 * What a limit is counted per: an API key by its id, a token by workspace and subject (a token
 * without `sub` shares its workspace's count). One credential's burst never takes another's share.
 */
export const credentialOf = (p: Principal): string =>
  p.apiKeyId ? `key:${p.apiKeyId}` : `sub:${encodeURIComponent(p.workspaceId)}:${encodeURIComponent(p.userId ?? "")}`;

/**
 * Requests per credential and minute (fixed windows), in Redis when configured, with an
 * in-process limiter standing in while Redis is unreachable (a fault degrades the sharing across
 * replicas, never the service). Every answer carries `RateLimit-Policy` and `RateLimit`
 * (draft-ietf-httpapi-ratelimit-headers); beyond the limit 429 `rate-limited` with `Retry-After`.
 */
export function createRateLimit(options: RateLimitOptions): RateLimit {
  const points = options.requestsPerMinute;
  const memory = new RateLimiterMemory({ points, duration: WINDOW_SECONDS });
  let redis: Redis | undefined;
  let limiter: RateLimiterAbstract = memory;
  if (options.redisUrl) {
    redis = new Redis(options.redisUrl, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: 500,
      retryStrategy: (times) => Math.min(times * 200, 2000),
      // Untyped (default 2000 ms): how long disconnect() waits for a dead socket, keeping the process alive.
      ...({ disconnectTimeout: 100 } as object),
    });
    redis.on("error", (err: Error) => options.log?.warn({ err: err.message }, "rate limit: Redis unreachable"));
    limiter = new RateLimiterRedis({
      storeClient: redis,
      keyPrefix: `${options.redisKeyPrefix ?? "media-platform:"}ratelimit`,
      points,
      duration: WINDOW_SECONDS,
      rejectIfRedisNotReady: true,
      insuranceLimiter: memory,
    });
  }
  const policy = `"${POLICY}";q=${points};w=${WINDOW_SECONDS}`;
  const middleware: RequestHandler = (req, res, next) => {
    const principal = req.principal;
    if (!principal) {
      next();
      return;
    }
    res.setHeader("RateLimit-Policy", policy);
    limiter.consume(credentialOf(principal)).then(
      (r) => {
        res.setHeader("RateLimit", `"${POLICY}";r=${r.remainingPoints};t=${Math.ceil(r.msBeforeNext / 1000)}`);
        next();
      },
      (err: unknown) => {
        if (!(err instanceof RateLimiterRes)) {
          // Neither store answered: serve rather than refuse.
          options.log?.warn({ err }, "rate limit not counted");
          next();
          return;
        }
        const retryAfter = Math.max(1, Math.ceil(err.msBeforeNext / 1000));
        res.setHeader("RateLimit", `"${POLICY}";r=0;t=${retryAfter}`);
        next(
          problem(
            "rate-limited",
            `More than ${points} requests in a minute with this credential; retry in ${retryAfter} s`,
            { headers: { "Retry-After": String(retryAfter) } },
          ),
        );
      },
    );
  };
  return {
    middleware,
    async close() {
      redis?.disconnect();
    },
  };
}
