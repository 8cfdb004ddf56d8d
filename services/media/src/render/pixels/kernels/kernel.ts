/**
 * Decoded pixels between steps: always 8-bit sRGB, 3 channels (RGB) or 4 (RGBA),
 * row-major, no padding. Kernels in worker threads receive exactly this.
 */
export interface RawImage {
  data: Buffer;
  width: number;
  height: number;
  channels: 3 | 4;
}

/**
 * A raw-pixel kernel: a pure function of the image and its parameters. Kernels run inside
 * worker threads, so they import nothing with side effects (no sharp) and only structured-
 * cloneable parameters reach them.
 */
export type PixelKernel<P> = (image: RawImage, params: P) => RawImage;

export class KernelInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "KernelInputError";
  }
}

/** Guards against a mislabelled buffer before a kernel indexes into it. */
export function assertRawImage(image: RawImage): void {
  const { width, height, channels, data } = image;
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) {
    throw new KernelInputError(`invalid image size ${width}x${height}`);
  }
  if (channels !== 3 && channels !== 4) throw new KernelInputError(`expected 3 or 4 channels, got ${channels}`);
  if (data.length !== width * height * channels) {
    throw new KernelInputError(
      `pixel buffer holds ${data.length} bytes, ${width}x${height}x${channels} needs ${width * height * channels}`,
    );
  }
}

export const clampByte = (v: number): number => (v <= 0 ? 0 : v >= 255 ? 255 : Math.round(v));
