import { z } from "zod";

/** RFC 9457 problem details, the error body of both services. */
export const problemSchema = z.object({
  type: z.string(),
  title: z.string(),
  status: z.number().int(),
  detail: z.string().optional(),
  instance: z.string().optional(),
  errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
});
export type Problem = z.infer<typeof problemSchema>;
export const PROBLEM_CONTENT_TYPE = "application/problem+json";

export interface FieldError {
  path: string;
  message: string;
}

/** The problem type URI of a slug: https://media-platform.dev/problems/<slug>. */
export const problemType = (slug: string): string => `https://media-platform.dev/problems/${slug}`;

/** Default titles by status. */
export const PROBLEM_TITLES: Readonly<Record<number, string>> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  409: "Conflict",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  422: "Unprocessable Content",
  429: "Too Many Requests",
  500: "Internal Server Error",
  503: "Service Unavailable",
};

/**
 * The one problem type of both services: an error answered as an RFC 9457 problem. The HTTP
 * layers throw it (or map a domain error to it); `slug` names the problem type, independent of
 * the status (several kinds of 422 are different problems).
 */
export class ProblemError extends Error {
  readonly title: string;
  constructor(
    readonly status: number,
    /** Slug of the problem type: https://media-platform.dev/problems/<slug>. */
    readonly slug: string,
    detail: string,
    readonly options: {
      title?: string;
      errors?: FieldError[];
      headers?: Record<string, string>;
      /** Extension members added to the body (RFC 9457 section 3.2). */
      extensions?: Record<string, unknown>;
    } = {},
  ) {
    super(detail);
    this.name = "ProblemError";
    this.title = options.title ?? PROBLEM_TITLES[status] ?? "Error";
  }

  /** Extra response headers (Retry-After, WWW-Authenticate, Allow, ...). */
  get headers(): Record<string, string> {
    return this.options.headers ?? {};
  }

  /**
   * What the service log records of an answered problem (at info: why a request was refused):
   * status, type slug, detail and field errors. Details and field errors name fields, limits and
   * ids, never a token, a signature or text a user wrote, so they are fit for the log.
   */
  toLog(): { status: number; type: string; detail: string; errors?: FieldError[] } {
    return {
      status: this.status,
      type: this.slug,
      detail: this.message,
      ...(this.options.errors && { errors: this.options.errors }),
    };
  }

  toBody(instance?: string): Problem {
    const body: Problem = {
      ...this.options.extensions,
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
