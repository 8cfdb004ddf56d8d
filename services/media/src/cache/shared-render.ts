import { setTimeout as sleep } from "node:timers/promises";
import type { MediaMetrics } from "../metrics";
import type { LockResult, RedisCache, StoredResult } from "./redis-cache";

/**
 * This replica's turn to render a key no replica has stored: `acquired` with the lock's token
 * when it holds the key's lock, `unavailable` when it renders without one (Redis down, the
 * holder vanished, or the wait ran out).
 */
export type RenderTurn = Extract<LockResult, { state: "acquired" | "unavailable" }>;

/** What SharedRender.claim answers: the result a replica stored, or this replica's turn. */
export type SharedClaim = StoredResult | RenderTurn;

/** A turn without the lock; one frozen value, so a MISS allocates nothing for it. */
const UNLOCKED: RenderTurn = Object.freeze({ state: "unavailable" });

const POLL_START_MS = 10;
const POLL_MAX_MS = 200;

export const isRenderTurn = (claim: SharedClaim): claim is RenderTurn => "state" in claim;

/**
 * The cross-replica protocol of one MISS, beside the Redis tier, so that one replica renders a
 * key while the others wait for its result: lock (SET NX PX), double-check after locking (a
 * replica may have stored the result just before), wait with bounded polls (peek: the result,
 * or whether the lock is still held), and take-over when the holder gives up or the wait (half
 * the request budget) runs out. The rendition service calls `claim` once, renders when it gets
 * a turn, then `publish`es the result and `release`s the turn.
 */
export class SharedRender {
  constructor(
    private readonly redis: RedisCache,
    private readonly metrics: Pick<MediaMetrics, "cacheLookup" | "count">,
    private readonly requestTimeoutMs: number,
  ) {}

  /**
   * `key` is the Redis key (`<shared generation>:<cache key>`); `stored` the flight's Redis-tier
   * lookup of it (counted here once; the double-check and polls are coordination reads, counted
   * as hits_peer / lock_waits). Throws the signal's reason when the flight is aborted.
   */
  async claim(key: string, stored: StoredResult | undefined, signal: AbortSignal): Promise<SharedClaim> {
    const { redis, metrics } = this;
    metrics.cacheLookup("redis", stored ? "hit" : "miss");
    if (stored) return stored;

    const waitUntil = Date.now() + this.requestTimeoutMs / 2;
    let pollMs = POLL_START_MS;
    for (;;) {
      signal.throwIfAborted();
      const lock = await redis.tryLock(key, this.requestTimeoutMs + 1000);
      if (lock.state === "unavailable") return lock;
      if (lock.state === "acquired") {
        const again = await redis.get(key);
        if (!again) return lock;
        await redis.unlock(key, lock.token);
        metrics.count("hits_peer");
        return again;
      }
      // Another replica is rendering this key: wait for its result (bounded).
      metrics.count("lock_waits");
      while (Date.now() < waitUntil) {
        signal.throwIfAborted();
        await sleep(pollMs, undefined, { signal });
        pollMs = Math.min(pollMs * 2, POLL_MAX_MS);
        const peek = await redis.peek(key);
        if (!peek) return UNLOCKED;
        if (peek.result) {
          metrics.count("hits_peer");
          return peek.result;
        }
        if (!peek.locked) break; // the holder gave up (error or crash): try to take over
      }
      if (Date.now() >= waitUntil) return UNLOCKED;
    }
  }

  /** Stores the turn's result, before the lock is released, so a waiting replica finds it. */
  publish(key: string, result: StoredResult, assetId: string, dependsOn?: readonly string[]): Promise<boolean> {
    return this.redis.set(key, result, assetId, dependsOn);
  }

  /**
   * Ends a turn, rendered or failed: the lock, when held, is released (its promise); a turn
   * without the lock has nothing to release (undefined: the MISS awaits nothing for it).
   */
  release(key: string, turn: RenderTurn): Promise<void> | undefined {
    return turn.state === "acquired" ? this.redis.unlock(key, turn.token) : undefined;
  }
}
