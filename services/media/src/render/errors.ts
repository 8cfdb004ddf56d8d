/** Errors the render pipeline raises; the HTTP layer (app.ts) maps them to problems. */

/** The stored original's content type is not an image format the service can encode. */
export class UnsupportedOriginalError extends Error {
  constructor(readonly contentType: string) {
    super(`stored original has an unsupported content type: ${contentType}`);
    this.name = "UnsupportedOriginalError";
  }
}

/** The stored original cannot be decoded (truncated, corrupt, not an image). */
export class UndecodableOriginalError extends Error {
  constructor(reason: string, options?: { cause?: unknown }) {
    super(`stored original cannot be decoded: ${reason}`, options);
    this.name = "UndecodableOriginalError";
  }
}

/** The original has more pixels than LIMIT_INPUT_PIXELS allows. */
export class InputPixelLimitError extends Error {
  constructor(
    readonly limitInputPixels: number,
    options?: { cause?: unknown },
  ) {
    super(`the original exceeds LIMIT_INPUT_PIXELS (${limitInputPixels} pixels)`, options);
    this.name = "InputPixelLimitError";
  }
}

/**
 * The parameters are valid but cannot apply to this image (e.g. a crop region outside it,
 * an output above the pixel cap, more work than the budget): the service answers 400 naming `path`.
 */
export class TransformationInputError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(message);
    this.name = "TransformationInputError";
  }
}

/** max-bytes: no encode within the bounded tries came within the byte budget. */
export class ByteBudgetError extends Error {
  constructor(
    readonly budget: number,
    readonly smallest: number,
  ) {
    super(
      `the result cannot be encoded within ${budget} bytes (max-bytes.value): the smallest encode tried, at lower quality and smaller sizes, was ${smallest} bytes`,
    );
    this.name = "ByteBudgetError";
  }
}
