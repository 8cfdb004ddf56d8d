import { transformationSpecs } from "@media-platform/contracts";
import type { ExposureParams } from "../pixels/kernels";
import { runPixelKernel } from "../pixels/step";
import { defineTransformation } from "./transformation";

/** Exposure in stops: linear-light values x 2^value, clipped, re-encoded to sRGB. */
export const exposure = defineTransformation({
  name: "exposure",
  params: transformationSpecs.exposure.params,
  async apply(image, params, ctx) {
    // 0 EV is the identity: skip the round trip through a worker.
    if (params.value === 0) return image;
    return runPixelKernel<ExposureParams>(image, ctx, "exposure", { value: params.value });
  },
});
