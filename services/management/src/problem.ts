import type { ErrorRequestHandler, RequestHandler, Response } from "express";
import type { Metrics } from "@media-platform/observability";
import type { Logger } from "pino";
import { z } from "zod";
import {
  DomainError,
  IMAGE_PROBLEMS,
  PROBLEM_CONTENT_TYPE,
  PROBLEM_TITLES,
  problemOf,
  ProblemError,
  type FieldError,
  type ProblemTable,
} from "@media-platform/contracts";
import { StorageUnavailableError } from "@media-platform/storage";
import { isDatabaseUnavailable } from "./db/availability";
import { zodErrors, type ManagementErrorCode } from "./domain-errors";

export { ProblemError, type FieldError };

/**
 * What each domain error of the service (domain-errors.ts, auth/keys.ts' AuthError and the shared
 * image errors) is answered with. The detail and `errors` come from the error itself.
 */
export const MANAGEMENT_PROBLEMS: ProblemTable<ManagementErrorCode> = {
  // Status, type and title as media answers them: one problem type, one title (RFC 9457).
  ...IMAGE_PROBLEMS,
  "metadata-removal-failed": {
    status: 422,
    type: "metadata-removal-failed",
    title: "Location data could not be removed",
  },
  "not-found": { status: 404, type: "not-found", title: PROBLEM_TITLES[404]! },
  "invalid-input": { status: 400, type: "validation-error", title: PROBLEM_TITLES[400]! },
  conflict: { status: 409, type: "conflict", title: PROBLEM_TITLES[409]! },
  "blob-missing": { status: 503, type: "service-unavailable", title: PROBLEM_TITLES[503]! },
  "invalid-token": {
    status: 401,
    type: "unauthorized",
    title: PROBLEM_TITLES[401]!,
    headers: { "WWW-Authenticate": 'Bearer realm="media-platform", error="invalid_token"' },
  },
};

export const badRequest = (detail: string, errors?: FieldError[]) =>
  new ProblemError(400, "validation-error", detail, { errors });
export const notFound = (detail = "The requested resource does not exist") =>
  new ProblemError(404, "not-found", detail);

/** Validates `value` with `schema`, throwing a 400 problem listing every issue. */
export function parseOr400<S extends z.ZodType>(schema: S, value: unknown, where: string): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw badRequest(`Invalid ${where}`, zodErrors(result.error, where));
  return result.data;
}

export function sendProblem(res: Response, problem: ProblemError, instance: string): void {
  res.status(problem.status);
  for (const [k, v] of Object.entries(problem.headers)) res.setHeader(k, v);
  res.setHeader("Cache-Control", "no-store");
  res.type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(problem.toBody(instance)));
}

export const notFoundHandler: RequestHandler = (req, _res, next) => {
  next(new ProblemError(404, "not-found", `No route for ${req.method} ${req.path}`));
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

/**
 * Maps every error to a problem, without side effects: a domain error by MANAGEMENT_PROBLEMS,
 * an unavailable dependency (503, retry), body-parser's 4xx, anything else a bare 500. Never
 * leaks stack traces or internal messages.
 */
export function toProblem(err: unknown): ProblemError {
  if (err instanceof ProblemError) return err;
  const domain = err instanceof DomainError ? problemOf(err, MANAGEMENT_PROBLEMS) : undefined;
  if (domain) return domain;
  if (unavailableDependency(err)) {
    return new ProblemError(
      503,
      "service-unavailable",
      "A backing service (database or blob storage) is unavailable; retry later",
      { headers: { "Retry-After": "5" } },
    );
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
            : (PROBLEM_TITLES[status] ?? "Bad request");
    return new ProblemError(status, STATUS_SLUGS[status] ?? `http-${status}`, detail, {
      title: PROBLEM_TITLES[status] ?? "Client Error",
    });
  }
  return new ProblemError(500, "internal-error", "An unexpected error occurred");
}

/** Slugs for the 4xx errors Express and body-parser raise themselves (they carry only a status). */
const STATUS_SLUGS: Record<number, string> = {
  400: "validation-error",
  401: "unauthorized",
  404: "not-found",
  409: "conflict",
  413: "payload-too-large",
  415: "unsupported-media-type",
};

/** Express error handler: logs (and counts) what is not the caller's fault, then sends toProblem's answer. */
export function errorHandler(options: ErrorHandlerOptions): ErrorRequestHandler {
  return (err: unknown, req, res, next) => {
    if (res.headersSent) {
      next(err);
      return;
    }
    // Request-scoped child logger (carries requestId) set by requestContext(). Only the error and
    // method/path are logged: never headers, so no token reaches the log.
    const log: Logger = (req as { log?: Logger }).log ?? options.log;
    const instance = req.originalUrl.split("?")[0]!;
    const problem = toProblem(err);
    const dependency = problem.status === 503 ? unavailableDependency(err) : null;
    if (dependency) {
      options.metrics?.dependencyError(dependency);
      log.error({ err, dependency, method: req.method, path: instance }, `backing service unavailable: ${dependency}`);
    } else if (problem.status === 500) {
      log.error({ err, method: req.method, path: instance }, "unhandled error");
    }
    sendProblem(res, problem, instance);
  };
}
