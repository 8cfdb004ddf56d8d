import { buffer } from "node:stream/consumers";
import type { Logger } from "@media-platform/observability";
import {
  assetAttributesSchema,
  originalHeaderFields,
  ORIGINAL_WORKSPACE_METADATA,
  renderingSourceOf,
  storedOriginalHeader,
  type OriginalHeader,
  type FocalPoint,
  type TransformationStep,
} from "@media-platform/contracts";
import {
  attributesKey,
  originalKey,
  StorageUnavailableError,
  type BlobObject,
  type BlobStore,
} from "@media-platform/storage";
import { cacheControlFor, makeEntry, type CacheEntry, type CachePolicy } from "../cache/entry";
import type { AssetPurger } from "../purge/asset-purger";
import type { MemoryCache } from "../cache/memory-cache";
import type { RedisCache, StoredResult } from "../cache/redis-cache";
import { isRenderTurn, SharedRender, type RenderTurn } from "../cache/shared-render";
import type { MediaMetrics } from "../metrics";
import { usesFocalPoint } from "../render/pipeline/plan";
import type { RenderFn, Rendition } from "../render/pipeline/render";
import { OriginalSource } from "../render/pipeline/original";
import { UndecodableImageError, undecodableOriginal } from "../render/errors";
import { overlayAssets } from "../render/transformations/overlay";
import type { AdmittedRequest } from "./admission";
import { AssetNotFoundError } from "./asset-not-found";
import { RequestTimeoutError } from "./errors";
import { admitWork, type ClientShare } from "./client-share";
import { activeSpan, inSpan } from "@media-platform/observability";
import { renderQueued, tracedRender } from "./delivery-spans";
import { ResultSizeLimit } from "./result-size";
import type { Limiter, Slot, WorkGate } from "./limiter";
import { SingleFlight, type Departure } from "./single-flight";

/** The series the miss path records (metrics.ts lists what is counted where). */
export type DeliveryMetrics = Pick<
  MediaMetrics,
  "cacheLookup" | "singleFlightJoin" | "dependencyError" | "observeTransformation" | "count"
>;

export interface RenditionServiceDeps {
  store: BlobStore;
  render: RenderFn;
  memory: MemoryCache;
  redis: RedisCache | undefined;
  limiter: Limiter;
  /** Pixels of work in flight across renders; omitted = unbounded. */
  gate?: WorkGate;
  /** Per-client share of the gate's capacity (MEDIA_CLIENT_SHARE); omitted = no per-client bound. */
  clients?: ClientShare;
  metrics: DeliveryMetrics;
  /** Service logger; a request's own child logger (with its request id) is passed to deliver(). */
  logger: Logger;
  requestTimeoutMs: number;
  /** MEDIA_MAX_RESULT_BYTES: larger results are refused (delivery/result-size.ts). */
  maxResultBytes: number;
  /** Change propagation (purge/asset-purger.ts); without it nothing is ever purged (tests). */
  purger?: AssetPurger;
  /** Cache-Control of unversioned URLs. */
  cachePolicy?: CachePolicy;
  /**
   * MEDIA_REDACT_FACES_ALWAYS: every render ends with face redaction. The server keys the Redis
   * tier apart while it is on (server.ts), so no rendition made without it is ever served.
   */
  redactFacesAlways?: boolean;
}

const REDACT_FACES: TransformationStep = Object.freeze({ name: "redact", params: Object.freeze({ faces: "true" }) });

/** The steps a render runs: the request's, then face redaction when it is forced and not asked already. */
export function stepsToRender(steps: readonly TransformationStep[], redactFacesAlways: boolean): TransformationStep[] {
  const asked = steps.some((s) => s.name === "redact" && s.params.faces === "true");
  return redactFacesAlways && !asked ? [...steps, REDACT_FACES] : [...steps];
}

/** What a rendition is delivered for: the admitted request's fields the miss path reads. */
export type DeliveryRequest = Pick<AdmittedRequest, "key" | "assetId" | "steps" | "convertTo" | "client">;

/**
 * A Redis-tier lookup that found no result for `key`: the generation it read. The media route
 * hands it on with the request, so the flight it leads does not ask Redis the same question again
 * microseconds later (the lock's double-check still catches a result stored meanwhile).
 */
export interface SharedMiss {
  key: string;
  generation: string;
}

/** How one request asks for its rendition, besides what it asks for. */
export interface DeliveryCall {
  /** The request's logger (its request id), so the render of a MISS traces to its request. */
  log?: Logger;
  /** The client's departure (it disconnected): the flight stops once no client waits. */
  departure?: Departure;
  /** The hot path looked the key up in the memory tier and missed (counted here, not asked again). */
  memoryMissed?: boolean;
  /** The media route's Redis-tier lookup of the key, when it found nothing. */
  sharedMiss?: SharedMiss;
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

/**
 * One flight's record, carried through the miss path: what it renders, for whom, until when, and
 * where its result is stored (memory under the URL, Redis under the asset's generation + URL).
 */
interface Flight {
  key: string;
  assetId: string;
  /** Assets the rendition shows besides its own (overlays): purged with them. */
  dependsOn: readonly string[];
  /** The local generations of the asset and its overlays when the flight started. */
  generation: string;
  /** `<shared generation>:<key>` once known; equal to `key` while Redis is off or down (not written). */
  redisKey: string;
  request: DeliveryRequest;
  /** The request's logger (its request id), so the render of a MISS traces to its request. */
  log: Logger;
  /** The flight's signal: aborted when no client waits any more, or by the timeout. */
  signal: AbortSignal;
  deadline: number;
}

/** What a flight renders from, read in its slot. */
interface RenderInputs {
  blob: BlobObject;
  focalPoint: FocalPoint | undefined;
  /** Originals of the overlay assets, by id. */
  overlays: ReadonlyMap<string, Buffer> | undefined;
  /** The flight's transformation slot, given up while a heavy render waits in the work gate. */
  slot: Slot;
}

/**
 * The miss path below the hot path. Per cache key:
 *   1. in-process LRU (normally already answered by the hot path);
 *   2. single-flight: one flight per key in this process; followers answer HIT;
 *   3. inside the flight: Redis lookup; then SharedRender.claim (cache/shared-render.ts), so
 *      that only one replica computes: a replica that finds the lock taken polls for the result
 *      for at most half the request budget, then computes itself;
 *   4. compute in a limiter slot: blob read + render, within MEDIA_REQUEST_TIMEOUT_MS;
 *   5. store in both tiers (errors are never stored).
 * X-Cache: MISS exactly for the request whose flight ran the transformation, so the number of
 * MISS responses equals the number of transformations.
 */
export class RenditionService {
  private readonly flights = new SingleFlight<FlightResult>();
  /** The cross-replica protocol of a MISS; undefined without Redis. */
  private readonly shared: SharedRender | undefined;
  /** Results above MEDIA_MAX_RESULT_BYTES are refused (delivery/result-size.ts). */
  private readonly resultSize: ResultSizeLimit;

  constructor(private readonly deps: RenditionServiceDeps) {
    this.resultSize = new ResultSizeLimit(deps.maxResultBytes);
    this.shared = deps.redis && new SharedRender(deps.redis, deps.metrics, deps.requestTimeoutMs);
  }

  get inFlight(): number {
    return this.flights.inFlight;
  }

  /**
   * The rendition of an admitted request. `call.log`: the request's logger (bound to its request
   * id); the flight this request leads logs with it, so the render of a MISS can be traced to the
   * request that caused it.
   */
  async deliver(request: DeliveryRequest, call: DeliveryCall = {}): Promise<Delivery> {
    const { metrics } = this.deps;
    const { key } = request;
    // One memory-tier lookup per valid media request: the hot path's, when it asked for this key.
    if (call.memoryMissed) {
      metrics.cacheLookup("memory", "miss");
    } else {
      const cached = this.deps.memory.get(key);
      metrics.cacheLookup("memory", cached ? "hit" : "miss");
      if (cached) return { entry: cached, xCache: "HIT" };
    }
    // A purge changes the local generation: later requests start a new flight instead of joining
    // one that may be rendering the old original.
    const dependsOn = overlayAssets(request.steps);
    const generation = this.generationOf(request.assetId, dependsOn);
    this.resultSize.checkRemembered(`${generation}|${key}`);
    const log = call.log ?? this.deps.logger;
    const sharedMiss = call.sharedMiss?.key === key ? call.sharedMiss : undefined;
    const { promise, leader } = this.flights.run(
      `${generation}|${key}`,
      (signal, abort) =>
        this.flight(
          { key, assetId: request.assetId, dependsOn, generation, redisKey: key, request, log, signal, deadline: 0 },
          abort,
          sharedMiss,
        ),
      call.departure,
    );
    if (!leader) metrics.singleFlightJoin();
    const result = await promise;
    const xCache = leader && result.computed ? "MISS" : "HIT";
    if (xCache === "MISS") metrics.count("misses");
    activeSpan()?.setAttribute("media.cache", xCache);
    return { entry: result.entry, xCache };
  }

  /** The stored original of `assetId`: a store failure is counted, a missing one is AssetNotFoundError. */
  private async originalBlob(assetId: string): Promise<BlobObject> {
    let blob: BlobObject | null;
    try {
      blob = await this.deps.store.get(originalKey(assetId));
    } catch (err) {
      if (err instanceof StorageUnavailableError) this.deps.metrics.dependencyError("storage");
      throw err;
    }
    if (!blob) throw new AssetNotFoundError(assetId);
    return blob;
  }

  /**
   * What a render reads for an asset: its original, or, when the original's blob metadata names
   * a rendering source (HEIC, camera RAW: a JPEG made at upload), that source, the original
   * released. A source that is gone (a delete in progress) is AssetNotFoundError, as the original.
   */
  private async renderable(assetId: string, original: BlobObject | null): Promise<BlobObject | null> {
    const sourceKey = original ? renderingSourceOf(original.metadata) : undefined;
    if (!original || !sourceKey) return original;
    original.release();
    const source = await this.deps.store.get(sourceKey);
    if (!source) throw new AssetNotFoundError(assetId);
    return source;
  }

  /**
   * The original's header facts and content type, without reading its pixels (GET /info): the
   * facts stored with the blob, else read from the start of its bytes.
   */
  async originalHeader(assetId: string): Promise<{ header: OriginalHeader; contentType: string }> {
    const blob = await this.originalBlob(assetId);
    try {
      const stored = storedOriginalHeader(blob.metadata);
      // With a rendering source, the header is the source's, and so is the format renders start from.
      const contentType = renderingSourceOf(blob.metadata) ? "image/jpeg" : blob.contentType;
      if (stored) return { header: stored, contentType };
      const source = new OriginalSource(bodyChunks(blob.body, () => `reading ${originalKey(assetId)} failed`));
      try {
        const meta = await source.metadata({ failOn: "error", autoOrient: true });
        return { header: originalHeaderFields(meta) as OriginalHeader, contentType: blob.contentType };
      } catch (err) {
        if (err instanceof StorageUnavailableError) throw err;
        throw new UndecodableImageError(
          undecodableOriginal(err instanceof Error ? err.message.split("\n", 1)[0]! : String(err)),
        );
      } finally {
        await source.close();
      }
    } finally {
      blob.release();
    }
  }

  /** Redis is configured and connected: the media route asks the Redis tier before a flight. */
  get sharedReady(): boolean {
    return this.deps.redis?.ready === true;
  }

  /**
   * The Redis tier alone, for the media route: the result stored for the request's key under the
   * asset's current generation, kept in the memory tier as a Redis hit of `deliver` would be; or,
   * when Redis has none, the miss to hand to deliver. Undefined while Redis is down. Counts
   * nothing (the route counts what it answers, the flight the lookup it was handed).
   */
  async lookupShared(request: DeliveryRequest): Promise<{ entry: CacheEntry } | { miss: SharedMiss } | undefined> {
    const { redis } = this.deps;
    if (!redis) return undefined;
    const { key, assetId } = request;
    const dependsOn = overlayAssets(request.steps);
    const generation = this.generationOf(assetId, dependsOn);
    const found = await redis.lookup(assetId, key);
    if (found === undefined) return undefined;
    if (found.result === undefined) return { miss: { key, generation: found.generation } };
    return { entry: this.fromRedis({ key, assetId, dependsOn, generation }, found.result).entry };
  }

  /** The local purge generations of an asset and of the overlays it shows, as one token. */
  private generationOf(assetId: string, dependsOn: readonly string[]): string {
    const purger = this.deps.purger;
    if (!purger) return "";
    const own = purger.localGeneration(assetId);
    return dependsOn.length ? [own, ...dependsOn.map((id) => purger.localGeneration(id))].join("/") : own;
  }

  private async flight(
    flight: Flight,
    abort: (reason: unknown) => void,
    sharedMiss: SharedMiss | undefined,
  ): Promise<FlightResult> {
    const { requestTimeoutMs } = this.deps;
    flight.deadline = Date.now() + requestTimeoutMs;
    // The timeout aborts the flight (SingleFlight rejects its callers at once): one signal for
    // both ways a flight ends (no second controller following the first: each costs an
    // EventTarget and a listener per MISS).
    const timer = setTimeout(() => abort(new RequestTimeoutError(requestTimeoutMs)), requestTimeoutMs);
    timer.unref();
    try {
      return await this.resolve(flight, sharedMiss);
    } finally {
      clearTimeout(timer);
    }
  }

  private async resolve(flight: Flight, sharedMiss: SharedMiss | undefined): Promise<FlightResult> {
    const { redis } = this.deps;
    const shared = this.shared;
    if (!redis || !shared) return this.compute(flight, undefined);
    // The asset's shared generation is part of the Redis key: a purge (INCR) orphans old results.
    // One round trip reads it and the result stored under it, unless the hot path just did.
    const found = sharedMiss
      ? { generation: sharedMiss.generation, result: undefined }
      : await inSpan("media.cache.redis", undefined, () => redis.lookup(flight.assetId, flight.key));
    if (found === undefined) return this.compute(flight, undefined);
    flight.redisKey = `${found.generation}:${flight.key}`;
    const claim = await inSpan("media.cache.claim", undefined, () =>
      shared.claim(flight.redisKey, found.result, flight.signal),
    );
    return isRenderTurn(claim) ? this.compute(flight, claim) : this.fromRedis(flight, claim);
  }

  private fromRedis(
    store: Pick<Flight, "key" | "assetId" | "dependsOn" | "generation">,
    stored: StoredResult,
  ): FlightResult {
    const entry = this.entryFor(store, stored.body, stored.contentType, stored.etag);
    this.remember(store, entry);
    return { entry, computed: false };
  }

  private entryFor(
    store: Pick<Flight, "key" | "assetId" | "dependsOn">,
    body: Buffer,
    contentType: string,
    etag?: string,
  ): CacheEntry {
    return makeEntry(body, contentType, etag, {
      assetId: store.assetId,
      dependsOn: store.dependsOn,
      cacheControl: cacheControlFor(store.key, this.deps.cachePolicy),
    });
  }

  /** Into the memory tier, unless the asset was purged while this flight ran (its result may be stale). */
  private remember(store: Pick<Flight, "key" | "assetId" | "dependsOn" | "generation">, entry: CacheEntry): void {
    if (this.generationOf(store.assetId, store.dependsOn) !== store.generation) return;
    this.deps.memory.set(store.key, entry);
  }

  /**
   * Renders the flight in a limiter slot and stores the result in both tiers. `turn`: this
   * replica's turn from SharedRender.claim (the result is published, then the turn released,
   * whatever happened); undefined when Redis is off or down (nothing is written there).
   */
  private async compute(flight: Flight, turn: RenderTurn | undefined): Promise<FlightResult> {
    const { request, signal, log } = flight;
    const shared = turn && this.shared;
    try {
      const queued = renderQueued();
      const rendition = await this.deps.limiter.run(async (slot) => {
        queued?.();
        signal.throwIfAborted();
        const { blob, focalPoint } = await inSpan("media.original.open", undefined, () =>
          this.readInputs(request, log),
        );
        if (!blob) throw new AssetNotFoundError(request.assetId);
        try {
          const overlays = await this.readOverlays(flight.dependsOn, blob.metadata);
          return await this.renderBlob({ blob, focalPoint, overlays, slot }, flight);
        } finally {
          // Whatever happened, the body (and the descriptor blob.read uses) is released, once
          // libvips is done with it (the render has ended, so no read is in flight).
          blob.release();
        }
      }, signal);
      this.resultSize.check(`${flight.generation}|${flight.key}`, rendition.data.length);
      const entry = this.entryFor(flight, rendition.data, rendition.contentType);
      this.remember(flight, entry);
      // Written before the lock is released, so a waiting replica finds it.
      if (shared) {
        await shared.publish(
          flight.redisKey,
          { body: rendition.data, contentType: rendition.contentType, etag: entry.etag },
          flight.assetId,
          flight.dependsOn,
        );
      }
      return { entry, computed: true };
    } finally {
      const released = shared && turn && shared.release(flight.redisKey, turn);
      if (released) await released;
    }
  }

  /**
   * The originals of the overlay assets, read whole (they are drawn at most at the image's size).
   * An asset that is missing, or whose workspace is not the image's (blob metadata written by
   * management), is AssetNotFoundError: the same 404 for both, so ids of other workspaces cannot
   * be probed. Originals stored without a workspace match nothing.
   */
  private async readOverlays(
    ids: readonly string[],
    baseMetadata: Record<string, string> | undefined,
  ): Promise<ReadonlyMap<string, Buffer> | undefined> {
    if (ids.length === 0) return undefined;
    const workspace = baseMetadata?.[ORIGINAL_WORKSPACE_METADATA];
    const overlays = new Map<string, Buffer>();
    for (const id of ids) {
      const original = await this.originalBlob(id);
      const blob = (await this.renderable(id, original))!;
      try {
        if (workspace === undefined || blob.metadata?.[ORIGINAL_WORKSPACE_METADATA] !== workspace) {
          throw new AssetNotFoundError(id);
        }
        overlays.set(id, await buffer(blob.body));
      } catch (err) {
        if (err instanceof AssetNotFoundError) throw err;
        this.deps.metrics.dependencyError("storage");
        throw new StorageUnavailableError(`reading ${originalKey(id)} failed`, { cause: err });
      } finally {
        blob.release();
      }
    }
    return overlays;
  }

  private async renderBlob(inputs: RenderInputs, flight: Flight): Promise<Rendition> {
    const { blob, focalPoint, overlays, slot } = inputs;
    const { key, request, signal, deadline, log } = flight;
    const { metrics } = this.deps;
    // A store with positional reads (a local disk) fills a reused buffer (pipeline/original.ts);
    // any other is streamed. Either way the pipeline reads the header first and the rest only
    // for work it admits.
    const failed = () => {
      // The store answered but the body broke off (connection reset, file vanished).
      metrics.dependencyError("storage");
      return `reading ${originalKey(request.assetId)} failed`;
    };
    const read = blob.read;
    const original = read
      ? {
          size: blob.size,
          read: (target: Buffer, position: number) =>
            read(target, position).catch((err: unknown) => {
              throw new StorageUnavailableError(failed(), { cause: err });
            }),
        }
      : bodyChunks(blob.body, failed);
    signal.throwIfAborted();
    metrics.count("transformations");
    // The log lines' fields only when they are written: a MISS builds nothing for a level that is off.
    const debug = log.isLevelEnabled("debug");
    const steps = debug ? request.steps.map((s) => s.name) : [];
    if (debug) log.debug({ key, steps, bytesIn: blob.size }, "render started");
    const started = performance.now();
    const gate = this.deps.gate;
    const result = await tracedRender(
      this.deps.render,
      key,
      blob.size,
    )(
      {
        original,
        header: storedOriginalHeader(blob.metadata),
        contentType: blob.contentType,
        steps: stepsToRender(request.steps, this.deps.redactFacesAlways === true),
        cacheKey: key,
        convertTo: request.convertTo,
        focalPoint,
        overlays,
        decodedKey: `${flight.assetId}|${flight.generation}`,
      },
      {
        signal,
        deadline,
        onStep: (name, seconds) => metrics.observeTransformation(name, seconds),
        admit: gate
          ? (plan) =>
              admitWork(gate, this.deps.clients, {
                client: request.client,
                weight: plan.heldPixels,
                costMs: plan.workCost,
                signal,
                slot,
              })
          : undefined,
      },
    );
    if (debug)
      log.debug({ key, steps, ms: Math.round(performance.now() - started), bytes: result.data.length }, "transformed");
    return result;
  }

  /**
   * The original (not yet read past its metadata) and, only for steps that use it, the focal point,
   * read at the same time. A failing blob store is one storage dependency error for the request,
   * however many of the two reads it failed. When only the attributes fail, the original's body is
   * closed before the error goes up (no stream left open).
   */
  private async readInputs(
    request: DeliveryRequest,
    log: Logger,
  ): Promise<{ blob: BlobObject | null; focalPoint: FocalPoint | undefined }> {
    if (!usesFocalPoint(request.steps)) {
      try {
        const original = await this.deps.store.get(originalKey(request.assetId));
        return { blob: await this.renderable(request.assetId, original), focalPoint: undefined };
      } catch (err) {
        if (err instanceof StorageUnavailableError) this.deps.metrics.dependencyError("storage");
        throw err;
      }
    }
    const [original, focal] = await Promise.allSettled([
      this.deps.store.get(originalKey(request.assetId)).then((blob) => this.renderable(request.assetId, blob)),
      this.readFocalPoint(request.assetId, log),
    ]);
    const failed = [original, focal].flatMap((r) => (r.status === "rejected" ? [r.reason as unknown] : []));
    if (failed.some((err) => err instanceof StorageUnavailableError)) this.deps.metrics.dependencyError("storage");
    if (original.status === "rejected") throw original.reason;
    if (focal.status === "rejected") {
      original.value?.release();
      throw focal.reason;
    }
    return { blob: original.value, focalPoint: focal.value };
  }

  /**
   * The focal point from attributes/<assetId> (written by management's PATCH). No blob: none.
   * Content that does not parse: none, with a warning (a rendition without it beats a 500 on
   * every request). A failing store is a StorageUnavailableError (503), as for the original.
   */
  private async readFocalPoint(assetId: string, log: Logger): Promise<FocalPoint | undefined> {
    const key = attributesKey(assetId);
    let text: string;
    try {
      const blob = await this.deps.store.get(key);
      if (!blob) return undefined;
      text = (await buffer(blob.body)).toString("utf8");
    } catch (err) {
      if (err instanceof StorageUnavailableError) throw err;
      // The store answered but the body broke off.
      throw new StorageUnavailableError(`reading ${key} failed`, { cause: err });
    }
    let parsed: ReturnType<typeof assetAttributesSchema.safeParse>;
    try {
      parsed = assetAttributesSchema.safeParse(JSON.parse(text));
    } catch (err) {
      log.warn({ err, key }, "attributes blob is not JSON; rendering without a focal point");
      return undefined;
    }
    if (!parsed.success) {
      log.warn(
        { key, issues: parsed.error.issues },
        "attributes blob does not match its schema; rendering without a focal point",
      );
      return undefined;
    }
    return parsed.data.focalPoint;
  }
}

/** The blob body as chunks; a body that breaks off is the storage dependency failing (503). */
async function* bodyChunks(body: AsyncIterable<unknown>, onFailure: () => string): AsyncGenerator<Buffer> {
  try {
    for await (const chunk of body) yield Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
  } catch (err) {
    throw new StorageUnavailableError(onFailure(), { cause: err });
  }
}
