import type { RawImage } from "../render/types";
import { RecursiveGaussian } from "./recursive-gaussian";

/**
 * SSIMULACRA2 (Jon Sneyers, Cloudinary, 2022; revision of April 2023 as published in libjxl
 * tools/ssimulacra2.cc): a full-reference perceptual score, 100 = identical, 90 very high quality,
 * 70 high, 50 medium, 30 low, negative = very strong distortion.
 *
 * The design, step by step as its authors describe it:
 * - both images to linear sRGB, then per scale to XYB (rescaled to about 0..1, with B - Y);
 * - 6 scales, 1:1 to 1:32, each a 2x2 box downscale in linear RGB of the one before;
 * - per scale and XYB component three error maps: SSIM without the luma gamma term, "ringing"
 *   (the distorted image has edges where the original is smooth) and "blurring" (the reverse),
 *   each from a Gaussian blur of sigma 1.5 computed as the authors do, with the recursive
 *   approximation of Charalampidis (2016) and zero outside the image;
 * - of each map its mean (1-norm) and 4-norm: 108 numbers, weighted, summed and mapped onto the
 *   score by the authors' polynomial and power.
 * Translucent pixels are blended, in sRGB, over a dark (0.1) and a light (0.9) grey, and the lower
 * of the two scores counts, as the authors' tool does.
 * Checked against scores of the authors' tool in test/ssimulacra2-reference.test.ts.
 */

const NUM_SCALES = 6;
const C2 = 0.0009;
/** The backgrounds translucent pixels are blended over (sRGB-encoded grey levels). */
const BACKGROUNDS = [0.1, 0.9] as const;

/** The authors' weights of the 108 norms, in loop order: component, scale, norm, map. */
// prettier-ignore
const WEIGHTS: readonly number[] = [
  0.0, 0.0007376606707406586, 0.0, 0.0, 0.0007793481682867309, 0.0, 0.0, 0.0004371155730107379, 0.0,
  1.1041726426657346, 0.00066284834129271, 0.00015231632783718752, 0.0, 0.0016406437456599754, 0.0,
  1.8422455520539298, 11.441172603757666, 0.0, 0.0007989109436015163, 0.000176816438078653, 0.0,
  1.8787594979546387, 10.94906990605142, 0.0, 0.0007289346991508072, 0.9677937080626833, 0.0,
  0.00014003424285435884, 0.9981766977854967, 0.00031949755934435053, 0.0004550992113792063, 0.0, 0.0,
  0.0013648766163243398, 0.0, 0.0, 0.0, 0.0, 0.0, 7.466890328078848, 0.0, 17.445833984131262,
  0.0006235601634041466, 0.0, 0.0, 6.683678146179332, 0.00037724407979611296, 1.027889937768264,
  225.20515300849274, 0.0, 0.0, 19.213238186143016, 0.0011401524586618361, 0.001237755635509985,
  176.39317598450694, 0.0, 0.0, 24.43300999870476, 0.28520802612117757, 0.0004485436923833408, 0.0, 0.0,
  0.0, 34.77906344483772, 44.835625328877896, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
  0.0008680556573291698, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0005313191874358747, 0.0, 0.00016533814161379112,
  0.0, 0.0, 0.0, 0.0, 0.0, 0.0004179171803251336, 0.0017290828234722833, 0.0, 0.0020827005846636437,
  0.0, 0.0, 8.826982764996862, 23.19243343998926, 0.0, 95.1080498811086, 0.9863978034400682,
  0.9834382792465353, 0.0012286405048278493, 171.2667255897307, 0.9807858872435379, 0.0, 0.0, 0.0,
  0.0005130064588990679, 0.0, 0.00010854057858411537,
];

// The opsin absorbance matrix and bias of XYB (JPEG XL, ISO/IEC 18181-1).
const M00 = 0.3;
const M02 = 0.078;
const M01 = 1 - M02 - M00;
const M10 = 0.23;
const M12 = 0.078;
const M11 = 1 - M12 - M10;
const M20 = 0.24342268924547819;
const M21 = 0.20476744424496821;
const M22 = 1 - M20 - M21;
const BIAS = 0.0037930732552754493;
const CBRT_BIAS = Math.cbrt(BIAS);

/** The Gaussian of the metric: sigma 1.5, in its recursive form. */
const BLUR = new RecursiveGaussian(1.5);

/** Three planes of one size. */
interface Planes {
  width: number;
  height: number;
  p: [Float32Array, Float32Array, Float32Array];
}

const planes = (width: number, height: number): Planes => ({
  width,
  height,
  p: [new Float32Array(width * height), new Float32Array(width * height), new Float32Array(width * height)],
});

const srgbToLinear = (c: number): number => (c <= 0.04045 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4));

const SRGB_TO_LINEAR = Float32Array.from({ length: 256 }, (_, v) => srgbToLinear(v / 255));

/** True when some pixel of `image` is not fully opaque. */
function translucent(image: RawImage): boolean {
  if (image.channels !== 4) return false;
  const { data } = image;
  for (let i = 3; i < data.length; i += 4) if (data[i] !== 255) return true;
  return false;
}

/** 8-bit sRGB to linear RGB planes; translucent pixels blended over the sRGB grey `background` first. */
function linearRgb(image: RawImage, background: number): Planes {
  const { width, height, channels, data } = image;
  const out = planes(width, height);
  const [r, g, b] = out.p;
  for (let i = 0, o = 0; o < width * height; i += channels, o++) {
    const alpha = channels === 4 ? data[i + 3]! : 255;
    if (alpha === 255) {
      r[o] = SRGB_TO_LINEAR[data[i]!]!;
      g[o] = SRGB_TO_LINEAR[data[i + 1]!]!;
      b[o] = SRGB_TO_LINEAR[data[i + 2]!]!;
    } else {
      const a = alpha / 255;
      const rest = (1 - a) * background;
      r[o] = srgbToLinear((a * data[i]!) / 255 + rest);
      g[o] = srgbToLinear((a * data[i + 1]!) / 255 + rest);
      b[o] = srgbToLinear((a * data[i + 2]!) / 255 + rest);
    }
  }
  return out;
}

/** Linear RGB to XYB, rescaled as the metric wants it (X*14 + 0.42, Y + 0.01, B - Y + 0.55). */
function positiveXyb(rgb: Planes): Planes {
  const out = planes(rgb.width, rgb.height);
  const [r, g, b] = rgb.p;
  const [x, y, z] = out.p;
  for (let i = 0; i < r.length; i++) {
    const ri = r[i]!;
    const gi = g[i]!;
    const bi = b[i]!;
    const l = Math.cbrt(Math.max(0, M00 * ri + M01 * gi + M02 * bi + BIAS)) - CBRT_BIAS;
    const m = Math.cbrt(Math.max(0, M10 * ri + M11 * gi + M12 * bi + BIAS)) - CBRT_BIAS;
    const s = Math.cbrt(Math.max(0, M20 * ri + M21 * gi + M22 * bi + BIAS)) - CBRT_BIAS;
    const yy = 0.5 * (l + m);
    x[i] = 0.5 * (l - m) * 14 + 0.42;
    y[i] = yy + 0.01;
    z[i] = s - yy + 0.55;
  }
  return out;
}

/** 2x2 box average; the last row/column repeats when the size is odd. */
function downsample(input: Planes): Planes {
  const width = Math.ceil(input.width / 2);
  const height = Math.ceil(input.height / 2);
  const out = planes(width, height);
  for (let c = 0; c < 3; c++) {
    const src = input.p[c];
    const dst = out.p[c];
    for (let oy = 0; oy < height; oy++) {
      const r0 = oy * 2 * input.width;
      const r1 = Math.min(oy * 2 + 1, input.height - 1) * input.width;
      for (let ox = 0; ox < width; ox++) {
        const x0 = ox * 2;
        const x1 = Math.min(x0 + 1, input.width - 1);
        dst[oy * width + ox] = (src[r0 + x0]! + src[r0 + x1]! + src[r1 + x0]! + src[r1 + x1]!) * 0.25;
      }
    }
  }
  return out;
}

const quartic = (v: number): number => {
  const sq = v * v;
  return sq * sq;
};

/** One scale of the reference: its XYB planes, their blur and the blur of their squares. */
interface ReferenceScale {
  img: Planes;
  mu: Float32Array[];
  sq: Float32Array[];
}

/** The reference's scales for one background. */
function referenceScales(reference: RawImage, background: number): ReferenceScale[] {
  const scales: ReferenceScale[] = [];
  let rgb = linearRgb(reference, background);
  for (let scale = 0; scale < NUM_SCALES; scale++) {
    // As the authors' code: the size checked is the previous scale's, before it is halved.
    if (rgb.width < 8 || rgb.height < 8) break;
    if (scale) rgb = downsample(rgb);
    const { width, height } = rgb;
    const img = positiveXyb(rgb);
    const square = new Float32Array(width * height);
    const mu = img.p.map((plane) => BLUR.apply(plane, width, height));
    const sq = img.p.map((plane) => {
      for (let i = 0; i < plane.length; i++) square[i] = plane[i]! * plane[i]!;
      return BLUR.apply(square, width, height);
    });
    scales.push({ img, mu, sq });
  }
  return scales;
}

/** The 18 norms of one scale, in the order of the weights: per component, [ssim, ringing, blurring] x [1-norm, 4-norm]. */
function scaleNorms(ref: ReferenceScale, img2: Planes): number[][] {
  const { img: img1, mu: mu1s, sq: s11s } = ref;
  const { width, height } = img1;
  const n = width * height;
  const product = new Float32Array(n);
  const mu2 = new Float32Array(n);
  const s22 = new Float32Array(n);
  const s12 = new Float32Array(n);
  const perComponent: number[][] = [];
  for (let c = 0; c < 3; c++) {
    const a = img1.p[c];
    const b = img2.p[c];
    const mu1 = mu1s[c]!;
    const s11 = s11s[c]!;
    BLUR.apply(b, width, height, mu2);
    for (let i = 0; i < n; i++) product[i] = b[i]! * b[i]!;
    BLUR.apply(product, width, height, s22);
    for (let i = 0; i < n; i++) product[i] = a[i]! * b[i]!;
    BLUR.apply(product, width, height, s12);
    let ssim1 = 0;
    let ssim4 = 0;
    let ring1 = 0;
    let ring4 = 0;
    let blur1 = 0;
    let blur4 = 0;
    for (let i = 0; i < n; i++) {
      const m1 = mu1[i]!;
      const m2 = mu2[i]!;
      // SSIM without the luma term's denominator (the values are already gamma-compressed).
      const numM = 1 - (m1 - m2) * (m1 - m2);
      const numS = 2 * (s12[i]! - m1 * m2) + C2;
      const denS = s11[i]! - m1 * m1 + (s22[i]! - m2 * m2) + C2;
      const d = 1 - (numM * numS) / denS;
      if (d > 0) {
        ssim1 += d;
        ssim4 += quartic(d);
      }
      const edge = (1 + Math.abs(b[i]! - m2)) / (1 + Math.abs(a[i]! - m1)) - 1;
      if (edge > 0) {
        ring1 += edge;
        ring4 += quartic(edge);
      } else {
        blur1 -= edge;
        blur4 += quartic(edge);
      }
    }
    perComponent.push([
      ssim1 / n,
      ring1 / n,
      blur1 / n,
      Math.sqrt(Math.sqrt(ssim4 / n)),
      Math.sqrt(Math.sqrt(ring4 / n)),
      Math.sqrt(Math.sqrt(blur4 / n)),
    ]);
  }
  return perComponent;
}

/**
 * The reference's side of the metric, computed once: a search that scores several encodes of one
 * image (quality=auto) pays for it once instead of once per encode.
 */
export class Ssimulacra2Reference {
  private readonly translucent: boolean;
  /** The reference's scales per background (one set serves every background when it is opaque). */
  private readonly scales = new Map<number, ReferenceScale[]>();

  constructor(readonly reference: RawImage) {
    this.translucent = translucent(reference);
    if (this.translucent) for (const background of BACKGROUNDS) this.scalesOver(background);
    else this.scales.set(BACKGROUNDS[0], referenceScales(reference, BACKGROUNDS[0]));
  }

  private scalesOver(background: number): ReferenceScale[] {
    if (!this.translucent) return this.scales.get(BACKGROUNDS[0])!;
    let scales = this.scales.get(background);
    if (!scales) {
      scales = referenceScales(this.reference, background);
      this.scales.set(background, scales);
    }
    return scales;
  }

  /** The score of `distorted` (same size, 8-bit sRGB): 100 when identical, lower for more visible distortion. */
  score(distorted: RawImage): number {
    const { reference } = this;
    if (reference.width !== distorted.width || reference.height !== distorted.height) {
      throw new Error(
        `SSIMULACRA2 compares images of one size (got ${reference.width}x${reference.height} and ${distorted.width}x${distorted.height})`,
      );
    }
    const backgrounds = this.translucent || translucent(distorted) ? BACKGROUNDS : [BACKGROUNDS[0]];
    return Math.min(...backgrounds.map((background) => this.scoreOver(distorted, background)));
  }

  private scoreOver(distorted: RawImage, background: number): number {
    let rgb2 = linearRgb(distorted, background);
    // scales[s][c] = [ssim1, ring1, blur1, ssim4, ring4, blur4]
    const scales: number[][][] = [];
    for (const [index, ref] of this.scalesOver(background).entries()) {
      if (index) rgb2 = downsample(rgb2);
      scales.push(scaleNorms(ref, positiveXyb(rgb2)));
    }
    return scoreOf(scales);
  }
}

/**
 * The SSIMULACRA2 score of `distorted` against `reference` (same size, 8-bit sRGB): 100 for
 * identical images, lower for more visible distortion.
 */
export function ssimulacra2(reference: RawImage, distorted: RawImage): number {
  return new Ssimulacra2Reference(reference).score(distorted);
}

/** The weighted sum of the 108 norms, mapped onto the score by the authors' polynomial and power. */
function scoreOf(scales: number[][][]): number {
  let sum = 0;
  let i = 0;
  for (let c = 0; c < 3; c++) {
    for (const norms of scales) {
      const v = norms[c]!;
      for (let norm = 0; norm < 2; norm++) {
        sum += WEIGHTS[i++]! * Math.abs(v[norm * 3]!);
        sum += WEIGHTS[i++]! * Math.abs(v[norm * 3 + 1]!);
        sum += WEIGHTS[i++]! * Math.abs(v[norm * 3 + 2]!);
      }
    }
  }
  let s = sum * 0.9562382616834844;
  s = 2.326765642916932 * s - 0.020884521182843837 * s * s + 6.248496625763138e-5 * s * s * s;
  return s > 0 ? 100 - 10 * Math.pow(s, 0.6276336467831387) : 100;
}

export const SSIMULACRA2_WEIGHT_COUNT = WEIGHTS.length;

/** The rescaled XYB of one 8-bit sRGB colour, as the metric computes it (for tests against the authors' ranges). */
export function positiveXybOf(r: number, g: number, b: number): [number, number, number] {
  const xyb = positiveXyb(linearRgb({ data: Buffer.from([r, g, b]), width: 1, height: 1, channels: 3 }, 0));
  return [xyb.p[0][0]!, xyb.p[1][0]!, xyb.p[2][0]!];
}
