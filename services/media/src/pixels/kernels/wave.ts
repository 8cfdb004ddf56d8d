import type { RawImage } from "../../pipeline/raw";
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
  const shift = new Float64Array(width);
  for (let x = 0; x < width; x++) {
    shift[x] = Math.fround(Math.abs(amplitude) + amplitude * Math.sin((2 * Math.PI * x) / wavelength));
  }
  const stride = width * channels;
  const bgAlpha = channels === 4 ? background[3] : 255;
  for (let y = 0; y < outHeight; y++) {
    for (let x = 0; x < width; x++) {
      const sy = y - shift[x]!;
      const y0 = Math.floor(sy);
      const t = sy - y0;
      const inside0 = y0 >= 0 && y0 < height;
      const inside1 = y0 + 1 >= 0 && y0 + 1 < height;
      const i0 = y0 * stride + x * channels;
      const i1 = i0 + stride;
      const o = (y * width + x) * channels;
      if (channels === 3) {
        for (let c = 0; c < 3; c++) {
          const v0 = inside0 ? data[i0 + c]! : background[c]!;
          const v1 = inside1 ? data[i1 + c]! : background[c]!;
          out[o + c] = Math.round(v0 + (v1 - v0) * t);
        }
      } else {
        const a0 = inside0 ? data[i0 + 3]! : bgAlpha;
        const a1 = inside1 ? data[i1 + 3]! : bgAlpha;
        const w0 = (1 - t) * a0;
        const w1 = t * a1;
        const alpha = w0 + w1;
        for (let c = 0; c < 3; c++) {
          const v0 = inside0 ? data[i0 + c]! : background[c]!;
          const v1 = inside1 ? data[i1 + c]! : background[c]!;
          out[o + c] = alpha > 0 ? Math.round((v0 * w0 + v1 * w1) / alpha) : 0;
        }
        out[o + 3] = Math.round(alpha);
      }
    }
  }
  return { data: out, width, height: outHeight, channels };
};
