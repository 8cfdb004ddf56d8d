import type { ServerResponse } from "node:http";
import {
  IMAGE_PROBLEMS,
  PROBLEM_CONTENT_TYPE,
  problemsFrom,
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

/**
 * The code of every domain error of the media service. An original the service cannot read is
 * undecodable, whatever the reason: the shared `unsupported-image` (415) speaks of an upload.
 */
export type MediaErrorCode =
  | Exclude<ImageErrorCode, "unsupported-image">
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

/** The problems the HTTP layer answers without a domain error behind them. */
export type MediaHttpProblemCode =
  "not-found" | "method-not-allowed" | "internal-unauthorized" | "invalid-purge-request" | "internal-error";

export type MediaProblemCode = MediaErrorCode | MediaHttpProblemCode;

const retryAfter = (seconds: number) => ({ "Retry-After": String(seconds) });

/**
 * What each media problem is on the wire: status, problem type, title, headers, and `when` for
 * the docs' error table (`pnpm docs:problems`). The shared image errors (a stored original that
 * cannot be decoded or is above LIMIT_INPUT_PIXELS) are contracts' IMAGE_PROBLEMS, one status
 * each for both services.
 */
export const MEDIA_PROBLEMS: ProblemTable<MediaProblemCode> = {
  "invalid-media-url": {
    status: 400,
    type: "invalid-media-url",
    title: "Invalid media URL",
    when:
      "unknown transformation; unknown, repeated or missing parameter; wrong type; value out of range (`errors` " +
      "names `<transformation>.<param>` and the range); more than 8 steps; an unknown preset; a query parameter " +
      "the URL does not take",
  },
  "transformation-not-applicable": {
    status: 400,
    type: "invalid-media-url",
    title: "Transformation cannot apply to this image",
    when:
      "a step that cannot apply to this original (a crop outside the image, a frame it does not have), output " +
      "above `MEDIA_MAX_OUTPUT_PIXELS`, work above `MEDIA_MAX_WORK_PIXELS` or `MEDIA_MAX_WORK_COST`, more frames " +
      "than `MEDIA_MAX_ANIMATION_FRAMES`: all from the original's header, before decoding",
  },
  "query-not-allowed": {
    status: 400,
    type: "query-not-allowed",
    title: "Query string not allowed",
    when: "a query string when `MEDIA_ALLOW_QUERY=false` (a signature's `exp` and `sig` excepted)",
  },
  "invalid-eager-request": {
    status: 400,
    type: "invalid-eager-request",
    title: "Bad Request",
    when: "an eager-render request (`POST /internal/eager`, from management) with a body other than `{assetId, extension, replaced?}`",
  },
  "invalid-purge-request": {
    status: 400,
    type: "invalid-purge-request",
    title: "Bad Request",
    when: 'a purge request (`POST /internal/purge`, from management) with a body other than `{"assetIds": [1-1000 ids]}`',
  },
  "internal-unauthorized": {
    status: 401,
    type: "unauthorized",
    title: "Unauthorized",
    headers: { "WWW-Authenticate": "Bearer" },
    when: "`POST /internal/purge` or `/internal/eager` without the purge secret (`MEDIA_PURGE_SECRET`)",
  },
  "invalid-signature": {
    status: 403,
    type: "invalid-signature",
    title: "Invalid signature",
    when: "a missing or wrong `sig` when `MEDIA_SIGNING_KEY` is set",
  },
  "signature-expired": {
    status: 403,
    type: "signature-expired",
    title: "Signed URL expired",
    when: "a signed URL past its `exp`, also when its result is cached",
  },
  "presets-only": {
    status: 403,
    type: "presets-only",
    title: "Only presets are served",
    when: "a URL other than a preset's (free-form steps, originals, a query) when `MEDIA_PRESETS_ONLY=true`",
  },
  "asset-not-found": {
    status: 404,
    type: "asset-not-found",
    title: "Asset not found",
    when: "an asset that does not exist or is trashed; an overlay asset of another workspace",
  },
  "malformed-asset-id": {
    status: 404,
    type: "asset-not-found",
    title: "Asset not found",
    when: "an asset id that is not a UUID",
  },
  "not-found": {
    status: 404,
    type: "not-found",
    title: "Not Found",
    when: "a path that is neither a media URL nor one of the service's endpoints",
  },
  "method-not-allowed": {
    status: 405,
    type: "method-not-allowed",
    title: "Method Not Allowed",
    headers: { Allow: "GET, HEAD" },
    when: "a method other than GET and HEAD on a media URL or an original",
  },
  "result-too-large": {
    status: 413,
    type: "result-too-large",
    title: "Result too large",
    when: "a result above `MEDIA_MAX_RESULT_BYTES` (remembered until the asset is purged: asking again renders nothing)",
  },
  "undecodable-image": {
    ...IMAGE_PROBLEMS["undecodable-image"],
    when: "an original that cannot be decoded or is not a supported image",
  },
  "image-too-large": {
    ...IMAGE_PROBLEMS["image-too-large"],
    when: "an original above `LIMIT_INPUT_PIXELS` (`errors` names `LIMIT_INPUT_PIXELS`)",
  },
  "max-bytes-unreachable": {
    status: 422,
    type: "max-bytes-unreachable",
    title: "Result does not fit the byte budget",
    when: "a result that does not fit its `max-bytes` budget (`errors` names `max-bytes.value`)",
  },
  "client-share-exceeded": {
    status: 429,
    type: "client-share-exceeded",
    title: "Too much render work from this client",
    headers: retryAfter(RETRY_AFTER.clientShare),
    when: "this client already holds its `MEDIA_CLIENT_SHARE` of the render capacity while other clients wait for it (cache hits are never refused)",
  },
  // Nobody reads this answer (the client has gone); it only keeps the access log truthful.
  "request-cancelled": {
    status: 499,
    type: "request-cancelled",
    title: "Client closed request",
    when: "never sent: the access log's status of a request whose client closed the connection first",
  },
  "internal-error": {
    status: 500,
    type: "internal-error",
    title: "Internal Server Error",
    when: "a fault of the service itself (logged at error with the request id)",
  },
  overloaded: {
    status: 503,
    type: "overloaded",
    title: "Service overloaded",
    headers: retryAfter(RETRY_AFTER.queueFull),
    when: "the render queue is full (`MEDIA_CONCURRENCY`, `MEDIA_QUEUE_LIMIT`)",
  },
  timeout: {
    status: 503,
    type: "timeout",
    title: "Transformation timed out",
    headers: retryAfter(RETRY_AFTER.timeout),
    when: "the render did not finish within `MEDIA_REQUEST_TIMEOUT_MS`",
  },
  "face-detection-unavailable": {
    status: 503,
    type: "face-detection-unavailable",
    title: "Face detection unavailable",
    headers: retryAfter(RETRY_AFTER.faceDetection),
    when: "the face detector of `avatar` and `redact:faces` failed",
  },
  "storage-unavailable": {
    status: 503,
    type: "storage-unavailable",
    title: "Storage unavailable",
    headers: retryAfter(RETRY_AFTER.storage),
    when: "the blob store is unreachable",
  },
};

/** The problem of `code` with this occurrence's detail: how the HTTP layer answers. */
export const problem = problemsFrom(MEDIA_PROBLEMS);

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
