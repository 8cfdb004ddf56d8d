import type { ErrorRequestHandler, RequestHandler, Response } from "express";
import type { Metrics } from "@media-platform/observability";
import type { Logger } from "pino";
import { z } from "zod";
import { PROBLEM_CONTENT_TYPE, type Problem } from "@media-platform/contracts";
import { StorageUnavailableError } from "@media-platform/storage";
import { isDatabaseUnavailable } from "./db/availability";

export interface FieldError {
  path: string;
  message: string;
}

/** An error that is answered as an RFC 9457 problem. Anything else becomes a bare 500. */
export class HttpProblem extends Error {
  readonly status: number;
  readonly title: string;
  readonly errors: FieldError[] | undefined;
  readonly headers: Record<string, string>;
  constructor(
    status: number,
    detail: string,
    options: { title?: string; errors?: FieldError[]; headers?: Record<string, string> } = {},
  ) {
    super(detail);
    this.name = "HttpProblem";
    this.status = status;
    this.title = options.title ?? TITLES[status] ?? "Error";
    this.errors = options.errors;
    this.headers = options.headers ?? {};
  }
}

const TITLES: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  409: "Conflict",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  422: "Unprocessable Content",
  500: "Internal Server Error",
  503: "Service Unavailable",
};

const TYPE_SLUGS: Record<number, string> = {
  400: "validation-error",
  401: "unauthorized",
  404: "not-found",
  409: "conflict",
  413: "payload-too-large",
  415: "unsupported-media-type",
  422: "undecodable-image",
  500: "internal-error",
  503: "service-unavailable",
};

export const problemType = (status: number): string =>
  `https://media-platform.dev/problems/${TYPE_SLUGS[status] ?? `http-${status}`}`;

export const badRequest = (detail: string, errors?: FieldError[]) => new HttpProblem(400, detail, { errors });
export const notFound = (detail = "The requested resource does not exist") => new HttpProblem(404, detail);

/** zod issues -> `errors: [{ path, message }]`, paths prefixed with where the value came from. */
export function zodErrors(error: z.ZodError, prefix: string): FieldError[] {
  const out: FieldError[] = [];
  for (const issue of error.issues) {
    const base = [prefix, ...issue.path.map(String)];
    // "unrecognized_keys" names the keys in the issue, not in its path: one entry per key.
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) out.push({ path: [...base, key].join("."), message: "unknown field" });
    } else {
      out.push({ path: base.join("."), message: issue.message });
    }
  }
  return out;
}

/** Validates `value` with `schema`, throwing a 400 problem listing every issue. */
export function parseOr400<S extends z.ZodType>(schema: S, value: unknown, where: string): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw badRequest(`Invalid ${where}`, zodErrors(result.error, where));
  return result.data;
}

export function sendProblem(res: Response, problem: Problem, headers: Record<string, string> = {}): void {
  res.status(problem.status);
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  res.setHeader("Cache-Control", "no-store");
  res.type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(problem));
}

export const notFoundHandler: RequestHandler = (req, _res, next) => {
  next(new HttpProblem(404, `No route for ${req.method} ${req.path}`));
};

interface HttpLikeError {
  status?: unknown;
  statusCode?: unknown;
  type?: unknown;
  expose?: unknown;
}

/**
 * Database or blob storage unreachable: a 503 the client may retry, not a 500. Returns which one
 * (for `dependency_errors_total`), or null for any other error.
 */
export function unavailableDependency(err: unknown): "database" | "storage" | null {
  if (err instanceof StorageUnavailableError) return "storage";
  return isDatabaseUnavailable(err) ? "database" : null;
}

export interface ErrorHandlerOptions {
  /** Fallback when the request has no request-scoped logger (requestContext not mounted). */
  log: Logger;
  /** Counts 503s caused by a dependency in `dependency_errors_total{dependency}`. */
  metrics?: Pick<Metrics, "dependencyError">;
}

/** Maps every error to problem+json. Never leaks stack traces or internal messages. */
export function errorHandler(options: ErrorHandlerOptions): ErrorRequestHandler {
  return (err: unknown, req, res, next) => {
    if (res.headersSent) {
      next(err);
      return;
    }
    // Request-scoped child logger (carries requestId) set by requestContext(). Only the error and
    // method/path are logged: never headers, so no token reaches the log.
    const log: Logger = (req as { log?: Logger }).log ?? options.log;
    const instance = req.originalUrl.split("?")[0];
    if (err instanceof HttpProblem) {
      const body: Problem = {
        type: problemType(err.status),
        title: err.title,
        status: err.status,
        detail: err.message,
        instance,
      };
      if (err.errors) body.errors = err.errors;
      sendProblem(res, body, err.headers);
      return;
    }
    const dependency = unavailableDependency(err);
    if (dependency) {
      options.metrics?.dependencyError(dependency);
      log.error({ err, dependency, method: req.method, path: instance }, `backing service unavailable: ${dependency}`);
      sendProblem(
        res,
        {
          type: problemType(503),
          title: TITLES[503]!,
          status: 503,
          detail: "A backing service (database or blob storage) is unavailable; retry later",
          instance,
        },
        { "Retry-After": "5" },
      );
      return;
    }
    const e = (typeof err === "object" && err !== null ? err : {}) as HttpLikeError;
    // body-parser / express errors carry a 4xx status and `expose: true`.
    const status = typeof e.status === "number" ? e.status : typeof e.statusCode === "number" ? e.statusCode : 500;
    if (status >= 400 && status < 500) {
      const detail =
        e.type === "entity.parse.failed"
          ? "Malformed JSON body"
          : e.type === "entity.too.large"
            ? "Request body too large"
            : e.type === "encoding.unsupported" || e.type === "charset.unsupported"
              ? "Unsupported body encoding"
              : (TITLES[status] ?? "Bad request");
      sendProblem(res, {
        type: problemType(status),
        title: TITLES[status] ?? "Client Error",
        status,
        detail,
        instance,
      });
      return;
    }
    log.error({ err, method: req.method, path: instance }, "unhandled error");
    sendProblem(res, {
      type: problemType(500),
      title: TITLES[500]!,
      status: 500,
      detail: "An unexpected error occurred",
      instance,
    });
  };
}
