import type { Problem } from "@media-platform/contracts";

/**
 * The API answered with an error status. `problem` is the RFC 9457 body the service sent
 * (or one synthesised from the status when the body was not a problem document).
 */
export class ApiError extends Error {
  readonly status: number;
  readonly problem: Problem;
  readonly method: string;
  readonly url: string;
  readonly headers: Headers;

  constructor(init: { status: number; problem: Problem; method: string; url: string; headers: Headers }) {
    const detail = init.problem.detail ? `: ${init.problem.detail}` : "";
    super(`${init.method} ${init.url} failed with ${init.status} ${init.problem.title}${detail}`);
    this.name = "ApiError";
    this.status = init.status;
    this.problem = init.problem;
    this.method = init.method;
    this.url = init.url;
    this.headers = init.headers;
  }

  /** Field errors of a 400 (`errors: [{ path, message }]`), empty otherwise. */
  get fieldErrors(): { path: string; message: string }[] {
    return this.problem.errors ?? [];
  }
}

/** A 2xx response whose body does not match the contract (client and server disagree on the API version). */
export class ResponseValidationError extends Error {
  constructor(
    readonly method: string,
    readonly url: string,
    readonly issues: { path: string; message: string }[],
  ) {
    super(
      `${method} ${url}: response does not match the contract: ${issues.map((i) => `${i.path || "(body)"}: ${i.message}`).join("; ")}`,
    );
    this.name = "ResponseValidationError";
  }
}
