/** Errors of the delivery layer (the pipeline's own errors are in pipeline/errors.ts). */

/** The request's time budget (MEDIA_REQUEST_TIMEOUT_MS) ran out. */
export class RequestTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`the transformation did not finish within ${timeoutMs} ms`);
    this.name = "RequestTimeoutError";
  }
}

/** The client went away before its response was ready: the work it alone waited for stops. */
export class RequestCancelledError extends Error {
  constructor() {
    super("the client closed the connection before the response was ready");
    this.name = "RequestCancelledError";
  }
}
