/** The sRGB transfer function (IEC 61966-2-1), shared by the kernels that work in linear light. */

export function srgbToLinear(v: number): number {
  return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
}

export function linearToSrgb(v: number): number {
  return v <= 0.0031308 ? v * 12.92 : 1.055 * Math.pow(v, 1 / 2.4) - 0.055;
}

/** Linear value (0..1) of each 8-bit sRGB code. */
export const SRGB_TO_LINEAR: Float64Array = (() => {
  const lut = new Float64Array(256);
  for (let i = 0; i < 256; i++) lut[i] = srgbToLinear(i / 255);
  return lut;
})();

/** Resolution of the linear -> 8-bit encode table: fine enough that its step stays below 0.06 of an output level. */
export const LINEAR_STEPS = 65535;

let encodeTable: Uint8Array | undefined;
/** 8-bit sRGB code for linear value i / LINEAR_STEPS (built on first use: 64 KB). */
export function linearToSrgbTable(): Uint8Array {
  if (!encodeTable) {
    encodeTable = new Uint8Array(LINEAR_STEPS + 1);
    for (let i = 0; i <= LINEAR_STEPS; i++) encodeTable[i] = Math.round(linearToSrgb(i / LINEAR_STEPS) * 255);
  }
  return encodeTable;
}
