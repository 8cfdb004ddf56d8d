import type { RawImage } from "./kernel";
import { assertRawImage, type PixelKernel } from "./kernel";

export type TonalRange = "shadows" | "midtones" | "highlights";

export interface ColorBalanceParams {
  /** -100..100: negative adds cyan, positive adds red. */
  cyan: number;
  /** -100..100: negative adds green, positive adds magenta. */
  magenta: number;
  /** -100..100: negative adds blue, positive adds yellow. */
  yellow: number;
  target: TonalRange;
}

// GIMP's mask ramps: width A at lightness B and 1 - B; SCALE is the strength of a full +-100 shift.
const A = 0.25;
const B = 0.333;
const SCALE = 0.7;
const clamp01 = (v: number): number => (v < 0 ? 0 : v > 1 ? 1 : v);

/**
 * Weight of a tonal range at HSL lightness l. The three masks (shadows falling, midtones a
 * plateau, highlights rising, ramps of width 0.25 centred at 1/3 and 2/3) sum to 1, so the
 * same shift on all three ranges moves every pixel equally.
 */
export function tonalWeight(range: TonalRange, l: number): number {
  switch (range) {
    case "shadows":
      return clamp01((l - B) / -A + 0.5);
    case "midtones":
      return clamp01((l - B) / A + 0.5) * clamp01((l + B - 1) / -A + 0.5);
    case "highlights":
      return clamp01((l + B - 1) / A + 0.5);
  }
}

/** GIMP's RGB -> HSL (gimp_rgb_to_hsl); h in 0..1, -1 when undefined. */
function rgbToHsl(r: number, g: number, b: number, out: Float64Array): void {
  const max = Math.max(r, g, b);
  const min = Math.min(r, g, b);
  const l = (max + min) / 2;
  out[2] = l;
  if (max === min) {
    out[0] = -1;
    out[1] = 0;
    return;
  }
  const delta = max - min;
  out[1] = l <= 0.5 ? delta / (max + min) : delta / (2 - max - min);
  let h = r === max ? (g - b) / delta : g === max ? 2 + (b - r) / delta : 4 + (r - g) / delta;
  h /= 6;
  out[0] = h < 0 ? h + 1 : h;
}

function hslValue(n1: number, n2: number, hue: number): number {
  if (hue > 6) hue -= 6;
  else if (hue < 0) hue += 6;
  if (hue < 1) return n1 + (n2 - n1) * hue;
  if (hue < 3) return n2;
  if (hue < 4) return n1 + (n2 - n1) * (4 - hue);
  return n1;
}

/**
 * GIMP's colour balance (gimp_operation_color_balance, "preserve luminosity" on), on
 * non-linear sRGB values as GIMP does: each channel is shifted by the axis value (/100 x 0.7)
 * weighted by the tonal-range mask at the pixel's HSL lightness, clipped, and the result is
 * given back the original HSL lightness. Our spec names the opposite ends of two axes
 * (magenta and yellow positive), so they enter GIMP's magenta-green / yellow-blue negated.
 * Alpha is untouched.
 */
export const colorBalance: PixelKernel<ColorBalanceParams> = (image: RawImage, params) => {
  assertRawImage(image);
  const shift = [params.cyan / 100, -params.magenta / 100, -params.yellow / 100].map((v) => v * SCALE) as [
    number,
    number,
    number,
  ];
  if (shift.every((v) => v === 0)) return image;
  // The shift depends only on lightness, and (max + min) of 8-bit values takes 511 values.
  const dr = new Float64Array(511);
  const dg = new Float64Array(511);
  const db = new Float64Array(511);
  for (let s = 0; s < 511; s++) {
    const w = tonalWeight(params.target, s / 510);
    dr[s] = shift[0] * w;
    dg[s] = shift[1] * w;
    db[s] = shift[2] * w;
  }
  const { data, channels } = image;
  const hsl = new Float64Array(3);
  for (let i = 0; i < data.length; i += channels) {
    const r8 = data[i]!;
    const g8 = data[i + 1]!;
    const b8 = data[i + 2]!;
    const sum = Math.max(r8, g8, b8) + Math.min(r8, g8, b8);
    const l = sum / 510;
    const r = clamp01(r8 / 255 + dr[sum]!);
    const g = clamp01(g8 / 255 + dg[sum]!);
    const b = clamp01(b8 / 255 + db[sum]!);
    rgbToHsl(r, g, b, hsl);
    const s = hsl[1]!;
    if (s === 0) {
      data[i] = data[i + 1] = data[i + 2] = Math.round(l * 255);
      continue;
    }
    const h6 = hsl[0]! * 6;
    const m2 = l <= 0.5 ? l * (1 + s) : l + s - l * s;
    const m1 = 2 * l - m2;
    data[i] = Math.round(hslValue(m1, m2, h6 + 2) * 255);
    data[i + 1] = Math.round(hslValue(m1, m2, h6) * 255);
    data[i + 2] = Math.round(hslValue(m1, m2, h6 - 2) * 255);
  }
  return image;
};
