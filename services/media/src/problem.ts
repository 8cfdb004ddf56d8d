import type { ServerResponse } from "node:http";
import {
  IMAGE_PROBLEMS,
  PROBLEM_CONTENT_TYPE,
  type ImageErrorCode,
  type ProblemError,
  type ProblemTable,
} from "@media-platform/contracts";
import type { AssetNotFoundError } from "./delivery/asset-not-found";
import type { ClientShareExceededError } from "./delivery/client-share";
import { CLIENT_SHARE_RETRY_AFTER_SECONDS } from "./delivery/client-share";
import type {
  InvalidMediaUrlError,
  QueryNotAllowedError,
  RequestCancelledError,
  RequestTimeoutError,
  SignatureRefusedError,
  StorageDownError,
} from "./delivery/errors";
import type { QueueFullError } from "./delivery/limiter";
import type { ResultTooLargeError } from "./delivery/result-size";
import type { EagerRequestError } from "./eager/router";
import type { FaceDetectionError } from "./faces";
import type { PresetsOnlyError } from "./presets";
import type { ByteBudgetError, TransformationInputError } from "./render/errors";

/**
 * The problem type is contracts' ProblemError. Every problem the media service sends carries
 * `Cache-Control: no-store`: errors are never cached, neither by the service nor by a CDN.
 */
export { ProblemError, problemType, type FieldError } from "@media-platform/contracts";

/** Strips the query string: problems name the path, never echo a signature. */
export { pathOf as instanceOf } from "./delivery/media-paths";

/** Retry-After (seconds) of the answers a client may retry. */
export const RETRY_AFTER = {
  queueFull: 1,
  timeout: 2,
  storage: 5,
  faceDetection: 2,
  clientShare: CLIENT_SHARE_RETRY_AFTER_SECONDS,
} as const;

/** The code of every domain error of the media service. */
export type MediaErrorCode =
  | ImageErrorCode
  | (
      | AssetNotFoundError
      | InvalidMediaUrlError
      | TransformationInputError
      | QueryNotAllowedError
      | SignatureRefusedError
      | PresetsOnlyError
      | ByteBudgetError
      | ResultTooLargeError
      | ClientShareExceededError
      | QueueFullError
      | RequestTimeoutError
      | RequestCancelledError
      | FaceDetectionError
      | StorageDownError
      | EagerRequestError
    )["code"];

const retryAfter = (seconds: number) => ({ "Retry-After": String(seconds) });

/**
 * What each media domain error is on the wire: status, problem type, title, headers. The shared
 * image errors (a stored original that cannot be decoded or is above LIMIT_INPUT_PIXELS) are
 * contracts' IMAGE_PROBLEMS, one status each for both services.
 */
export const MEDIA_PROBLEMS: ProblemTable<MediaErrorCode> = {
  ...IMAGE_PROBLEMS,
  "asset-not-found": { status: 404, type: "asset-not-found", title: "Asset not found" },
  "malformed-asset-id": { status: 404, type: "asset-not-found", title: "Asset not found" },
  "invalid-media-url": { status: 400, type: "invalid-media-url", title: "Invalid media URL" },
  "transformation-not-applicable": {
    status: 400,
    type: "invalid-media-url",
    title: "Transformation cannot apply to this image",
  },
  "query-not-allowed": { status: 400, type: "query-not-allowed", title: "Query string not allowed" },
  "invalid-eager-request": { status: 400, type: "invalid-eager-request", title: "Bad Request" },
  "invalid-signature": { status: 403, type: "invalid-signature", title: "Invalid signature" },
  "signature-expired": { status: 403, type: "signature-expired", title: "Signed URL expired" },
  "presets-only": { status: 403, type: "presets-only", title: "Only presets are served" },
  "result-too-large": { status: 413, type: "result-too-large", title: "Result too large" },
  "max-bytes-unreachable": { status: 422, type: "max-bytes-unreachable", title: "Result does not fit the byte budget" },
  "client-share-exceeded": {
    status: 429,
    type: "client-share-exceeded",
    title: "Too much render work from this client",
    headers: retryAfter(RETRY_AFTER.clientShare),
  },
  // Nobody reads this answer (the client has gone); it only keeps the access log truthful.
  "request-cancelled": { status: 499, type: "request-cancelled", title: "Client closed request" },
  overloaded: {
    status: 503,
    type: "overloaded",
    title: "Service overloaded",
    headers: retryAfter(RETRY_AFTER.queueFull),
  },
  timeout: {
    status: 503,
    type: "timeout",
    title: "Transformation timed out",
    headers: retryAfter(RETRY_AFTER.timeout),
  },
  "face-detection-unavailable": {
    status: 503,
    type: "face-detection-unavailable",
    title: "Face detection unavailable",
    headers: retryAfter(RETRY_AFTER.faceDetection),
  },
  "storage-unavailable": {
    status: 503,
    type: "storage-unavailable",
    title: "Storage unavailable",
    headers: retryAfter(RETRY_AFTER.storage),
  },
};

/** Writes a problem with the bare node:http API (used by the hot path and the Express app alike). */
export function writeProblem(res: ServerResponse, problem: ProblemError, instance?: string, head = false): void {
  const body = JSON.stringify(problem.toBody(instance));
  const headers: Record<string, string | number> = {
    ...problem.options.headers,
    "Content-Type": PROBLEM_CONTENT_TYPE,
    "Content-Length": Buffer.byteLength(body),
    "Cache-Control": "no-store",
  };
  res.writeHead(problem.status, headers);
  res.end(head ? undefined : body);
}
