import type { RawImage } from "../../pipeline/raw";
import { KernelInputError, assertRawImage, type PixelKernel } from "./kernel";
import { LINEAR_STEPS, SRGB_TO_LINEAR, linearToSrgbTable } from "./srgb";

export interface ClaheParams {
  /** Clip limit as OpenCV takes it: a multiple of the mean bin count (1..40). */
  clipLimit: number;
  /** Tile side in pixels; mapped onto OpenCV's grid as ceil(dimension / tileSize) tiles. */
  tileSize: number;
}

/**
 * Our tileSize is in pixels, OpenCV's createCLAHE takes a tile grid: the grid is
 * ceil(width / tileSize) x ceil(height / tileSize), so tiles are at most tileSize wide
 * (OpenCV pads the image to a multiple of the grid, which can make them slightly smaller).
 */
export function claheGrid(width: number, height: number, tileSize: number): { tilesX: number; tilesY: number } {
  return { tilesX: ceil(width / tileSize), tilesY: ceil(height / tileSize) };
}

/** OpenCV's borderInterpolate for BORDER_REFLECT_101 (gfedcb|abcdefgh|gfedcba). */
function reflect101(p: number, len: number): number {
  if (len === 1) return 0;
  while (p < 0 || p >= len) p = p < 0 ? -p : 2 * len - 2 - p;
  return p;
}

// Module-level aliases: inside a vm context (jest) every `Math.x` in a hot loop is a slow
// global lookup through the context's interceptor; a captured reference is not.
const { ceil, cbrt, floor, fround: f32, max, min, round, trunc } = Math;

/** cvRound / saturate_cast<uchar>: round half to even, clamp to 0..255. */
function saturateByte(v: number): number {
  let r = floor(v + 0.5);
  if (r - v === 0.5 && (r & 1) === 1) r -= 1;
  return r < 0 ? 0 : r > 255 ? 255 : r;
}

/**
 * CLAHE of one 8-bit channel, following OpenCV's CLAHE_Impl (imgproc/src/clahe.cpp):
 * - when the size is not a multiple of the grid, the image is extended (BORDER_REFLECT_101)
 *   by tilesX - width % tilesX columns and tilesY - height % tilesY rows, as OpenCV does;
 * - per tile: 256-bin histogram, clipped at max(1, trunc(clipLimit * tileArea / 256)), the
 *   excess spread uniformly, the remainder one by one every max(256 / residual, 1) bins;
 * - LUT = saturate(cumulative count * 255 / tileArea), in float as OpenCV computes it;
 * - each pixel bilinearly interpolates the LUTs of the 4 nearest tile centres.
 * Tile LUTs are built one row of tiles at a time and only two rows are kept, so memory is
 * O(tilesX) whatever the tile count (tileSize 2 on 12 MP means 3 M tiles).
 */
export function claheChannel(
  src: Uint8Array,
  width: number,
  height: number,
  clipLimit: number,
  tilesX: number,
  tilesY: number,
): Uint8Array {
  const divisible = width % tilesX === 0 && height % tilesY === 0;
  const extWidth = divisible ? width : width + tilesX - (width % tilesX);
  const extHeight = divisible ? height : height + tilesY - (height % tilesY);
  const tileW = extWidth / tilesX;
  const tileH = extHeight / tilesY;
  const tileArea = tileW * tileH;
  const lutScale = f32(255 / tileArea);
  const clip = clipLimit > 0 ? max(1, trunc((clipLimit * tileArea) / 256)) : 0;

  // Histogram bin base (tile index * 256) and source column of every column of the extended image.
  const colBin = new Int32Array(extWidth);
  const colSrc = new Int32Array(extWidth);
  for (let x = 0; x < extWidth; x++) {
    colBin[x] = floor(x / tileW) * 256;
    colSrc[x] = reflect101(x, width);
  }

  const hist = new Int32Array(tilesX * 256);
  const lutRows = [new Uint8Array(tilesX * 256), new Uint8Array(tilesX * 256)];
  let builtRows = 0;
  const buildLutRow = (ty: number): void => {
    hist.fill(0);
    for (let y = ty * tileH; y < (ty + 1) * tileH; y++) {
      const row = reflect101(y, height) * width;
      for (let x = 0; x < extWidth; x++) hist[colBin[x]! + src[row + colSrc[x]!]!]!++;
    }
    const lut = lutRows[ty & 1]!;
    for (let t = 0; t < tilesX; t++) {
      const base = t * 256;
      if (clip > 0) {
        let clipped = 0;
        for (let i = base; i < base + 256; i++) {
          if (hist[i]! > clip) {
            clipped += hist[i]! - clip;
            hist[i] = clip;
          }
        }
        const batch = trunc(clipped / 256);
        let residual = clipped - batch * 256;
        for (let i = base; i < base + 256; i++) hist[i]! += batch;
        if (residual !== 0) {
          const step = max(trunc(256 / residual), 1);
          for (let i = 0; i < 256 && residual > 0; i += step, residual--) hist[base + i]!++;
        }
      }
      let sum = 0;
      for (let i = base; i < base + 256; i++) {
        sum += hist[i]!;
        lut[i] = saturateByte(f32(sum * lutScale));
      }
    }
  };

  // Per column: the two neighbouring tile LUT offsets and their weights (float, as OpenCV).
  const invTw = f32(1 / tileW);
  const invTh = f32(1 / tileH);
  const ind1 = new Int32Array(width);
  const ind2 = new Int32Array(width);
  const xa = new Float32Array(width);
  const xa1 = new Float32Array(width);
  for (let x = 0; x < width; x++) {
    const txf = f32(f32(x * invTw) - 0.5);
    const tx1 = floor(txf);
    xa[x] = f32(txf - tx1);
    xa1[x] = f32(1 - xa[x]!);
    ind1[x] = max(tx1, 0) * 256;
    ind2[x] = min(tx1 + 1, tilesX - 1) * 256;
  }

  const dst = new Uint8Array(width * height);
  for (let y = 0; y < height; y++) {
    const tyf = f32(f32(y * invTh) - 0.5);
    const ty = floor(tyf);
    const ya = f32(tyf - ty);
    const ya1 = f32(1 - ya);
    const ty1 = max(ty, 0);
    const ty2 = min(ty + 1, tilesY - 1);
    while (builtRows <= ty2) buildLutRow(builtRows++);
    const lut1 = lutRows[ty1 & 1]!;
    const lut2 = lutRows[ty2 & 1]!;
    const row = y * width;
    for (let x = 0; x < width; x++) {
      const v = src[row + x]!;
      const i1 = ind1[x]! + v;
      const i2 = ind2[x]! + v;
      const wa = xa[x]!;
      const wa1 = xa1[x]!;
      const top = f32(f32(f32(lut1[i1]! * wa1) + f32(lut1[i2]! * wa)) * ya1);
      const bottom = f32(f32(f32(lut2[i1]! * wa1) + f32(lut2[i2]! * wa)) * ya);
      dst[row + x] = saturateByte(f32(top + bottom));
    }
  }
  return dst;
}

// sRGB (D65) <-> XYZ, the matrix and white point OpenCV's cvtColor uses for Lab.
const M = [0.412453, 0.35758, 0.180423, 0.212671, 0.71516, 0.072169, 0.019334, 0.119193, 0.950227] as const;
const XN = 0.950456;
const ZN = 1.088754;
const MI = invert3x3(M);
const EPSILON = 216 / 24389;
const KAPPA = 24389 / 27;
const labF = (t: number): number => (t > EPSILON ? cbrt(t) : (KAPPA * t + 16) / 116);
const labFInverse = (f: number): number => (f > 6 / 29 ? f * f * f : (116 * f - 16) / KAPPA);

/**
 * OpenCV's 8-bit Lab lightness (cvtColor COLOR_RGB2Lab on CV_8U, bit-exact fixed point:
 * 11-bit linear gamma table, Y = (871 R + 2929 G + 296 B) >> 12, cube-root table, L scaled
 * to 0..255). Matching its quantisation matters: CLAHE's steep tile mappings turn a 1-level
 * difference in L into several levels of output.
 */
const opencvLightness = (() => {
  const gamma = new Int32Array(256);
  for (let i = 0; i < 256; i++) gamma[i] = round(255 * 8 * SRGB_TO_LINEAR[i]!);
  const cubeRoot = new Int32Array(3072);
  for (let i = 0; i < cubeRoot.length; i++) {
    const x = i / 2040;
    cubeRoot[i] = round(32768 * (x < 0.008856 ? x * 7.787 + 16 / 116 : cbrt(x)));
  }
  return (r: number, g: number, b: number): number => {
    const fy = cubeRoot[(gamma[r]! * 871 + gamma[g]! * 2929 + gamma[b]! * 296 + 2048) >> 12]!;
    const l = (296 * fy - 1336934 + 16384) >> 15;
    return l < 0 ? 0 : l > 255 ? 255 : l;
  };
})();

/**
 * CLAHE on the L channel of CIE Lab (L scaled to 0..255 as OpenCV's 8-bit Lab), so hue and
 * chroma are kept. L is OpenCV's own 8-bit value; the way back keeps each pixel's a and b in
 * float (OpenCV would round them to 8 bits) and only moves L to the equalised level. The conversion lives here, in the
 * worker, to keep the main thread free. Alpha is untouched.
 */
export const clahe: PixelKernel<ClaheParams> = (image: RawImage, { clipLimit, tileSize }) => {
  assertRawImage(image);
  if (!(tileSize >= 1) || !(clipLimit >= 0)) throw new KernelInputError(`invalid clahe parameters`);
  const { data, width, height, channels } = image;
  const pixels = width * height;
  const lightness = new Uint8Array(pixels);
  for (let p = 0, i = 0; p < pixels; p++, i += channels) {
    lightness[p] = opencvLightness(data[i]!, data[i + 1]!, data[i + 2]!);
  }
  const { tilesX, tilesY } = claheGrid(width, height, tileSize);
  const equalised = claheChannel(lightness, width, height, clipLimit, tilesX, tilesY);

  const encode = linearToSrgbTable();
  for (let p = 0, i = 0; p < pixels; p++, i += channels) {
    if (equalised[p] === lightness[p]) continue;
    const r = SRGB_TO_LINEAR[data[i]!]!;
    const g = SRGB_TO_LINEAR[data[i + 1]!]!;
    const b = SRGB_TO_LINEAR[data[i + 2]!]!;
    const fy = labF(M[3] * r + M[4] * g + M[5] * b);
    const fx = labF((M[0] * r + M[1] * g + M[2] * b) / XN);
    const fz = labF((M[6] * r + M[7] * g + M[8] * b) / ZN);
    const fy2 = (equalised[p]! / 2.55 + 16) / 116;
    const X = XN * labFInverse(fy2 + fx - fy);
    const Y = labFInverse(fy2);
    const Z = ZN * labFInverse(fy2 + fz - fy);
    data[i] = encode[toLinearIndex(MI[0] * X + MI[1] * Y + MI[2] * Z)]!;
    data[i + 1] = encode[toLinearIndex(MI[3] * X + MI[4] * Y + MI[5] * Z)]!;
    data[i + 2] = encode[toLinearIndex(MI[6] * X + MI[7] * Y + MI[8] * Z)]!;
  }
  return image;
};

function toLinearIndex(v: number): number {
  return v <= 0 ? 0 : v >= 1 ? LINEAR_STEPS : round(v * LINEAR_STEPS);
}

function invert3x3(m: readonly number[]): number[] {
  const [a, b, c, d, e, f, g, h, i] = m as [number, number, number, number, number, number, number, number, number];
  const A = e * i - f * h;
  const B = -(d * i - f * g);
  const C = d * h - e * g;
  const det = a * A + b * B + c * C;
  return [A, -(b * i - c * h), b * f - c * e, B, a * i - c * g, -(a * f - c * d), C, -(a * h - b * g), a * e - b * d].map(
    (v) => v / det,
  );
}
