import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { LRUCache } from "lru-cache";
import type { Logger, Metrics } from "@media-platform/observability";

export interface RedisCacheOptions {
  url: string;
  /** Prefix of every key written (e.g. "media:"); results live at <prefix>r:<cache key>. */
  keyPrefix: string;
  /** Connect and command timeout; a Redis slower than this is treated as down. */
  timeoutMs: number;
  ttlSeconds: number;
  /** Results larger than this are not written. */
  maxEntryBytes: number;
  logger: Logger;
  /** Every failed command and connection error is counted as `dependency_errors_total{dependency="redis"}`. */
  metrics: Pick<Metrics, "dependencyError">;
  /** At most one fault log line per interval (default 30 s). */
  faultLogIntervalMs?: number;
}

export interface StoredResult {
  body: Buffer;
  contentType: string;
  /** The body's ETag, stored beside it so a Redis hit does not hash the body again. */
  etag?: string;
}

/** Result of a lock attempt: held by us (with its token), held by someone else, or Redis is down. */
export type LockResult = { state: "acquired"; token: string } | { state: "busy" } | { state: "unavailable" };

const NEWLINE = 0x0a;

/** Assets whose purge generation a process keeps (one short string each). */
const KNOWN_GENERATIONS = 100_000;

/** Stored results deleted per round trip by a purge (SSCAN COUNT and UNLINK arguments). */
const PURGE_BATCH = 1000;

/** The ETag line of the value layout: `"<base64url sha256>"` (cache/entry.ts etagOf; kept with the bytes, so a stored result keeps the ETag of the versions that made it). */
const ETAG_LINE = /^"[A-Za-z0-9_-]{43}"$/;

/**
 * One round trip for a Redis-tier lookup: the asset's purge generation (KEYS[1], "0" before its
 * first purge) and the value stored under `<value prefix><generation>:<cache key>`. The value key
 * is derived inside the script, so this needs a single Redis (not Redis Cluster), as the rest of
 * this tier does.
 */
const LOOKUP_SCRIPT = `local gen = redis.call("get", KEYS[1]) or "0"
return {gen, redis.call("get", ARGV[1] .. gen .. ":" .. ARGV[2])}`;

type LookupClient = Redis & {
  mediaLookupBuffer(genKey: string, valuePrefix: string, key: string): Promise<[Buffer, Buffer | null]>;
};

// Compare-and-delete: only the holder's token releases the lock (Redis docs, "SET" pattern).
const UNLOCK_SCRIPT = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`;

/**
 * The shared tier: results in Redis with a TTL, plus short per-key locks (SET NX PX) so that
 * several replicas compute a URL once. Every method resolves, never rejects: when Redis is
 * down the caller behaves as on a miss, the fault is counted and logged once per interval.
 *
 * Value layout: `<content type>\n<etag>\n<bytes>` under one key, so a result is written and
 * expires atomically with a single SET. Values written before the ETag line existed
 * (`<content type>\n<bytes>`) still read: an image never starts with the ETag's quote.
 */
export class RedisCache {
  readonly client: Redis;
  private lastFaultLog = 0;
  private suppressedFaults = 0;
  private closed = false;
  private readonly faultLogIntervalMs: number;
  /** Assets' purge generations read by lookup (see there); bounded, least recently used dropped. */
  private readonly knownGenerations = new LRUCache<string, string>({ max: KNOWN_GENERATIONS });
  /** Bumped by forgetGenerations: a lookup keeps the generation it read only if none came meanwhile. */
  private purgesHeard = 0;

  constructor(private readonly options: RedisCacheOptions) {
    this.faultLogIntervalMs = options.faultLogIntervalMs ?? 30_000;
    this.client = new Redis(options.url, {
      // Fail fast instead of queueing commands while disconnected: a request never waits for Redis.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      connectTimeout: Math.max(options.timeoutMs, 1000),
      commandTimeout: options.timeoutMs,
      // Keep reconnecting in the background, at most every 2 s.
      retryStrategy: (times) => Math.min(times * 200, 2000),
      lazyConnect: false,
      // Undocumented in the typings (default 2000): how long disconnect() waits for a dead
      // socket to close; with the default a closed client keeps the process alive for 2 s.
      ...({ disconnectTimeout: 100 } as object),
    });
    // Without a listener ioredis would report "Unhandled error event" on every failed reconnect.
    this.client.on("error", (err: Error) => this.fault("connection", err));
    this.client.defineCommand("mediaLookup", { numberOfKeys: 1, lua: LOOKUP_SCRIPT });
  }

  /** Whether the client is connected right now (for readiness; the cache works either way). */
  get ready(): boolean {
    return this.client.status === "ready";
  }

  /**
   * Resolves once connected, or once the first connection attempt failed or `timeoutMs`
   * passed: start-up waits this long at most, then serves with or without Redis.
   */
  waitReady(timeoutMs = Math.max(this.options.timeoutMs, 1000)): Promise<boolean> {
    if (this.client.status === "ready") return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.client.off("ready", done);
        this.client.off("error", done);
        this.client.off("end", done);
        resolve(this.client.status === "ready");
      };
      const timer = setTimeout(done, timeoutMs);
      timer.unref();
      this.client.once("ready", done);
      this.client.once("error", done);
      this.client.once("end", done);
    });
  }

  /**
   * Readiness: resolves when Redis answers PING, rejects otherwise (at once while disconnected:
   * the offline queue is off). Not counted as a fault: /readyz reports it.
   */
  async ping(): Promise<void> {
    await this.client.ping();
  }

  private valueKey(key: string): string {
    return `${this.options.keyPrefix}r:${key}`;
  }

  private lockKey(key: string): string {
    return `${this.options.keyPrefix}lock:${key}`;
  }

  private generationKey(assetId: string): string {
    return `${this.options.keyPrefix}gen:${assetId}`;
  }

  private assetKeysKey(assetId: string): string {
    return `${this.options.keyPrefix}keys:${assetId}`;
  }

  private get purgeChannel(): string {
    return `${this.options.keyPrefix}purge`;
  }

  /**
   * The asset's generation and the result stored for `key` under it, in one round trip (the
   * lookup of every Redis-tier request). Undefined when Redis is down.
   *
   * The first lookup of an asset runs the script that reads both; its generation is then kept
   * (knownGenerations) and later lookups are a plain GET of `<generation>:<key>`: the script costs
   * Redis ~50 µs per call with a 36 KB value, a GET ~1 µs. A kept generation is forgotten on every
   * purge this process hears of (forgetGenerations: its own, other replicas' over pub/sub, all of
   * them after a missed pub/sub window), so it is as fresh as the memory tier.
   */
  async lookup(
    assetId: string,
    key: string,
  ): Promise<{ generation: string; result: StoredResult | undefined } | undefined> {
    try {
      const known = this.knownGenerations.get(assetId);
      if (known !== undefined) {
        return { generation: known, result: decode(await this.client.getBuffer(this.valueKey(`${known}:${key}`))) };
      }
      const purges = this.purgesHeard;
      const [raw, value] = await (this.client as LookupClient).mediaLookupBuffer(
        this.generationKey(assetId),
        this.valueKey(""),
        key,
      );
      const generation = raw.toString("latin1");
      // Kept only when no purge was heard meanwhile: the value read may predate it.
      if (purges === this.purgesHeard) this.knownGenerations.set(assetId, generation);
      return { generation, result: decode(value) };
    } catch (err) {
      this.fault("lookup", err);
      return undefined;
    }
  }

  /** Drops the kept generations of these assets (a purge), or of every asset (no argument). */
  forgetGenerations(assetIds?: readonly string[]): void {
    this.purgesHeard++;
    if (!assetIds) this.knownGenerations.clear();
    else for (const id of assetIds) this.knownGenerations.delete(id);
  }

  /**
   * The asset's shared generation, bumped by every purge and part of its Redis cache keys, so a
   * purge makes every old entry unreachable at once. Undefined when Redis is down.
   */
  async generation(assetId: string): Promise<string | undefined> {
    try {
      return (await this.client.get(this.generationKey(assetId))) ?? "0";
    } catch (err) {
      this.fault("generation", err);
      return undefined;
    }
  }

  /**
   * Purge: bump each asset's generation, tell every replica (pub/sub) to drop its memory
   * entries, then delete its stored results. Rejects when Redis is down, so the purge call fails
   * and management retries it.
   *
   * The bump and the broadcast are the purge (the old entries are unreachable from then on); the
   * deletion only frees memory. Each key set is renamed aside in the same transaction as the bump
   * (entries stored under the new generation start a new set) and read back in SSCAN batches, so
   * an asset with any number of variants never becomes one reply or one argument list.
   */
  async purgeAssets(assetIds: readonly string[]): Promise<void> {
    const draining = assetIds.map((id) => `${this.assetKeysKey(id)}:purge:${randomUUID()}`);
    const bump = this.client.multi();
    assetIds.forEach((id, i) => {
      bump.incr(this.generationKey(id));
      bump.renamenx(this.assetKeysKey(id), draining[i]!);
      // A purge cut short leaves no set behind for longer than its entries live.
      bump.expire(draining[i]!, this.options.ttlSeconds);
    });
    const replies = (await bump.exec()) ?? [];
    // A lookup between the caller's forgetGenerations and the INCR may have kept the old one.
    this.forgetGenerations(assetIds);
    for (const [err] of replies) {
      // RENAMENX of an asset with no stored result answers "no such key": nothing to delete.
      if (err && !/no such key/i.test(err.message)) throw err;
    }
    await this.client.publish(this.purgeChannel, JSON.stringify(assetIds));
    for (const key of draining) await this.deleteMembers(key);
  }

  /** Unlinks every key listed in the set `key`, PURGE_BATCH at a time, then the set. */
  private async deleteMembers(key: string): Promise<void> {
    let cursor = "0";
    do {
      const [next, members] = await this.client.sscan(key, cursor, "COUNT", PURGE_BATCH);
      // Members are the full keys of the stored results (see set).
      if (members.length > 0) await this.client.unlink(...members);
      cursor = next;
    } while (cursor !== "0");
    await this.client.unlink(key);
  }

  private subscriber: Redis | undefined;

  /**
   * Listens for purges published by any replica. `onResync` runs when the subscription comes
   * back after a disconnect (purges may have been missed meanwhile).
   */
  onPurge(handler: (assetIds: string[]) => void, onResync: () => void): void {
    // A connection of its own (a subscribed connection cannot run other commands); unlike the
    // cache client it queues the SUBSCRIBE until connected and resubscribes after reconnects.
    const sub = this.client.duplicate({ enableOfflineQueue: true, commandTimeout: undefined, lazyConnect: false });
    this.subscriber = sub;
    let connections = 0;
    sub.on("error", (err: Error) => this.fault("subscribe", err));
    sub.on("ready", () => {
      if (++connections > 1) onResync();
    });
    sub.on("message", (channel: string, message: string) => {
      if (channel !== this.purgeChannel) return;
      try {
        const ids: unknown = JSON.parse(message);
        if (Array.isArray(ids)) handler(ids.filter((id): id is string => typeof id === "string"));
      } catch (err) {
        this.options.logger.warn({ err }, "ignored a malformed purge message");
      }
    });
    sub.subscribe(this.purgeChannel).catch((err: unknown) => this.fault("subscribe", err));
  }

  private fault(operation: string, err: unknown): void {
    if (this.closed) return;
    this.options.metrics.dependencyError("redis");
    const now = Date.now();
    if (now - this.lastFaultLog >= this.faultLogIntervalMs) {
      this.options.logger.warn(
        { err, operation, suppressed: this.suppressedFaults },
        "redis unavailable: serving without the shared cache",
      );
      this.lastFaultLog = now;
      this.suppressedFaults = 0;
    } else {
      this.suppressedFaults++;
    }
  }

  async get(key: string): Promise<StoredResult | undefined> {
    try {
      return decode(await this.client.getBuffer(this.valueKey(key)));
    } catch (err) {
      this.fault("get", err);
      return undefined;
    }
  }

  /**
   * Stores a result with the TTL; skipped (returns false) above maxEntryBytes or when Redis is down.
   * With `assetId` the key is also added to the asset's key set (and to those of `dependsOn`, the
   * overlays it shows), so a purge of any of them deletes it.
   */
  async set(key: string, result: StoredResult, assetId?: string, dependsOn: readonly string[] = []): Promise<boolean> {
    if (result.body.length > this.options.maxEntryBytes) return false;
    try {
      const head = result.etag ? `${result.contentType}\n${result.etag}\n` : `${result.contentType}\n`;
      const value = Buffer.concat([Buffer.from(head, "latin1"), result.body]);
      const ttl = this.options.ttlSeconds;
      if (assetId) {
        const multi = this.client.multi().set(this.valueKey(key), value, "EX", ttl);
        // In the key set of the asset and of every asset it shows: a purge of any deletes it.
        for (const id of [assetId, ...dependsOn]) {
          const keys = this.assetKeysKey(id);
          multi.sadd(keys, this.valueKey(key)).expire(keys, ttl);
        }
        await multi.exec();
      } else {
        await this.client.set(this.valueKey(key), value, "EX", ttl);
      }
      return true;
    } catch (err) {
      this.fault("set", err);
      return false;
    }
  }

  async tryLock(key: string, ttlMs: number): Promise<LockResult> {
    const token = randomUUID();
    try {
      const ok = await this.client.set(this.lockKey(key), token, "PX", Math.max(1, Math.ceil(ttlMs)), "NX");
      return ok === "OK" ? { state: "acquired", token } : { state: "busy" };
    } catch (err) {
      this.fault("lock", err);
      return { state: "unavailable" };
    }
  }

  async unlock(key: string, token: string): Promise<void> {
    try {
      await this.client.eval(UNLOCK_SCRIPT, 1, this.lockKey(key), token);
    } catch (err) {
      this.fault("unlock", err);
    }
  }

  /** One round trip: the stored result (if any) and whether someone still holds the lock. */
  async peek(key: string): Promise<{ result: StoredResult | undefined; locked: boolean } | undefined> {
    try {
      const replies = await this.client.pipeline().getBuffer(this.valueKey(key)).exists(this.lockKey(key)).exec();
      if (!replies) return undefined;
      const [[valueErr, value], [lockErr, locked]] = replies as [[Error | null, Buffer | null], [Error | null, number]];
      if (valueErr || lockErr) throw valueErr ?? lockErr;
      return { result: decode(value), locked: locked === 1 };
    } catch (err) {
      this.fault("peek", err);
      return undefined;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.subscriber?.disconnect();
    try {
      if (this.client.status === "ready") await this.client.quit();
      else this.client.disconnect();
    } catch {
      this.client.disconnect();
    }
  }
}

function decode(value: Buffer | null): StoredResult | undefined {
  if (!value) return undefined;
  const nl = value.indexOf(NEWLINE);
  if (nl <= 0) return undefined;
  const contentType = value.subarray(0, nl).toString("latin1");
  const next = value.indexOf(NEWLINE, nl + 1);
  if (next > nl && value[nl + 1] === 0x22) {
    const etag = value.subarray(nl + 1, next).toString("latin1");
    if (ETAG_LINE.test(etag)) return { contentType, etag, body: value.subarray(next + 1) };
  }
  return { contentType, body: value.subarray(nl + 1) };
}
