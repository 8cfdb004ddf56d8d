import { DomainError, type FieldError } from "@media-platform/contracts";

/**
 * Errors the render pipeline raises, each with its code; the service's problem table
 * (problem.ts, MEDIA_PROBLEMS) answers them. A stored original that cannot be read (unsupported
 * content type, corrupt bytes) and one above LIMIT_INPUT_PIXELS are contracts' shared image
 * errors: UndecodableImageError and ImagePixelLimitError.
 */
export { ImagePixelLimitError, UndecodableImageError } from "@media-platform/contracts";

/** The stored original's content type is not an image format the service can encode. */
export const unsupportedOriginal = (contentType: string): string =>
  `stored original has an unsupported content type: ${contentType}`;

/** The stored original cannot be decoded (truncated, corrupt, not an image). */
export const undecodableOriginal = (reason: string): string => `stored original cannot be decoded: ${reason}`;

/**
 * The parameters are valid but cannot apply to this image (e.g. a crop region outside it,
 * an output above the pixel cap, more work than the budget): answered 400 naming `path`.
 */
export class TransformationInputError extends DomainError<"transformation-not-applicable"> {
  readonly code = "transformation-not-applicable";

  constructor(
    readonly path: string,
    /** What is wrong, without the path. */
    readonly reason: string,
  ) {
    super(`${path}: ${reason}`);
    this.name = "TransformationInputError";
  }

  override get fields(): FieldError[] {
    return [{ path: this.path, message: this.reason }];
  }
}

/** max-bytes: no encode within the bounded tries came within the byte budget. */
export class ByteBudgetError extends DomainError<"max-bytes-unreachable"> {
  readonly code = "max-bytes-unreachable";

  constructor(
    readonly budget: number,
    readonly smallest: number,
  ) {
    super(
      `the result cannot be encoded within ${budget} bytes (max-bytes.value): the smallest encode tried, at lower quality and smaller sizes, was ${smallest} bytes`,
    );
    this.name = "ByteBudgetError";
  }

  override get fields(): FieldError[] {
    return [{ path: "max-bytes.value", message: `no encode within ${this.budget} bytes (smallest: ${this.smallest})` }];
  }
}
