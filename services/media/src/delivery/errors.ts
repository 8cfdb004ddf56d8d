import { DomainError, MediaUrlError, type FieldError } from "@media-platform/contracts";

/**
 * Errors of the delivery layer (the render pipeline's own are in render/errors.ts), each with its
 * code; the service's problem table (problem.ts, MEDIA_PROBLEMS) answers them.
 */

/** The request's time budget (MEDIA_REQUEST_TIMEOUT_MS) ran out. */
export class RequestTimeoutError extends DomainError<"timeout"> {
  readonly code = "timeout";

  constructor(readonly timeoutMs: number) {
    super(`the transformation did not finish within ${timeoutMs} ms (MEDIA_REQUEST_TIMEOUT_MS); retry shortly`);
    this.name = "RequestTimeoutError";
  }
}

/** The client went away before its response was ready: the work it alone waited for stops. */
export class RequestCancelledError extends DomainError<"request-cancelled"> {
  readonly code = "request-cancelled";

  constructor() {
    super("the client closed the connection before the response was ready");
    this.name = "RequestCancelledError";
  }
}

/**
 * A media URL the grammar refuses. Issues that only concern the asset id (a well-formed
 * transformation on an id that is not a UUID) name no asset: `malformed-asset-id`, answered 404
 * as the management API answers malformed ids; any other issue is the caller's URL.
 */
export class InvalidMediaUrlError extends DomainError<"invalid-media-url" | "malformed-asset-id"> {
  readonly code: "invalid-media-url" | "malformed-asset-id";

  constructor(
    message: string,
    readonly issues: FieldError[],
  ) {
    const malformedId = issues.length > 0 && issues.every((issue) => issue.path === "assetId");
    super(malformedId ? "No asset has this id (asset ids are UUIDs)" : message);
    this.name = "InvalidMediaUrlError";
    this.code = malformedId ? "malformed-asset-id" : "invalid-media-url";
  }

  /** Contracts' grammar error (MediaUrlError) as the service's. */
  static of(err: MediaUrlError): InvalidMediaUrlError {
    return new InvalidMediaUrlError(err.message, err.issues);
  }

  override get fields(): FieldError[] {
    return this.issues;
  }
}

/** MEDIA_ALLOW_QUERY=false and a query string other than a signature. */
export class QueryNotAllowedError extends DomainError<"query-not-allowed"> {
  readonly code = "query-not-allowed";

  constructor(path: string) {
    super(`This deployment refuses query strings on media URLs (MEDIA_ALLOW_QUERY=false); request ${path} instead`);
    this.name = "QueryNotAllowedError";
  }

  override get fields(): FieldError[] {
    return [{ path: "query", message: "no query string is allowed" }];
  }
}

/** MEDIA_SIGNING_KEY set and the URL's signature missing, wrong, or expired. */
export class SignatureRefusedError extends DomainError<"invalid-signature" | "signature-expired"> {
  constructor(
    readonly code: "invalid-signature" | "signature-expired",
    message: string,
  ) {
    super(message);
    this.name = "SignatureRefusedError";
  }
}

/** The blob store failed (StorageUnavailableError): transient; the answer names no internals. */
export class StorageDownError extends DomainError<"storage-unavailable"> {
  readonly code = "storage-unavailable";

  constructor(options?: { cause?: unknown }) {
    super("The blob store is unavailable; retry shortly", options);
    this.name = "StorageDownError";
  }
}
