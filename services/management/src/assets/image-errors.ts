/** What image analysis finds wrong with an upload; the HTTP layer (problem.ts) maps each to a problem. */

/** Not an image, a format the platform does not accept, or markup that is not an acceptable SVG. */
export class UnsupportedImageError extends Error {
  constructor(detail: string) {
    super(detail);
    this.name = "UnsupportedImageError";
  }
}

/** A recognised format whose bytes cannot be decoded (truncated, corrupt, no dimensions). */
export class UndecodableImageError extends Error {
  constructor(detail = "The image could not be decoded (truncated or corrupt)") {
    super(detail);
    this.name = "UndecodableImageError";
  }
}

/** More pixels than LIMIT_INPUT_PIXELS lets the decoder read. */
export class ImagePixelLimitError extends Error {
  constructor(
    readonly limitInputPixels: number,
    width?: number,
    height?: number,
  ) {
    super(
      width !== undefined && height !== undefined
        ? `The image is ${width}x${height} = ${width * height} pixels, above the limit of ${limitInputPixels} pixels (LIMIT_INPUT_PIXELS)`
        : `The image exceeds the decoder limit of ${limitInputPixels} pixels (LIMIT_INPUT_PIXELS)`,
    );
    this.name = "ImagePixelLimitError";
  }
}
