import type { ServerResponse } from "node:http";
import { PROBLEM_CONTENT_TYPE, type Problem } from "@media-platform/contracts";

export interface FieldError {
  path: string;
  message: string;
}

/**
 * An error answered as an RFC 9457 problem (application/problem+json). Every problem the
 * media service sends carries `Cache-Control: no-store`: errors are never cached, neither
 * by the service nor by a CDN in front of it.
 */
export class HttpProblem extends Error {
  readonly title: string;
  constructor(
    readonly status: number,
    /** Slug of the problem type: https://media-platform.dev/problems/<slug>. */
    readonly slug: string,
    detail: string,
    readonly options: { title?: string; errors?: FieldError[]; headers?: Record<string, string> } = {},
  ) {
    super(detail);
    this.name = "HttpProblem";
    this.title = options.title ?? TITLES[status] ?? "Error";
  }

  toBody(instance?: string): Problem {
    const body: Problem = {
      type: problemType(this.slug),
      title: this.title,
      status: this.status,
      detail: this.message,
    };
    if (instance !== undefined) body.instance = instance;
    if (this.options.errors) body.errors = this.options.errors;
    return body;
  }
}

const TITLES: Record<number, string> = {
  400: "Bad Request",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  413: "Content Too Large",
  422: "Unprocessable Content",
  500: "Internal Server Error",
  503: "Service Unavailable",
};

export const problemType = (slug: string): string => `https://media-platform.dev/problems/${slug}`;

/** Writes a problem with the bare node:http API (used by the hot path and the Express app alike). */
export function writeProblem(res: ServerResponse, problem: HttpProblem, instance?: string, head = false): void {
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

/** Strips the query string: problems name the path, never echo a signature. */
export const instanceOf = (url: string | undefined): string => (url ?? "/").split("?", 1)[0]!;
