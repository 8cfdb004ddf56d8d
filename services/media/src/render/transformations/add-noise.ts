import { createHash } from "node:crypto";
import type { AddNoiseParams } from "../pixels/kernels";
import { runPixelKernel } from "../pixels/step";
import { sameSize, type Transformation } from "./transformation";

/**
 * The noise seed: SHA-256 of the cache key and the step's position, first 128 bits. The same
 * URL gives the same bytes on every replica; two add-noise steps in one URL differ.
 */
export function noiseSeed(cacheKey: string, stepIndex: number): AddNoiseParams["seed"] {
  const digest = createHash("sha256").update(`${cacheKey}\u0000${stepIndex}`).digest();
  const seed = [0, 4, 8, 12].map((offset) => digest.readUInt32LE(offset)) as [number, number, number, number];
  // xoshiro128** needs a non-zero state; a zero 128-bit prefix of SHA-256 will not happen, but stay total.
  if (seed.every((word) => word === 0)) seed[0] = 1;
  return seed;
}

/** Gaussian, uniform or salt-pepper noise, deterministic per URL. */
export const addNoise = {
  input: "raw",
  outputSize: sameSize,
  apply: (image, params, ctx) =>
    runPixelKernel(image, ctx, "add-noise", {
      type: params.type,
      amount: params.amount,
      seed: noiseSeed(ctx.cacheKey, ctx.stepIndex),
    }),
} satisfies Transformation<"add-noise">;
