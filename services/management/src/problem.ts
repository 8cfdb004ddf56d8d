import type { ErrorRequestHandler, RequestHandler, Response } from "express";
import type { Metrics } from "@media-platform/observability";
import type { Logger } from "pino";
import { z } from "zod";
import {
  DomainError,
  IMAGE_PROBLEMS,
  PROBLEM_CONTENT_TYPE,
  PROBLEM_TITLES,
  problemsFrom,
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
 * The problems the service's HTTP layer answers without a domain error behind them (a missing
 * token, the upload limits, an unreachable dependency, ...): codes of the same table, so every
 * answer's status, type and title, and the docs' error table, come from one place.
 */
export type ManagementHttpProblemCode =
  | "forbidden"
  | "insufficient-scope"
  | "rate-limited"
  | "upload-idle"
  | "too-large"
  | "json-required"
  | "uploads-busy"
  | "dependency-unavailable"
  | "library-not-built"
  | "internal-error"
  | "upload-offset-mismatch"
  | "upload-expired"
  | "tus-version"
  | "upload-content-type"
  | "upload-locked"
  | "checksum-mismatch"
  | "direct-uploads-need-s3"
  | "direct-upload-incomplete";

export type ManagementProblemCode = ManagementErrorCode | ManagementHttpProblemCode;

/**
 * What each problem of the service is on the wire: the domain errors (domain-errors.ts,
 * auth/keys.ts' AuthError and the shared image errors) and the HTTP layer's own. The detail and
 * `errors` come from the error itself; `when` is the docs' error table (`pnpm docs:problems`).
 */
export const MANAGEMENT_PROBLEMS: ProblemTable<ManagementProblemCode> = {
  "invalid-input": {
    status: 400,
    type: "validation-error",
    title: PROBLEM_TITLES[400]!,
    when:
      "malformed JSON, wrong types, unknown fields, out-of-range values, NUL bytes or lone surrogates in text, " +
      "forged cursors, a `collectionId` of another workspace; an upload without its one `file` part",
  },
  "invalid-token": {
    status: 401,
    type: "unauthorized",
    title: PROBLEM_TITLES[401]!,
    headers: { "WWW-Authenticate": 'Bearer realm="media-platform", error="invalid_token"' },
    when: "a missing, malformed, expired or badly signed token, or one without the workspace claim (`WWW-Authenticate: Bearer`)",
  },
  forbidden: {
    status: 403,
    type: "forbidden",
    title: PROBLEM_TITLES[403]!,
    when: "the library's development sign-in asked other than by a browser on the service's machine (a non-loopback address or Host, or a Forwarded / X-Forwarded-* header)",
  },
  "insufficient-scope": {
    status: 403,
    type: "insufficient-scope",
    title: PROBLEM_TITLES[403]!,
    headers: { "WWW-Authenticate": 'Bearer realm="media-platform", error="insufficient_scope"' },
    when: "a credential without the scope the operation needs (`requiredScope` names it): an API key, or a token whose `scope` claim names other scopes",
  },
  "quota-exceeded": {
    status: 413,
    type: "quota-exceeded",
    title: "Quota exceeded",
    when: "an upload or replace that would take the workspace past its storage or asset quota (`quota`, `usage` and `limit` name it); nothing is stored",
  },
  "rate-limited": {
    status: 429,
    type: "rate-limited",
    title: PROBLEM_TITLES[429]!,
    when: "more than `RATE_LIMIT_REQUESTS_PER_MINUTE` requests in a minute with one credential (`Retry-After` says when)",
  },
  "not-found": {
    status: 404,
    type: "not-found",
    title: PROBLEM_TITLES[404]!,
    when: "an id that does not exist, is not a UUID, is trashed, or belongs to another workspace (indistinguishable); a path no route answers",
  },
  "upload-idle": {
    status: 408,
    type: "request-timeout",
    title: "Request Timeout",
    headers: { Connection: "close" },
    when: "an upload body that sent nothing for `UPLOAD_IDLE_TIMEOUT_MS` (the connection is closed)",
  },
  conflict: {
    status: 409,
    type: "conflict",
    title: PROBLEM_TITLES[409]!,
    when: "a duplicate collection name; restoring an asset that is not in the trash",
  },
  "too-large": {
    status: 413,
    type: "payload-too-large",
    title: PROBLEM_TITLES[413]!,
    when: "an upload above `MAX_UPLOAD_BYTES` (nothing is stored), also a resumable upload's `Upload-Length` and an import's body; a JSON body above 100 kB",
  },
  "unsupported-image": {
    ...IMAGE_PROBLEMS["unsupported-image"],
    when: "an upload that is not an image, markup that is not SVG, an SVG declaring `<!ENTITY>`s, a compressed file",
  },
  "json-required": {
    status: 415,
    type: "unsupported-media-type",
    title: PROBLEM_TITLES[415]!,
    when: "a JSON endpoint called with another `Content-Type`, or a body in an encoding other than UTF-8",
  },
  "undecodable-image": {
    ...IMAGE_PROBLEMS["undecodable-image"],
    when: "an upload that cannot be decoded (truncated or corrupt, no dimensions), or an SVG above 5 MiB or 20000 elements, or not UTF-8",
  },
  "metadata-removal-failed": {
    status: 422,
    type: "metadata-removal-failed",
    title: "Location data could not be removed",
    when:
      "an upload whose GPS position and serial numbers could not be removed from the stored original (it is served " +
      "publicly), so it is not stored",
  },
  "image-too-large": {
    ...IMAGE_PROBLEMS["image-too-large"],
    when: "an upload of more pixels than `LIMIT_INPUT_PIXELS` (read from the header, before any decode)",
  },
  "uploads-busy": {
    status: 503,
    type: "service-unavailable",
    title: PROBLEM_TITLES[503]!,
    headers: { "Retry-After": "2", Connection: "close" },
    when:
      "more than `MAX_CONCURRENT_UPLOADS` uploads at once on this instance, or more than " +
      "`MAX_CONCURRENT_UPLOADS_PER_WORKSPACE` from one workspace (other workspaces still get slots); " +
      "a HEIC, PDF or SVG upload whose decoder a worker thread could not load within 2 minutes (an overloaded instance)",
  },
  "dependency-unavailable": {
    status: 503,
    type: "service-unavailable",
    title: PROBLEM_TITLES[503]!,
    headers: { "Retry-After": "5" },
    when: "the database or the blob store is unreachable",
  },
  "blob-missing": {
    status: 503,
    type: "service-unavailable",
    title: PROBLEM_TITLES[503]!,
    when: "an original or a version the row names is missing from the blob store",
  },
  "library-not-built": {
    status: 503,
    type: "library-not-built",
    title: PROBLEM_TITLES[503]!,
    when: "`/library` before the library app was built (`pnpm start` and `pnpm build` build it)",
  },
  "upload-offset-mismatch": {
    status: 409,
    type: "upload-offset-mismatch",
    title: "Upload offset mismatch",
    when: "a resumable upload's `PATCH` whose `Upload-Offset` is not the offset the service holds (ask with `HEAD`)",
  },
  "upload-expired": {
    status: 410,
    type: "upload-expired",
    title: "Upload expired",
    when:
      "a resumable upload unfinished for longer than `TUS_UPLOAD_EXPIRY`, or a direct upload completed after " +
      "`DIRECT_UPLOAD_EXPIRY` (its bytes are swept)",
  },
  "tus-version": {
    status: 412,
    type: "tus-version",
    title: "Precondition Failed",
    when: "a resumable upload request without `Tus-Resumable: 1.0.0`",
  },
  "upload-content-type": {
    status: 415,
    type: "unsupported-media-type",
    title: PROBLEM_TITLES[415]!,
    when: "a resumable upload's `PATCH` whose `Content-Type` is not `application/offset+octet-stream`",
  },
  "upload-locked": {
    status: 423,
    type: "upload-locked",
    title: "Upload locked",
    when: "a resumable upload another request is still writing (after the lock wait)",
  },
  "checksum-mismatch": {
    status: 460,
    type: "checksum-mismatch",
    title: "Checksum Mismatch",
    when: "a resumable upload's `PATCH` whose bytes do not match its `Upload-Checksum` (sha1 or sha256): nothing of it is stored",
  },
  "direct-uploads-need-s3": {
    status: 409,
    type: "direct-uploads-need-s3",
    title: "Direct uploads need S3",
    when: "a direct upload (`/v1/assets/direct-uploads`) while the storage driver is the filesystem (`STORAGE_DRIVER=s3` enables them)",
  },
  "direct-upload-incomplete": {
    status: 400,
    type: "direct-upload-incomplete",
    title: "Direct upload incomplete",
    when:
      "a direct upload completed with missing, extra or wrong parts (an ETag S3 does not hold), or whose object is not " +
      "the declared size: the upload is aborted and nothing of it is kept",
  },
  "import-refused": {
    status: 400,
    type: "import-refused",
    title: "Import refused",
    when:
      "an import URL that is not http(s), or whose host (or a redirect's) is or resolves to a loopback, private, " +
      "link-local, CGNAT, multicast, metadata or otherwise non-public address, in any spelling; more than 5 redirects",
  },
  "import-not-an-image": {
    status: 415,
    type: "import-not-an-image",
    title: PROBLEM_TITLES[415]!,
    when: "an import URL that answers an HTML page (or another non-image `Content-Type`): nothing is stored",
  },
  "import-failed": {
    status: 502,
    type: "import-failed",
    title: "Import failed",
    when: "an import URL whose server answers an error status (named in the detail) or cannot be reached",
  },
  "import-timeout": {
    status: 504,
    type: "import-timeout",
    title: "Import timed out",
    when: "an import that took longer than `IMPORT_TIMEOUT_MS` in total (redirects and body)",
  },
  "internal-error": {
    status: 500,
    type: "internal-error",
    title: PROBLEM_TITLES[500]!,
    when: "a fault of the service itself (logged at error with the request id)",
  },
};

/** The problem of `code` with this occurrence's detail: how the HTTP layer answers. */
export const problem = problemsFrom(MANAGEMENT_PROBLEMS);

export const badRequest = (detail: string, errors?: FieldError[]) => problem("invalid-input", detail, { errors });
export const notFound = (detail = "The requested resource does not exist") => problem("not-found", detail);

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
  next(problem("not-found", `No route for ${req.method} ${req.path}`));
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
    return problem(
      "dependency-unavailable",
      "A backing service (database or blob storage) is unavailable; retry later",
    );
  }
  const e = (typeof err === "object" && err !== null ? err : {}) as HttpLikeError;
  // body-parser / express errors carry a 4xx status and `expose: true`.
  const status = typeof e.status === "number" ? e.status : typeof e.statusCode === "number" ? e.statusCode : 500;
  if (status >= 400 && status < 500) {
    if (e.type === "entity.too.large") return problem("too-large", "Request body too large");
    if (e.type === "encoding.unsupported" || e.type === "charset.unsupported")
      return problem("json-required", "Unsupported body encoding");
    return problem("invalid-input", e.type === "entity.parse.failed" ? "Malformed JSON body" : "Bad request");
  }
  return problem("internal-error", "An unexpected error occurred");
}

/**
 * Express error handler: logs what is not the caller's fault at error (and counts it), every
 * other problem at info with its type and detail (why the request was refused), then sends
 * toProblem's answer.
 */
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
    } else {
      log.info({ problem: problem.toLog(), method: req.method, path: instance }, `request refused: ${problem.slug}`);
    }
    sendProblem(res, problem, instance);
  };
}
