import { addNoise } from "./add-noise";
import { clahe } from "./clahe";
import { colorBalance } from "./color-balance";
import { exposure } from "./exposure";
import { solarize } from "./solarize";
import { wave } from "./wave";

/** The kernels a pixel worker can run, by the name passed to PixelWorkers.run. */
export const kernels = {
  "add-noise": addNoise,
  clahe,
  "color-balance": colorBalance,
  exposure,
  solarize,
  wave,
};

export type KernelName = keyof typeof kernels;
/** The parameters of a kernel, read off its function: a step cannot pass another kernel's. */
export type KernelParams<K extends KernelName> = Parameters<(typeof kernels)[K]>[1];

export type { AddNoiseParams } from "./add-noise";
export type { ClaheParams } from "./clahe";
export type { ColorBalanceParams } from "./color-balance";
export type { ExposureParams } from "./exposure";
export type { SolarizeParams } from "./solarize";
export type { WaveParams } from "./wave";
