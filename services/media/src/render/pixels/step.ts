import type { RawImage } from "../types";
import type { StepContext } from "../types";
import type { KernelName, KernelParams } from "./kernels";

/**
 * The body of every raw-pixel transformation: run the named kernel in a pixel worker on the
 * pixels the runner decoded. Aborting the request's signal abandons the kernel.
 */
export function runPixelKernel<K extends KernelName>(
  raw: RawImage,
  ctx: StepContext,
  kernel: K,
  params: KernelParams<K>,
): Promise<RawImage> {
  // sharp's buffers are external memory V8 cannot detach, so postMessage would clone them
  // (serialise + deserialise); one copy into a V8-owned buffer that is then transferred is cheaper.
  const owned = { ...raw, data: Buffer.from(raw.data) };
  return ctx.pixels.run(kernel, owned, params, ctx.signal);
}
