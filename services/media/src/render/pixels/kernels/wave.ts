import type { RawImage } from "./kernel";
import { KernelInputError, assertRawImage, type PixelKernel } from "./kernel";

export interface WaveParams {
  /** Peak displacement in pixels. */
  amplitude: number;
  /** Distance between peaks in pixels. */
  wavelength: number;
  /** Fill where the displaced sample falls outside the source: RGBA 0..255. */
  background: readonly [number, number, number, number];
}

/** Output height of ImageMagick's -wave: the canvas grows by 2 x |amplitude| (truncated, as IM's size_t cast). */
export function waveHeight(height: number, amplitude: number): number {
  return Math.floor(height + 2 * Math.abs(amplitude));
}

/**
 * ImageMagick's quantisation of an interpolated value v (0..255): rounded to its 16-bit
 * quantum, then scaled down to 8 bits by truncation when written. Matching it makes the
 * output equal to convert -wave (Q16) instead of off by one on a third of the samples.
 */
const toByte = (v: number): number => (((v * 257 + 0.5) | 0) / 257) | 0;

/** ImageMagick's background colour default (white, opaque): what -wave shows outside the source. */
export const IMAGEMAGICK_BACKGROUND = [255, 255, 255, 255] as const;

/**
 * ImageMagick's WaveImage (IM 6.9, MagickCore/fx.c): column x is shifted down by
 * s(x) = |A| + A sin(2 pi x / wavelength) (s kept in single precision, as IM's sine map),
 * every output pixel (x, y) samples the source at (x, y - s(x)) with bilinear interpolation
 * (x is whole, so it is a blend of two rows) and the background virtual-pixel method: rows
 * outside the source read as the background colour. With alpha, colours are blended
 * weighted by alpha, as IM's interpolation does.
 */
export const wave: PixelKernel<WaveParams> = (image: RawImage, { amplitude, wavelength, background }) => {
  assertRawImage(image);
  if (!(wavelength > 0) || !Number.isFinite(amplitude)) throw new KernelInputError("invalid wave parameters");
  const { data, width, height, channels } = image;
  const outHeight = waveHeight(height, amplitude);
  const out = Buffer.allocUnsafe(width * outHeight * channels);
  // y - s(x) has the same fractional part on every row of a column: row offset and weight per column.
  const rowOffset = new Int32Array(width);
  const weight = new Float64Array(width);
  for (let x = 0; x < width; x++) {
    const shift = Math.fround(Math.abs(amplitude) + amplitude * Math.sin((2 * Math.PI * x) / wavelength));
    rowOffset[x] = Math.floor(-shift);
    weight[x] = -shift - rowOffset[x]!;
  }
  const stride = width * channels;
  const [bgR, bgG, bgB] = background;
  const bgA = channels === 4 ? background[3] : 255;
  for (let y = 0, o = 0; y < outHeight; y++) {
    for (let x = 0; x < width; x++, o += channels) {
      const y0 = y + rowOffset[x]!;
      const t = weight[x]!;
      const inside0 = y0 >= 0 && y0 < height;
      const inside1 = y0 + 1 >= 0 && y0 + 1 < height;
      const i0 = y0 * stride + x * channels;
      const i1 = i0 + stride;
      const r0 = inside0 ? data[i0]! : bgR;
      const g0 = inside0 ? data[i0 + 1]! : bgG;
      const b0 = inside0 ? data[i0 + 2]! : bgB;
      const r1 = inside1 ? data[i1]! : bgR;
      const g1 = inside1 ? data[i1 + 1]! : bgG;
      const b1 = inside1 ? data[i1 + 2]! : bgB;
      if (channels === 3) {
        out[o] = toByte(r0 + (r1 - r0) * t);
        out[o + 1] = toByte(g0 + (g1 - g0) * t);
        out[o + 2] = toByte(b0 + (b1 - b0) * t);
      } else {
        const w0 = (1 - t) * (inside0 ? data[i0 + 3]! : bgA);
        const w1 = t * (inside1 ? data[i1 + 3]! : bgA);
        const alpha = w0 + w1;
        const k = alpha > 0 ? 1 / alpha : 0;
        out[o] = toByte((r0 * w0 + r1 * w1) * k);
        out[o + 1] = toByte((g0 * w0 + g1 * w1) * k);
        out[o + 2] = toByte((b0 * w0 + b1 * w1) * k);
        out[o + 3] = toByte(alpha);
      }
    }
  }
  return { data: out, width, height: outHeight, channels };
};
