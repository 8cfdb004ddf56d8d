import type { RawImage } from "./kernel";
import { KernelInputError, assertRawImage, clampByte, type PixelKernel } from "./kernel";

export type NoiseType = "gaussian" | "uniform" | "salt-pepper";

export interface AddNoiseParams {
  type: NoiseType;
  /** Percent of full scale: gaussian sigma, uniform half-width, or share of salt-pepper pixels. */
  amount: number;
  /** 128-bit PRNG state (four uint32, not all zero), derived from the cache key by the caller. */
  seed: readonly [number, number, number, number];
}

/**
 * xoshiro128** 1.1 (Blackman & Vigna, https://prng.di.unimi.it/xoshiro128starstar.c):
 * small, fast, 2^128 - 1 period, and integer-only so it gives the same stream everywhere.
 */
export function xoshiro128ss(seed: readonly [number, number, number, number]): () => number {
  let [a, b, c, d] = seed.map((v) => v >>> 0) as [number, number, number, number];
  if ((a | b | c | d) === 0) throw new KernelInputError("xoshiro128** seed must not be all zero");
  return () => {
    const result = Math.imul(rotl(Math.imul(b, 5), 7), 9) >>> 0;
    const t = b << 9;
    c ^= a;
    d ^= b;
    b ^= c;
    a ^= d;
    c ^= t;
    d = rotl(d, 11);
    return result;
  };
}

const rotl = (x: number, k: number): number => (x << k) | (x >>> (32 - k));
const TWO_POW_32 = 4294967296;

/**
 * Adds noise to R, G and B (alpha untouched), each channel independently, reproducibly for a
 * given seed. Gaussian uses Marsaglia's polar method, which needs only log and sqrt (V8's
 * fdlibm log is deterministic across platforms, sqrt is exact), so replicas agree byte for byte.
 */
export const addNoise: PixelKernel<AddNoiseParams> = (image: RawImage, { type, amount, seed }) => {
  assertRawImage(image);
  if (!(amount >= 0)) throw new KernelInputError("invalid noise amount");
  const next = xoshiro128ss(seed);
  const unit = (): number => next() / TWO_POW_32;
  const { data, channels } = image;
  const scale = (amount / 100) * 255;
  switch (type) {
    case "gaussian": {
      let spare: number | undefined;
      const gaussian = (): number => {
        if (spare !== undefined) {
          const z = spare;
          spare = undefined;
          return z;
        }
        let u: number, v: number, s: number;
        do {
          u = unit() * 2 - 1;
          v = unit() * 2 - 1;
          s = u * u + v * v;
        } while (s >= 1 || s === 0);
        const m = Math.sqrt((-2 * Math.log(s)) / s);
        spare = v * m;
        return u * m;
      };
      for (let i = 0; i < data.length; i += channels) {
        for (let c = 0; c < 3; c++) data[i + c] = clampByte(data[i + c]! + gaussian() * scale);
      }
      break;
    }
    case "uniform":
      for (let i = 0; i < data.length; i += channels) {
        for (let c = 0; c < 3; c++) data[i + c] = clampByte(data[i + c]! + (unit() * 2 - 1) * scale);
      }
      break;
    case "salt-pepper": {
      // Each pixel is hit with probability amount %, then is black or white with equal odds.
      const threshold = Math.min(1, amount / 100) * TWO_POW_32;
      for (let i = 0; i < data.length; i += channels) {
        if (next() < threshold) {
          const v = next() & 1 ? 255 : 0;
          data[i] = data[i + 1] = data[i + 2] = v;
        }
      }
      break;
    }
    default:
      throw new KernelInputError(`unknown noise type ${String(type)}`);
  }
  return image;
};
