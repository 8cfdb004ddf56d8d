import type { RawImage } from "./kernel";
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
 * O(tilesX) whatever the tile count (tileSize 2 on 12 MP means 3 M tiles). Tiles of fewer
 * than 16 pixels skip the 256-entry LUTs (most bins are empty) and evaluate the same
 * clipped cumulative count at the looked-up level from the tile's few distinct values.
 */
export function claheChannel(
  src: Uint8Array,
  width: number,
  height: number,
  grid: { clipLimit: number; tilesX: number; tilesY: number },
): Uint8Array {
  const { clipLimit, tilesX, tilesY } = grid;
  const divisible = width % tilesX === 0 && height % tilesY === 0;
  const extWidth = divisible ? width : width + tilesX - (width % tilesX);
  const extHeight = divisible ? height : height + tilesY - (height % tilesY);
  const tileW = extWidth / tilesX;
  const tileH = extHeight / tilesY;
  const tileArea = tileW * tileH;
  const lutScale = f32(255 / tileArea);
  const clip = clipLimit > 0 ? max(1, trunc((clipLimit * tileArea) / 256)) : 0;

  // Histogram bin base (tile index * 256) and source column of every column of the extended image.
  // (The histogram and LUT rows below are only built on the dense path.)
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

  const n = neighbours(width, height, { tileW, tileH, tilesX, tilesY });
  const { ind1, ind2, xa, xa1 } = n;

  const dst = new Uint8Array(width * height);
  if (tileArea < SPARSE_TILE_AREA) {
    sparseInterpolation(src, dst, { width, height, extWidth, tilesX, tileW, tileH, colSrc, clip, lutScale }, n);
    return dst;
  }
  for (let y = 0; y < height; y++) {
    const ty2 = n.ty2[y]!;
    while (builtRows <= ty2) buildLutRow(builtRows++);
    const lut1 = lutRows[n.ty1[y]! & 1]!;
    const lut2 = lutRows[ty2 & 1]!;
    const ya = n.ya[y]!;
    const ya1 = n.ya1[y]!;
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

/** Below this many pixels per tile, per-level evaluation beats building 256-entry LUTs. */
const SPARSE_TILE_AREA = 16;

/**
 * The two neighbouring tiles of every column (LUT offsets ind1/ind2, weights xa/xa1) and of
 * every row (tile rows ty1/ty2, weights ya/ya1), in float as OpenCV computes them.
 */
interface Neighbours {
  ind1: Int32Array;
  ind2: Int32Array;
  xa: Float32Array;
  xa1: Float32Array;
  ty1: Int32Array;
  ty2: Int32Array;
  ya: Float32Array;
  ya1: Float32Array;
}

function neighbours(
  width: number,
  height: number,
  tiles: { tileW: number; tileH: number; tilesX: number; tilesY: number },
): Neighbours {
  const { tileW, tileH, tilesX, tilesY } = tiles;
  const invTw = f32(1 / tileW);
  const invTh = f32(1 / tileH);
  const n: Neighbours = {
    ind1: new Int32Array(width),
    ind2: new Int32Array(width),
    xa: new Float32Array(width),
    xa1: new Float32Array(width),
    ty1: new Int32Array(height),
    ty2: new Int32Array(height),
    ya: new Float32Array(height),
    ya1: new Float32Array(height),
  };
  for (let x = 0; x < width; x++) {
    const txf = f32(f32(x * invTw) - 0.5);
    const tx1 = floor(txf);
    n.xa[x] = f32(txf - tx1);
    n.xa1[x] = f32(1 - n.xa[x]!);
    n.ind1[x] = max(tx1, 0) * 256;
    n.ind2[x] = min(tx1 + 1, tilesX - 1) * 256;
  }
  for (let y = 0; y < height; y++) {
    const tyf = f32(f32(y * invTh) - 0.5);
    const ty = floor(tyf);
    n.ya[y] = f32(tyf - ty);
    n.ya1[y] = f32(1 - n.ya[y]!);
    n.ty1[y] = max(ty, 0);
    n.ty2[y] = min(ty + 1, tilesY - 1);
  }
  return n;
}

/** What the sparse path needs of the extended image's geometry. */
interface SparseGrid {
  width: number;
  height: number;
  extWidth: number;
  tilesX: number;
  tileW: number;
  tileH: number;
  colSrc: Int32Array;
  /** The histogram clip (0: none) and the LUT's scale, as claheChannel computed them. */
  clip: number;
  lutScale: number;
}

/**
 * The small-tile path of claheChannel: identical results. Per tile it keeps the sorted
 * distinct levels with the running sum of their clipped counts, plus the redistribution
 * (batch per bin, residual bins every `step`), and computes the cumulative count at a level
 * v as: clipped counts of levels <= v + batch * (v + 1) + min(residual, floor(v / step) + 1).
 */
function sparseInterpolation(src: Uint8Array, dst: Uint8Array, grid: SparseGrid, n: Neighbours): void {
  const { width, height, extWidth, tilesX, tileW, tileH, colSrc, clip, lutScale } = grid;
  const { ind1, ind2, xa, xa1 } = n;
  const area = tileW * tileH;
  const rows = [0, 1].map(() => ({
    levels: new Uint8Array(tilesX * area),
    cumulative: new Int32Array(tilesX * area),
    distinct: new Int32Array(tilesX),
    batch: new Int32Array(tilesX),
    residual: new Int32Array(tilesX),
    step: new Int32Array(tilesX),
  }));
  const colTile = new Int32Array(extWidth);
  for (let x = 0; x < extWidth; x++) colTile[x] = floor(x / tileW);
  const filled = new Int32Array(tilesX);
  let builtRows = 0;
  const buildRow = (ty: number): void => {
    const row = rows[ty & 1]!;
    const { levels, cumulative, distinct, batch, residual, step } = row;
    filled.fill(0);
    for (let y = ty * tileH; y < (ty + 1) * tileH; y++) {
      const srcRow = reflect101(y, height) * width;
      for (let x = 0; x < extWidth; x++) {
        const t = colTile[x]!;
        levels[t * area + filled[t]!++] = src[srcRow + colSrc[x]!]!;
      }
    }
    for (let t = 0; t < tilesX; t++) {
      const base = t * area;
      // Insertion sort: at most 15 values.
      for (let i = base + 1; i < base + area; i++) {
        const v = levels[i]!;
        let j = i - 1;
        while (j >= base && levels[j]! > v) {
          levels[j + 1] = levels[j]!;
          j--;
        }
        levels[j + 1] = v;
      }
      let k = 0;
      let sum = 0;
      let clipped = 0;
      for (let i = base; i < base + area;) {
        const v = levels[i]!;
        let count = 0;
        while (i < base + area && levels[i] === v) {
          count++;
          i++;
        }
        const kept = clip > 0 && count > clip ? clip : count;
        clipped += count - kept;
        sum += kept;
        levels[base + k] = v;
        cumulative[base + k] = sum;
        k++;
      }
      distinct[t] = k;
      const b = trunc(clipped / 256);
      const r = clipped - b * 256;
      batch[t] = b;
      residual[t] = r;
      step[t] = r !== 0 ? max(trunc(256 / r), 1) : 1;
    }
  };
  const mapping = (row: (typeof rows)[number], t: number, v: number): number => {
    const base = t * area;
    const end = base + row.distinct[t]!;
    let sum = 0;
    for (let i = base; i < end && row.levels[i]! <= v; i++) sum = row.cumulative[i]!;
    sum += row.batch[t]! * (v + 1);
    const r = row.residual[t]!;
    if (r > 0) sum += min(r, floor(v / row.step[t]!) + 1);
    return saturateByte(f32(sum * lutScale));
  };
  for (let y = 0; y < height; y++) {
    const ty2 = n.ty2[y]!;
    while (builtRows <= ty2) buildRow(builtRows++);
    const row1 = rows[n.ty1[y]! & 1]!;
    const row2 = rows[ty2 & 1]!;
    const ya = n.ya[y]!;
    const ya1 = n.ya1[y]!;
    const offset = y * width;
    for (let x = 0; x < width; x++) {
      const v = src[offset + x]!;
      const t1 = ind1[x]! >> 8;
      const t2 = ind2[x]! >> 8;
      const wa = xa[x]!;
      const wa1 = xa1[x]!;
      const top = f32(f32(f32(mapping(row1, t1, v) * wa1) + f32(mapping(row1, t2, v) * wa)) * ya1);
      const bottom = f32(f32(f32(mapping(row2, t1, v) * wa1) + f32(mapping(row2, t2, v) * wa)) * ya);
      dst[offset + x] = saturateByte(f32(top + bottom));
    }
  }
}

// sRGB (D65) <-> XYZ, the matrix and white point OpenCV's cvtColor uses for Lab.
const M = [0.412453, 0.35758, 0.180423, 0.212671, 0.71516, 0.072169, 0.019334, 0.119193, 0.950227] as const;
const XN = 0.950456;
const ZN = 1.088754;
const MI = invert3x3(M);
const EPSILON = 216 / 24389;
const KAPPA = 24389 / 27;
const labF = (t: number): number => (t > EPSILON ? cbrt(t) : (KAPPA * t + 16) / 116);

/**
 * OpenCV's 8-bit Lab lightness (cvtColor COLOR_RGB2Lab on CV_8U, bit-exact fixed point:
 * 11-bit linear gamma table, Y = (871 R + 2929 G + 296 B) >> 12, cube-root table, L scaled
 * to 0..255). Matching its quantisation matters: CLAHE's steep tile mappings turn a 1-level
 * difference in L into several levels of output.
 */
const opencvLightness = (() => {
  const gamma = new Int32Array(256);
  const toLinear = SRGB_TO_LINEAR;
  for (let i = 0; i < 256; i++) gamma[i] = round(255 * 8 * toLinear[i]!);
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

/** Resolution of the Lab f(t) table: the step moves L* by under 0.02 even at the knee. */
const LAB_F_STEPS = 65535;
let labFTable: Float64Array | undefined;
function labFTableOnce(): Float64Array {
  if (!labFTable) {
    labFTable = new Float64Array(LAB_F_STEPS + 1);
    for (let i = 0; i <= LAB_F_STEPS; i++) labFTable[i] = labF(i / LAB_F_STEPS);
  }
  return labFTable;
}

/**
 * CLAHE on the L channel of CIE Lab (L scaled to 0..255 as OpenCV's 8-bit Lab), so hue and
 * chroma are kept. L is OpenCV's own 8-bit value; the way back keeps each pixel's a and b in
 * float (OpenCV would round them to 8 bits) and only moves L to the equalised level. The
 * conversion lives here, in the worker, to keep the main thread free. Alpha is untouched.
 */
export const clahe: PixelKernel<ClaheParams> = (image: RawImage, { clipLimit, tileSize }) => {
  assertRawImage(image);
  if (!(tileSize >= 1) || !(clipLimit >= 0)) throw new KernelInputError(`invalid clahe parameters`);
  const { data, width, height, channels } = image;
  const pixels = width * height;
  const lightness = new Uint8Array(pixels);
  for (let p = 0, i = 0; p < pixels; p++, i += channels)
    lightness[p] = opencvLightness(data[i]!, data[i + 1]!, data[i + 2]!);
  const { tilesX, tilesY } = claheGrid(width, height, tileSize);
  const equalised = claheChannel(lightness, width, height, { clipLimit, tilesX, tilesY });

  // Locals, not the imported bindings: module re-exports compile to getters, too slow per pixel.
  const toLinear = SRGB_TO_LINEAR;
  const encode = linearToSrgbTable();
  const steps = LINEAR_STEPS;
  const fTable = labFTableOnce();
  const fyOfLevel = new Float64Array(256);
  for (let l = 0; l < 256; l++) fyOfLevel[l] = (l / 2.55 + 16) / 116;
  const [m0, m1, m2, m3, m4, m5, m6, m7, m8] = M;
  const [i0, i1, i2, i3, i4, i5, i6, i7, i8] = MI as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const fIndex = (t: number): number => (t <= 0 ? 0 : t >= 1 ? LAB_F_STEPS : (t * LAB_F_STEPS + 0.5) | 0);
  const fInverse = (f: number): number => (f > 6 / 29 ? f * f * f : (116 * f - 16) / KAPPA);
  const encodeIndex = (v: number): number => (v <= 0 ? 0 : v >= 1 ? steps : (v * steps + 0.5) | 0);
  for (let p = 0, i = 0; p < pixels; p++, i += channels) {
    const level = equalised[p]!;
    if (level === lightness[p]) continue;
    const r = toLinear[data[i]!]!;
    const g = toLinear[data[i + 1]!]!;
    const b = toLinear[data[i + 2]!]!;
    const fy = fTable[fIndex(m3 * r + m4 * g + m5 * b)]!;
    const fx = fTable[fIndex((m0 * r + m1 * g + m2 * b) / XN)]!;
    const fz = fTable[fIndex((m6 * r + m7 * g + m8 * b) / ZN)]!;
    const fy2 = fyOfLevel[level]!;
    const X = XN * fInverse(fy2 + fx - fy);
    const Y = fInverse(fy2);
    const Z = ZN * fInverse(fy2 + fz - fy);
    data[i] = encode[encodeIndex(i0 * X + i1 * Y + i2 * Z)]!;
    data[i + 1] = encode[encodeIndex(i3 * X + i4 * Y + i5 * Z)]!;
    data[i + 2] = encode[encodeIndex(i6 * X + i7 * Y + i8 * Z)]!;
  }
  return image;
};

function invert3x3(m: readonly number[]): number[] {
  const [a, b, c, d, e, f, g, h, i] = m as [number, number, number, number, number, number, number, number, number];
  const A = e * i - f * h;
  const B = -(d * i - f * g);
  const C = d * h - e * g;
  const det = a * A + b * B + c * C;
  return [
    A,
    -(b * i - c * h),
    b * f - c * e,
    B,
    a * i - c * g,
    -(a * f - c * d),
    C,
    -(a * h - b * g),
    a * e - b * d,
  ].map((v) => v / det);
}
