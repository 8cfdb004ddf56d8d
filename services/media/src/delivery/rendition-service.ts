import { buffer } from "node:stream/consumers";
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import type { MediaRequest } from "@media-platform/contracts";
import { originalKey, StorageUnavailableError, type BlobStore } from "@media-platform/storage";
import { makeEntry, type CacheEntry } from "../cache/entry";
import type { MemoryCache } from "../cache/memory-cache";
import type { RedisCache } from "../cache/redis-cache";
import type { RenderInput, Rendition } from "../pipeline/render";
import { HttpProblem } from "../problem";
import type { MediaCounters } from "./counters";
import { RequestTimeoutError } from "./errors";
import type { Limiter } from "./limiter";
import { SingleFlight } from "./single-flight";

/**
 * Renders one request: decode the original, apply the steps, encode. The service injects
 * pipeline/render.ts with the real pixel workers and face detector; tests inject their own.
 */
export type RenderFn = (input: RenderInput, options: { signal: AbortSignal; deadline: number }) => Promise<Rendition>;

export interface RenditionServiceDeps {
  store: BlobStore;
  render: RenderFn;
  memory: MemoryCache;
  redis: RedisCache | undefined;
  limiter: Limiter;
  counters: MediaCounters;
  logger: Logger;
  requestTimeoutMs: number;
  maxEntryBytes: number;
}

export interface Delivery {
  entry: CacheEntry;
  /** MISS only for the request that ran the transformation (the single-flight leader). */
  xCache: "HIT" | "MISS";
}

interface FlightResult {
  entry: CacheEntry;
  /** This flight ran the transformation (as opposed to finding the result in Redis). */
  computed: boolean;
}

const POLL_START_MS = 10;
const POLL_MAX_MS = 200;

/**
 * The miss path below the hot path. Per cache key:
 *   1. in-process LRU (normally already answered by the hot path);
 *   2. single-flight: one flight per key in this process; followers answer HIT;
 *   3. inside the flight: Redis lookup; then a Redis lock (SET NX PX) so that only one
 *      replica computes: a replica that finds the lock taken polls for the result for at most
 *      half the request budget, then computes itself;
 *   4. compute in a limiter slot: blob read + render, within MEDIA_REQUEST_TIMEOUT_MS;
 *   5. store in both tiers (errors are never stored).
 * X-Cache: MISS exactly for the request whose flight ran the transformation, so the number of
 * MISS responses equals the number of transformations.
 */
export class RenditionService {
  private readonly flights = new SingleFlight<FlightResult>();

  constructor(private readonly deps: RenditionServiceDeps) {}

  get inFlight(): number {
    return this.flights.inFlight;
  }

  async deliver(key: string, request: MediaRequest): Promise<Delivery> {
    const cached = this.deps.memory.get(key);
    if (cached) {
      this.deps.counters.inc("hits_memory");
      return { entry: cached, xCache: "HIT" };
    }
    const { promise, leader } = this.flights.run(key, () => this.flight(key, request));
    if (!leader) this.deps.counters.inc("hits_shared");
    const result = await promise;
    const xCache = leader && result.computed ? "MISS" : "HIT";
    if (xCache === "MISS") this.deps.counters.inc("misses");
    return { entry: result.entry, xCache };
  }

  private async flight(key: string, request: MediaRequest): Promise<FlightResult> {
    const { requestTimeoutMs } = this.deps;
    const deadline = Date.now() + requestTimeoutMs;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new RequestTimeoutError(requestTimeoutMs)), requestTimeoutMs);
    timer.unref();
    const signal = controller.signal;
    try {
      return await raceAbort(this.resolve(key, request, signal, deadline), signal);
    } finally {
      clearTimeout(timer);
    }
  }

  private async resolve(
    key: string,
    request: MediaRequest,
    signal: AbortSignal,
    deadline: number,
  ): Promise<FlightResult> {
    const { redis } = this.deps;
    if (!redis) return this.compute(key, request, signal, deadline, undefined);

    const stored = await redis.get(key);
    if (stored) return this.fromRedis(key, stored.body, stored.contentType, "hits_redis");

    const waitUntil = Date.now() + this.deps.requestTimeoutMs / 2;
    let pollMs = POLL_START_MS;
    for (;;) {
      signal.throwIfAborted();
      const lock = await redis.tryLock(key, this.deps.requestTimeoutMs + 1000);
      if (lock.state === "unavailable") return this.compute(key, request, signal, deadline, undefined);
      if (lock.state === "acquired") {
        // Double-check: another replica may have stored the result just before we locked.
        const again = await redis.get(key);
        if (again) {
          await redis.unlock(key, lock.token);
          return this.fromRedis(key, again.body, again.contentType, "hits_peer");
        }
        return this.compute(key, request, signal, deadline, lock.token);
      }
      // Another replica is computing this URL: wait for its result (bounded).
      this.deps.counters.inc("lock_waits");
      while (Date.now() < waitUntil) {
        signal.throwIfAborted();
        await sleep(pollMs, undefined, { signal });
        pollMs = Math.min(pollMs * 2, POLL_MAX_MS);
        const peek = await redis.peek(key);
        if (!peek) return this.compute(key, request, signal, deadline, undefined);
        if (peek.result) return this.fromRedis(key, peek.result.body, peek.result.contentType, "hits_peer");
        if (!peek.locked) break; // the holder gave up (error or crash): try to take over
      }
      if (Date.now() >= waitUntil) return this.compute(key, request, signal, deadline, undefined);
    }
  }

  private fromRedis(key: string, body: Buffer, contentType: string, counter: "hits_redis" | "hits_peer"): FlightResult {
    this.deps.counters.inc(counter);
    const entry = makeEntry(body, contentType);
    this.deps.memory.set(key, entry);
    return { entry, computed: false };
  }

  private async compute(
    key: string,
    request: MediaRequest,
    signal: AbortSignal,
    deadline: number,
    lockToken: string | undefined,
  ): Promise<FlightResult> {
    const { redis } = this.deps;
    try {
      const rendition = await this.deps.limiter.run(async () => {
        signal.throwIfAborted();
        const blob = await this.deps.store.get(originalKey(request.assetId));
        if (!blob) {
          throw new HttpProblem(404, "asset-not-found", `No asset ${request.assetId} exists`, {
            title: "Asset not found",
          });
        }
        let original: Buffer;
        try {
          original = await buffer(blob.body);
        } catch (err) {
          // The store answered but the body broke off (connection reset, file vanished).
          throw new StorageUnavailableError(`reading ${originalKey(request.assetId)} failed`, { cause: err });
        }
        signal.throwIfAborted();
        this.deps.counters.inc("transformations");
        const started = performance.now();
        const result = await this.deps.render(
          { original, contentType: blob.contentType, steps: request.steps, cacheKey: key },
          { signal, deadline },
        );
        this.deps.logger.debug(
          { key, ms: Math.round(performance.now() - started), bytes: result.data.length },
          "transformed",
        );
        return result;
      }, signal);
      const entry = makeEntry(rendition.data, rendition.contentType);
      if (rendition.data.length <= this.deps.maxEntryBytes) this.deps.memory.set(key, entry);
      // Written before the lock is released, so a waiting replica finds it.
      if (redis) await redis.set(key, { body: rendition.data, contentType: rendition.contentType });
      return { entry, computed: true };
    } finally {
      if (redis && lockToken) await redis.unlock(key, lockToken);
    }
  }
}

/** Rejects with the signal's reason as soon as it aborts; the work itself runs on (its slot stays held). */
function raceAbort<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}
