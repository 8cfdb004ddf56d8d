import { ProblemError, type FieldError } from "./problem";

/**
 * What a domain error becomes on the wire: status, problem type slug and title, and response
 * headers (Retry-After). Each service holds one table of these, by error code.
 */
export interface ProblemSpec {
  readonly status: number;
  /** Slug of the problem type: https://media-platform.dev/problems/<slug>. */
  readonly type: string;
  readonly title: string;
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * When a client gets it, in a phrase of the docs' error tables (Markdown): the tables are
   * generated from the problem tables (`pnpm docs:problems`), so each row says what the code does.
   */
  readonly when: string;
}

/**
 * An error of a service's domain: it names its kind (`code`) and what went wrong, never an HTTP
 * status. The service's problem table (ProblemTable) turns the code into a problem, so the
 * domain imports nothing of HTTP.
 */
export abstract class DomainError<Code extends string = string> extends Error {
  abstract readonly code: Code;

  /** Field-level details of the problem's `errors` list; none by default. */
  get fields(): FieldError[] | undefined {
    return undefined;
  }

  /** Extension members of the problem body (facts a client acts on); none by default. */
  get extensions(): Record<string, unknown> | undefined {
    return undefined;
  }
}

/** What one occurrence adds to its problem: field errors, headers, RFC 9457 extension members. */
export interface ProblemOptions {
  errors?: FieldError[];
  headers?: Record<string, string>;
  /** Extension members of the body (e.g. `requiredScope`, `quota`): facts, never secrets. */
  extensions?: Record<string, unknown>;
}

/** One service's problems, by the code of each of its domain errors. */
export type ProblemTable<Code extends string = string> = Readonly<Record<Code, ProblemSpec>>;

/**
 * The problem a table gives `code`, with this occurrence's detail (and field errors, and headers on
 * top of the table's): how an HTTP layer answers a problem that is not a domain error.
 */
export function problemFrom<Code extends string>(
  table: ProblemTable<Code>,
  code: Code,
  detail: string,
  options: ProblemOptions = {},
): ProblemError {
  const spec = table[code];
  const headers = spec.headers || options.headers ? { ...spec.headers, ...options.headers } : undefined;
  return new ProblemError(spec.status, spec.type, detail, {
    title: spec.title,
    errors: options.errors,
    headers,
    extensions: options.extensions,
  });
}

/** A service's `problem(code, detail, options?)`: problemFrom over its table. */
export const problemsFrom =
  <Code extends string>(table: ProblemTable<Code>) =>
  (code: Code, detail: string, options?: ProblemOptions): ProblemError =>
    problemFrom(table, code, detail, options);

/** The problem of a domain error by its service's table; undefined for a code the table lacks. */
export function problemOf(err: DomainError, table: ProblemTable): ProblemError | undefined {
  if (!Object.hasOwn(table, err.code)) return undefined;
  return problemFrom(table, err.code, err.message, { errors: err.fields, extensions: err.extensions });
}

/**
 * The image failures both services meet, one problem each: an upload (management) and a stored
 * original (media) that cannot be read are the same problem to a client.
 */
export type ImageErrorCode = "unsupported-image" | "undecodable-image" | "image-too-large";

/** Not an image, or a format the platform does not accept (an upload). */
export class UnsupportedImageError extends DomainError<ImageErrorCode> {
  readonly code = "unsupported-image";
  constructor(detail: string) {
    super(detail);
    this.name = "UnsupportedImageError";
  }
}

/** A recognised format whose bytes cannot be decoded (truncated, corrupt, no dimensions). */
export class UndecodableImageError extends DomainError<ImageErrorCode> {
  readonly code = "undecodable-image";
  constructor(detail = "The image could not be decoded (truncated or corrupt)", options?: { cause?: unknown }) {
    super(detail, options);
    this.name = "UndecodableImageError";
  }
}

/** More pixels than LIMIT_INPUT_PIXELS lets the decoder read. */
export class ImagePixelLimitError extends DomainError<ImageErrorCode> {
  readonly code = "image-too-large";
  constructor(
    readonly limitInputPixels: number,
    size?: { width: number; height: number },
    /** Where the limit applies, for the problem's `errors` (`body.file` for an upload). */
    readonly path = "LIMIT_INPUT_PIXELS",
    options?: { cause?: unknown },
  ) {
    super(
      size
        ? `The image is ${size.width}x${size.height} = ${size.width * size.height} pixels, above the limit of ${limitInputPixels} pixels (LIMIT_INPUT_PIXELS)`
        : `The image exceeds the decoder limit of ${limitInputPixels} pixels (LIMIT_INPUT_PIXELS)`,
      options,
    );
    this.name = "ImagePixelLimitError";
  }

  override get fields(): FieldError[] {
    return [{ path: this.path, message: `must have at most ${this.limitInputPixels} pixels (LIMIT_INPUT_PIXELS)` }];
  }
}

/**
 * The one status and type of each shared image failure. A stored original the media service
 * cannot read, whatever the reason, is undecodable: 415 speaks of what the request carries.
 */
export const IMAGE_PROBLEMS: ProblemTable<ImageErrorCode> = {
  "unsupported-image": {
    status: 415,
    type: "unsupported-media-type",
    title: "Unsupported Media Type",
    when: "not an image, or a format the platform does not accept",
  },
  "undecodable-image": {
    status: 422,
    type: "undecodable-image",
    title: "Image cannot be decoded",
    when: "an image that cannot be decoded (truncated or corrupt)",
  },
  "image-too-large": {
    status: 422,
    type: "image-too-large",
    title: "Image too large to process",
    when: "an image of more pixels than `LIMIT_INPUT_PIXELS`",
  },
};
