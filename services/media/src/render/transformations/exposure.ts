import { runPixelKernel } from "../pixels/step";
import { sameSize, type Transformation } from "./transformation";

/** Exposure in stops: linear-light values x 2^value, clipped, re-encoded to sRGB. */
export const exposure = {
  input: "raw",
  outputSize: sameSize,
  async apply(image, params, ctx) {
    // 0 EV is the identity: skip the round trip through a worker.
    if (params.value === 0) return image;
    return runPixelKernel(image, ctx, "exposure", { value: params.value });
  },
} satisfies Transformation<"exposure">;
