import type { IncomingMessage, ServerResponse } from "node:http";
import express, { type Express, type NextFunction, type Request, type Response, type Router } from "express";
import {
  healthHandlers,
  metricsHandler,
  requestContext,
  trackRequest,
  type HealthCheck,
  type Logger,
  type OperationHandler,
} from "@media-platform/observability";
import { DomainError, MediaUrlError, problemOf, type MediaLimits, type PresetTable } from "@media-platform/contracts";
import { StorageUnavailableError } from "@media-platform/storage";
import { CORS_HEADER_LIST, ifNoneMatchMatches, NOSNIFF, NOSNIFF_HEADER, responseHeaders } from "./cache/entry";
import type { HotPathNext } from "./delivery/hot-path";
import { InvalidMediaUrlError, RequestCancelledError, RequestTimeoutError, StorageDownError } from "./delivery/errors";
import { QueueFullError } from "./delivery/limiter";
import type { Delivery, SharedMiss } from "./delivery/rendition-service";
import type { Departure } from "./delivery/single-flight";
import type { ParsedMediaPath } from "./delivery/media-paths";
import type { AdmittedRequest } from "./delivery/admission";
import { catalogRouter } from "./catalog";
import { originalsHandler, ROUTE_ORIGINAL, type OriginalsDeps } from "./originals";
import { presetsRouter } from "./presets";
import type { MediaMetrics } from "./metrics";
import { MEDIA_PROBLEMS, ProblemError, instanceOf, problem, writeProblem } from "./problem";
import type { MediaRouteDeps } from "./delivery/media-route";

/*
 * HTTP contract of the media service (docs/media-urls.md), for the docs:
 *
 *   GET|HEAD /<step>[/<step>...]/<assetId>.<ext>[?sig=<signature>]
 *
 * Cache key: the canonical spelling of the path (contracts' canonicalMediaPath: numbers as
 * `1` not `1.0`/`01`/`1.00`, `0.5` not `.5`, no needless percent-escapes, lower-case asset id,
 * colours as 6-digit lower-case hex) plus the query string as received. Another spelling the
 * grammar accepts is answered from that one entry, with `Link: <canonical>; rel="canonical"`
 * (the canonical spelling itself carries no Link); parameter order is kept as written.
 * `?v=2` works as a cache buster unless MEDIA_ALLOW_QUERY=false. With signing on, the query
 * must be exactly `[exp=...&]sig=...`, and the signature is checked over the path AS SENT, byte
 * for byte: a signed URL is signed over the exact bytes the client sends, whatever its spelling.
 * Stored per key: bytes, content type, strong ETag.
 *
 * 200  image; Content-Type of the stored original; ETag "<base64url sha256 of the sharp/libvips versions and the bytes>";
 *      Cache-Control: immutable for a `?v=<version>` URL, else max-age + stale-while-revalidate
 *      (cache/entry.ts cacheControlFor); Surrogate-Key and Cache-Tag: <assetId>; X-Cache: MISS
 *      (this request ran the transformation) or HIT (in-process LRU, Redis, or joined a running
 *      transformation)
 * 304  If-None-Match matches the ETag (hot path and Express path)
 * 400  invalid-media-url: grammar, unknown transformation/parameter, repeated, missing,
 *      wrong type, out of range, > 8 steps, bad extension; errors[] name the
 *      parameter (`<transformation>.<param>`) and the allowed range. Also a valid step that
 *      cannot apply to this image (crop outside it, output above MEDIA_MAX_OUTPUT_PIXELS, work
 *      above MEDIA_MAX_WORK_PIXELS: decided from the original's header, before decoding).
 *      query-not-allowed: a query string with MEDIA_ALLOW_QUERY=false
 * 403  invalid-signature: MEDIA_SIGNING_KEY set and sig missing or wrong (checked first)
 * 404  asset-not-found (no originals/<assetId>, or an id that is not a UUID while the rest of
 *      the URL is valid), not-found (other routes)
 * 405  method-not-allowed on a media URL (Allow: GET, HEAD)
 * 413  result-too-large: the result is larger than MEDIA_MAX_RESULT_BYTES (remembered, so asking
 *      again renders nothing)
 * 422  undecodable-image: the stored original is corrupt or not a supported image;
 *      image-too-large: the original has more pixels than LIMIT_INPUT_PIXELS (errors[0].path is
 *      "LIMIT_INPUT_PIXELS"); both are contracts' shared image problems, as management answers
 *      them for an upload; max-bytes-unreachable: no encode within the max-bytes budget (lower
 *      quality, then smaller sizes)
 * 429  client-share-exceeded: this client holds its MEDIA_CLIENT_SHARE of the render capacity
 *      (Retry-After: 1); cache hits are never refused
 * 503  overloaded (queue full, Retry-After: 1), timeout (MEDIA_REQUEST_TIMEOUT_MS,
 *      Retry-After: 2), storage-unavailable (blob store down, Retry-After: 5),
 *      face-detection-unavailable (avatar's detector failed, Retry-After: 2)
 * 499  request-cancelled: the client disconnected (logged only; nobody receives it)
 * Every error is application/problem+json with Cache-Control: no-store and is never cached. Each
 * domain error carries a code; MEDIA_PROBLEMS (problem.ts) gives its status, type, title, headers.
 *
 * GET|HEAD /info/<steps>/<assetId>.<ext>[?render=1]: the rendition's facts as JSON (info/index.ts).
 *
 * Internal (purge/router.ts; blocked at the edge): POST /internal/purge (shared secret) drops an
 * asset's renditions on every tier and replica; GET /internal/generation/<assetId> gives edge
 * caches the asset's generation for their cache key.
 *
 * Operations (no signature, never cached):
 *   GET /healthz   200 while the process answers
 *   GET /readyz    200 when the blob store (and Redis, when configured) answer their ping;
 *                  503 { status: "unavailable", failing: ["storage" | "redis"], checks } otherwise,
 *                  503 { status: "draining" } during graceful shutdown
 *   GET /metrics   Prometheus text format
 * Every response carries X-Request-Id (the incoming one when sane, else a new UUID).
 */

/** Route label of media URLs in `http_request_duration_seconds` (never the raw path: no asset ids in labels). */
export const ROUTE_MEDIA = "/:steps/:assetId.:ext";

/** Retry-After (seconds) of the answers a client may retry (problem.ts, with the problem table). */
export { RETRY_AFTER } from "./problem";

export interface MediaAppDeps {
  /** The media URL space (createMediaRoute); the app answers what the direct entry does not take. */
  route: MediaRoute;
  /** GET /original/<id>.<ext> (the blob store is the rendition service's). */
  originals: OriginalsDeps;
  /** MEDIA_PRESETS_FILE, validated (default: none). */
  presets?: PresetTable;
  /** MEDIA_PRESETS_ONLY: 403 for every media URL that is not made of presets. */
  presetsOnly?: boolean;
  limits: MediaLimits;
  metrics: MediaMetrics;
  logger: Logger;
  /** GET /healthz, /readyz and /metrics (createOperationRoutes), mounted first. */
  operations: OperationRoutes;
  /** POST /internal/purge (purge/router.ts), mounted before the media URL space. */
  purgeRouter?: Router;
  /** GET /info/<steps>/<assetId>.<ext> (info/index.ts), mounted before the media URL space. */
  infoRouter?: Router;
}

/** The operations endpoints by path (GET/HEAD): same handler before Express (server.ts) and inside it. */
export type OperationRoutes = ReadonlyMap<string, OperationHandler>;

/**
 * GET /healthz, /readyz and /metrics. server.ts answers them before the Express app: every
 * request Express routes gets its prototypes swapped in, which gives the request and response
 * new hidden classes, and Node's own stream and event code (which every request, cache HITs
 * included, runs through) goes megamorphic on them. Probes and scrapes are the steady non-media
 * traffic of a CDN origin; through Express they made each later HIT 10-20% dearer (README.md, Media performance).
 */
export function createOperationRoutes(deps: {
  metrics: MediaMetrics;
  logger: Logger;
  /** /readyz checks by dependency name (`storage`, `redis`); unset entries are skipped. */
  readiness: Record<string, HealthCheck | undefined>;
  /** Per-check timeout of /readyz (ms). */
  readinessTimeoutMs?: number;
  /** True while shutting down: /readyz answers 503 `draining`. */
  isDraining?: () => boolean;
}): OperationRoutes {
  const health = healthHandlers({
    checks: deps.readiness,
    timeoutMs: deps.readinessTimeoutMs,
    logger: deps.logger,
    isDraining: deps.isDraining,
  });
  return new Map([
    ["/healthz", health.healthz],
    ["/readyz", health.readyz],
    ["/metrics", metricsHandler(deps.metrics)],
  ]);
}

/** A media URL has at least one step segment before the file: `/<step>/<id>.<ext>`. */
const looksLikeMediaPath = (path: string): boolean => /^\/[^/]*\/./.test(path);

/**
 * Everything neither the hot path nor the direct media entry (server.ts, MediaRoute.match)
 * answers: invalid media URLs and other methods on them, health, metrics, catalog, presets,
 * originals, purge and unknown routes. Its media middleware calls the same MediaRoute.serve.
 */
export function createMediaApp(deps: MediaAppDeps): Express {
  const { limits, metrics, logger, route } = deps;
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);

  // Public answers, readable from any origin (no credentials): the catalog and 400 problems too,
  // so a browser tool can build URLs and show which parameter was refused. Cached answers carry
  // the same pair from cache/entry.ts.
  app.use((_req: Request, res: Response, next: NextFunction) => {
    for (let i = 0; i < CORS_HEADER_LIST.length; i += 2) res.setHeader(CORS_HEADER_LIST[i]!, CORS_HEADER_LIST[i + 1]!);
    next();
  });
  // First: request id (reusing the one the hot path may have set), req.log, access line, latency.
  app.use(
    requestContext({
      logger,
      metrics,
      routeLabel: (req) => {
        const path = instanceOf(req.originalUrl);
        if (path.startsWith("/original/")) return ROUTE_ORIGINAL;
        return looksLikeMediaPath(path) ? ROUTE_MEDIA : undefined;
      },
    }),
  );
  for (const [path, handler] of deps.operations) app.get(path, (req, res, next) => handler(req, res).catch(next));
  // GET /transformations: the parameter table with the caps in force.
  app.use(catalogRouter(limits));
  if (deps.purgeRouter) app.use(deps.purgeRouter);
  if (deps.infoRouter) app.use(deps.infoRouter);
  // GET /presets: the named step chains of MEDIA_PRESETS_FILE.
  const presets = deps.presets ?? {};
  app.use(presetsRouter(presets, deps.presetsOnly === true));
  // GET /original/<id>.<ext>: before the media route, whose grammar it would not match.
  app.use(originalsHandler(deps.originals));

  app.use(async (req: Request, res: Response, next: NextFunction) => {
    // req.url is the raw request-target; Express does not rewrite it for app-level middleware.
    const path = instanceOf(req.url);
    if (!looksLikeMediaPath(path)) return next();
    if (req.method !== "GET" && req.method !== "HEAD") {
      return next(problem("method-not-allowed", `${req.method} is not allowed; media URLs answer GET and HEAD`));
    }
    try {
      await route.serve(req, res, { track: () => req.log });
    } catch (err) {
      next(err);
    }
  });

  app.use((req: Request, _res: Response, next: NextFunction) => {
    next(problem("not-found", `No route for ${req.method} ${instanceOf(req.url)}`));
  });

  // Express recognises error handlers by their four parameters.
  app.use((err: unknown, req: Request, res: Response, next: NextFunction) => {
    if (res.headersSent) return next(err);
    answerFailure(err, req, res, req.log ?? deps.logger, deps);
  });

  return app;
}

/** The media URL space: GET/HEAD of `/<step>[/<step>...]/<assetId>.<ext>`. */
export interface MediaRoute {
  /**
   * The parsed path when `req` is a GET or HEAD of a valid media URL, else undefined. Only
   * these take the direct entry (server.ts): every other request, an invalid media URL included,
   * goes through the Express app, whose routes (`/original/...`, `/internal/...`) and problem
   * answers come first.
   */
  match(req: IncomingMessage): ParsedMediaPath | undefined;
  /**
   * Answers a media URL (the stages of a media request, in order; see serve's body). Throws what
   * it refuses; answerFailure turns that into the problem.
   */
  serve(req: IncomingMessage, res: ServerResponse, via: MediaEntry): Promise<void>;
}

/** How a media request reached the route. */
export interface MediaEntry {
  /** The path as the direct entry parsed it (MediaRoute.match); unset: admission parses it. */
  parsed?: ParsedMediaPath;
  /** The key the hot path looked up in the memory tier and missed; unset: not looked up. */
  memoryKey?: string;
  /** performance.now() when the hot path took the request. */
  start?: number;
  /**
   * The request's logger, tracking the request from the first call on (the direct entry tracks
   * it after the Redis tier, whose hits are the hot path's; the Express app already did).
   */
  track: () => Logger;
}

export function createMediaRoute(deps: MediaRouteDeps): MediaRoute {
  const { service, admission, negotiator, hotPath } = deps;
  return {
    match(req) {
      const method = req.method;
      if (method !== "GET" && method !== "HEAD") return undefined;
      const path = instanceOf(req.url);
      if (!looksLikeMediaPath(path)) return undefined;
      try {
        return admission.paths.parse(path);
      } catch {
        return undefined;
      }
    },
    async serve(req, res, via) {
      // First, so that every answer for the URL, problems included, says it depends on Accept.
      if (negotiator) res.setHeader("Vary", "Accept");
      // 1. The memory tier: the hot path (delivery/hot-path.ts) looked `via.memoryKey` up.
      // 2. Admission: presets gate, signature, parse, query policy, cache key; each once.
      const admitted = admission.admit(req.url ?? "/", {
        accept: req.headers.accept,
        client: deps.clientOf?.(req),
        parsed: via.parsed,
      });
      const memoryMissed = via.memoryKey === admitted.key;
      // 3. The Redis tier, for the canonical spelling the hot path missed (another spelling is
      //    answered with its Link, by the flight's own lookup); a hit is answered as the hot path's.
      let sharedMiss: SharedMiss | undefined;
      if (memoryMissed && admitted.link === undefined && hotPath && service.sharedReady) {
        const found = await service.lookupShared(admitted).catch(() => undefined);
        if (found && "entry" in found) {
          const start = via.start ?? performance.now();
          return hotPath.answerShared({ req, res, entry: found.entry, cacheControl: admitted.cacheControl, start });
        }
        sharedMiss = found?.miss;
      }
      // 4. The flight: single-flight, Redis claim, render in a slot, store (RenditionService).
      const log = via.track();
      // A client that disconnects leaves its wait; the render stops when no other client waits.
      const departure: Departure = (leave) =>
        res.once("close", () => {
          if (!res.writableFinished) leave(new RequestCancelledError());
        });
      const delivery = await service.deliver(admitted, { log, departure, memoryMissed, sharedMiss });
      // 5. The answer.
      answerRendition(req, res, admitted, delivery, deps.guardSend);
      if (delivery.xCache === "MISS") deps.usage?.rendered(delivery.entry.assetId);
      if (res.statusCode === 200 && req.method !== "HEAD")
        deps.usage?.sent(delivery.entry.assetId, delivery.entry.body.length);
    },
  };
}

/** Writes a delivered rendition (or its 304) with the admitted request's own headers. */
function answerRendition(
  req: IncomingMessage,
  res: ServerResponse,
  admitted: AdmittedRequest,
  { entry, xCache }: Delivery,
  guardSend: ((res: ServerResponse) => void) | undefined,
): void {
  const { cacheControl, link } = admitted;
  if (ifNoneMatchMatches(req.headers["if-none-match"], entry.etag)) {
    res.writeHead(304, {
      ...entry.notModifiedHeaders,
      "X-Cache": xCache,
      ...(cacheControl && { "Cache-Control": cacheControl }),
      ...(link && { Link: link }),
    });
    res.end();
    return;
  }
  const headers = responseHeaders(entry, xCache);
  if (cacheControl) headers["Cache-Control"] = cacheControl;
  if (link) headers.Link = link;
  res.writeHead(200, headers);
  res.end(req.method === "HEAD" ? undefined : entry.body);
  guardSend?.(res);
}

/**
 * What the hot path does not answer (server.ts): a GET/HEAD of a valid media URL (a MISS,
 * mostly) goes to the media route without Express, whose middleware stack was about a third of
 * the main-thread time a MISS spent above a bare node:http server: same request context, same
 * handler, same failure answer as inside the app. Probes and scrapes skip Express too
 * (createOperationRoutes says why). Everything else, an invalid media URL included, is the app's.
 */
export function createDirectEntry(deps: {
  route: MediaRoute;
  operations: OperationRoutes;
  app: Express;
  logger: Logger;
  metrics: MediaMetrics;
}): HotPathNext {
  const { route, operations, app, logger, metrics } = deps;
  return (req, res, memoryKey, start) => {
    // Every other response (MISS, errors, probes, /metrics) carries it too; set before Express
    // so even its final error handler's answer has it.
    res.setHeader(NOSNIFF_HEADER, NOSNIFF);
    const parsed = route.match(req);
    if (parsed === undefined) {
      const path = req.method === "GET" || req.method === "HEAD" ? instanceOf(req.url) : undefined;
      const operation = path === undefined ? undefined : operations.get(path);
      if (operation === undefined || path === undefined) return app(req, res);
      const tracked = trackRequest(req, res, { logger, metrics, route: () => path, quiet: true });
      operation(req, res).catch((err: unknown) => answerFailure(err, req, res, tracked.log, deps));
      return;
    }
    let log: Logger | undefined;
    const track = () => (log ??= trackRequest(req, res, { logger, metrics, route: () => ROUTE_MEDIA }).log);
    route
      .serve(req, res, { parsed, memoryKey, start, track })
      .catch((err: unknown) => answerFailure(err, req, res, track(), deps));
  };
}

/**
 * The one answer to a failure, for the Express app and the direct media entry alike: counted
 * (countFailure), mapped to its problem (toProblem), logged (at error when unexpected, else at info
 * with its type and detail: why the request was refused), written. A response whose head is
 * already out cannot carry a problem: its connection is cut.
 */
export function answerFailure(
  err: unknown,
  req: IncomingMessage,
  res: ServerResponse,
  log: Logger,
  deps: Pick<MediaAppDeps, "metrics">,
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  countFailure(err, deps);
  const answer = toProblem(err);
  const path = instanceOf(req.url);
  if (answer.slug === "internal-error") log.error({ err, method: req.method, path }, "unhandled error");
  else log.info({ problem: answer.toLog(), method: req.method, path }, `request refused: ${answer.slug}`);
  writeProblem(res, answer, path, req.method === "HEAD");
}

/** Counts the failures that have their own series (rejections at the queue, timeouts). */
function countFailure(err: unknown, deps: { metrics: Pick<MediaMetrics, "queueRejection" | "count"> }): void {
  if (err instanceof QueueFullError) deps.metrics.queueRejection();
  else if (err instanceof RequestTimeoutError) deps.metrics.count("timeouts");
}

/**
 * Maps every failure to a problem, without side effects (counting is countFailure's, logging
 * the error handler's): a domain error by its code in MEDIA_PROBLEMS (problem.ts); the errors of
 * contracts' grammar and of the blob store first become the service's own. Never leaks stack
 * traces or internal messages.
 */
export function toProblem(err: unknown): ProblemError {
  if (err instanceof ProblemError) return err;
  const domain =
    err instanceof MediaUrlError
      ? InvalidMediaUrlError.of(err)
      : err instanceof StorageUnavailableError
        ? new StorageDownError({ cause: err })
        : err;
  const answer = domain instanceof DomainError ? problemOf(domain, MEDIA_PROBLEMS) : undefined;
  return answer ?? problem("internal-error", "An unexpected error occurred");
}
