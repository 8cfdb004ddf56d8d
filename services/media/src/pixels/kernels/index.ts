import { addNoise } from "./add-noise";
import { clahe } from "./clahe";
import { colorBalance } from "./color-balance";
import { exposure } from "./exposure";
import type { PixelKernel } from "./kernel";
import { solarize } from "./solarize";
import { wave } from "./wave";

/** The kernels a pixel worker can run, by the name passed to PixelWorkers.run. */
export const kernels: Record<string, PixelKernel<never>> = {
  "add-noise": addNoise,
  clahe,
  "color-balance": colorBalance,
  exposure,
  solarize,
  wave,
};

export type { AddNoiseParams } from "./add-noise";
export type { ClaheParams } from "./clahe";
export type { ColorBalanceParams } from "./color-balance";
export type { ExposureParams } from "./exposure";
export type { SolarizeParams } from "./solarize";
export type { WaveParams } from "./wave";
