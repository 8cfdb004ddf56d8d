import type sharp from "sharp";
import { fromRaw, toRaw } from "../pipeline/raw";
import type { StepContext } from "../transformations/transformation";

/**
 * The body of every raw-pixel transformation: materialise the pending pipeline to 8-bit
 * pixels, run the named kernel in a pixel worker, continue from its result.
 */
export async function runPixelKernel<P>(
  image: sharp.Sharp,
  ctx: StepContext,
  kernel: string,
  params: P,
): Promise<sharp.Sharp> {
  const raw = await toRaw(image);
  // sharp's buffers are external memory V8 cannot detach, so postMessage would clone them
  // (serialise + deserialise); one copy into a V8-owned buffer that is then transferred is cheaper.
  const owned = { ...raw, data: Buffer.from(raw.data) };
  return fromRaw(await ctx.pixels.run(kernel, owned, params));
}
