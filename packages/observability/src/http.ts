import type { IncomingMessage, ServerResponse } from "node:http";
import type { NextFunction, Request, RequestHandler, Response } from "express";
import type { Logger } from "./logger";
import { ROUTE_UNMATCHED, type Metrics } from "./metrics";
import { redactUrl } from "./redact";
import { applyRequestId } from "./requestId";
import { nameRequestSpan, recordServerSpan, requestSpan, type Span, type SpanIds, tracingActive } from "./tracing";

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** Set by requestContext(): the request id (also in the `X-Request-Id` response header). */
      requestId: string;
      /** Set by requestContext(): child logger bound to `requestId`. */
      log: import("pino").Logger;
    }
    interface Locals {
      requestId: string;
      log: import("pino").Logger;
    }
  }
}

export interface RequestContextOptions {
  logger: Logger;
  /** When given, every request is recorded in `http_request_duration_seconds`. */
  metrics?: Pick<Metrics, "observeHttp">;
  /**
   * Paths (exact `req.path`) whose access lines are logged at debug level instead of info
   * (probes and scrapes). Default: /healthz, /readyz, /metrics.
   */
  quietPaths?: readonly string[];
  /** Custom route label when no Express route matched (return undefined for {@link ROUTE_UNMATCHED}). */
  routeLabel?: (req: Request, res: Response) => string | undefined;
}

/**
 * The route pattern Express matched (`/v1/assets/:id`), never the raw URL, or `fallback`.
 * Read it once the response is finished (req.route is set by the router during dispatch).
 */
export function routePattern(req: Request, fallback: string = ROUTE_UNMATCHED): string {
  const route = (req as { route?: { path?: unknown } }).route;
  if (!route || route.path === undefined) return fallback;
  const p = route.path;
  const path = typeof p === "string" ? p : Array.isArray(p) ? p.map(String).join("|") : String(p);
  return (req.baseUrl || "") + path;
}

/** Status recorded for requests whose client went away before the response finished. */
export const STATUS_CLIENT_CLOSED = 499;

/** What trackRequest gives the handler: the request id and a child logger bound to it. */
export interface TrackedRequest {
  requestId: string;
  log: Logger;
}

export interface TrackRequestOptions {
  logger: Logger;
  metrics?: Pick<Metrics, "observeHttp">;
  /** The route label, read once the response has finished (Express sets req.route while routing). */
  route: () => string;
  /** Log the access line at debug level (probes, scrapes). */
  quiet?: boolean;
}

/**
 * The per-request context of a node:http handler, Express or bare: request id (sane incoming
 * `X-Request-Id`, one already set on the response, or a new UUID; echoed in the response), a
 * child logger, and once the response ends (or the client goes) one access line (method, route,
 * redacted url, status, duration, request id; no headers) and the latency histogram sample.
 */
export function trackRequest(req: IncomingMessage, res: ServerResponse, options: TrackRequestOptions): TrackedRequest {
  const { logger, metrics } = options;
  const start = performance.now();
  const requestId = applyRequestId(req, res);
  const span = requestSpan();
  const log = logger.child({ requestId });
  const url = req.url ?? "/";

  let done = false;
  const finish = (): void => {
    if (done) return;
    done = true;
    const aborted = !res.writableFinished;
    const status = aborted ? STATUS_CLIENT_CLOSED : res.statusCode;
    const seconds = (performance.now() - start) / 1000;
    const route = options.route();
    if (span) nameRequestSpan(span, req.method, route);
    metrics?.observeHttp(route, req.method ?? "GET", status, seconds, span);
    const level = status >= 500 ? "error" : status >= 400 ? "warn" : options.quiet ? "debug" : "info";
    if (!log.isLevelEnabled(level)) return;
    const line: Record<string, unknown> = {
      method: req.method,
      route,
      url: redactUrl(url),
      status,
      durationMs: Math.round(seconds * 1e6) / 1e3,
    };
    if (aborted) line.aborted = true;
    const length = res.getHeader("content-length");
    if (length !== undefined) line.responseBytes = Number(length);
    log[level](line, aborted ? "request aborted" : "request completed");
  };
  res.once("finish", finish);
  res.once("close", finish);
  return { requestId, log };
}

/**
 * Express middleware (mount first): trackRequest for every request, with the route pattern
 * Express matched as the label; `req.requestId`/`res.locals.requestId` and the child logger
 * `req.log`/`res.locals.log`.
 */
export function requestContext(options: RequestContextOptions): RequestHandler {
  const { logger, metrics } = options;
  const quiet = new Set(options.quietPaths ?? ["/healthz", "/readyz", "/metrics"]);
  return function requestContextMiddleware(req: Request, res: Response, next: NextFunction): void {
    const { requestId, log } = trackRequest(req, res, {
      logger,
      metrics,
      route: () => routePattern(req, options.routeLabel?.(req, res) ?? ROUTE_UNMATCHED),
      quiet: quiet.has(req.path),
    });
    req.requestId = requestId;
    req.log = log;
    res.locals.requestId = requestId;
    res.locals.log = log;
    next();
  };
}

/**
 * Records a request answered by a bare node:http handler (media cache hits): latency histogram only,
 * no logger. `startMs` is `performance.now()` taken when the request arrived. Pair with
 * `applyRequestId(req, res)` before writing the head. `inRequestSpan`: false when the handler runs
 * outside any request span (the memory tier answers before one exists), which skips looking for it.
 */
export function recordRawRequest(
  metrics: Pick<Metrics, "observeHttp">,
  route: string,
  req: IncomingMessage,
  res: ServerResponse,
  startMs: number,
  inRequestSpan = true,
): void {
  const active = inRequestSpan ? requestSpan() : undefined;
  let span: Span | SpanIds | undefined = active;
  if (active) nameRequestSpan(active, req.method, route);
  else if (tracingActive()) span = recordServerSpan(req, res.statusCode, route, startMs);
  metrics.observeHttp(route, req.method, res.statusCode, (performance.now() - startMs) / 1000, span);
}
