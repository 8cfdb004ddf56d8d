/**
 * A Gaussian blur in constant time per pixel whatever sigma: the recursive filter of
 * D. Charalampidis, "Recursive Implementation of the Gaussian Filter Using Truncated Cosine
 * Functions" (IEEE Trans. Signal Processing 64(14), 2016), the blur SSIMULACRA2's authors use.
 *
 * The kernel is approximated by a sum of three cosines (k = 1, 3, 5) of period 4N truncated to
 * [-N, N]. Each cosine is a second-order recursion fed with the sum of the two inputs N+1 before
 * and N-1 after the output (eq. 33-35):
 *   y_k[n] = n2_k * (x[n - N - 1] + x[n + N - 1]) - d1_k * y_k[n - 1] - y_k[n - 2],
 *   out[n] = y_1[n] + y_3[n] + y_5[n],
 * with x = 0 outside the signal. Rows first, then columns.
 */
export class RecursiveGaussian {
  /** N: the kernel's half width (eq. 57). */
  readonly radius: number;
  /** n2_k and d1_k for k = 1, 3, 5, rounded to single precision as the authors' code keeps them. */
  readonly n2: readonly [number, number, number];
  readonly d1: readonly [number, number, number];

  constructor(readonly sigma: number) {
    const radius = Math.round(3.2795 * sigma + 0.2546);
    const omega = [1, 3, 5].map((k) => (k * Math.PI) / (2 * radius));
    // eq. 37 and 44: the alternating signs of the truncated cosines' coefficients.
    const sign = [1, -1, 1];
    const p = omega.map((w, i) => sign[i]! / Math.tan(0.5 * w));
    const r = omega.map((w, i) => (sign[i]! * p[i]! * p[i]!) / Math.sin(w));
    // eq. 50: the Gaussian's spectrum at each frequency.
    const rho = omega.map((w) => Math.exp(-0.5 * sigma * sigma * w * w) / radius);
    // eq. 52: the third condition expressed through the first two.
    const d13 = p[0]! * r[1]! - r[0]! * p[1]!;
    const d35 = p[1]! * r[2]! - r[1]! * p[2]!;
    const d51 = p[2]! * r[0]! - r[2]! * p[0]!;
    const zeta15 = d35 / d13;
    const zeta35 = d51 / d13;
    // eq. 53-56: beta solves A beta = gamma (unit gain, the Gaussian's variance, its spectrum).
    const beta = solve3(
      [
        [p[0]!, p[1]!, p[2]!],
        [r[0]!, r[1]!, r[2]!],
        [zeta15, zeta35, 1],
      ],
      [1, radius * radius - sigma * sigma, zeta15 * rho[0]! + zeta35 * rho[1]! + rho[2]!],
    );
    this.radius = radius;
    const n2 = omega.map((w, i) => Math.fround(-beta[i]! * Math.cos(w * (radius + 1))));
    const d1 = omega.map((w) => Math.fround(-2 * Math.cos(w)));
    this.n2 = [n2[0]!, n2[1]!, n2[2]!];
    this.d1 = [d1[0]!, d1[1]!, d1[2]!];
  }

  /** Blurs a `width` x `height` plane into `out` (a new plane unless given); zero outside the plane. */
  apply(input: Float32Array, width: number, height: number, out = new Float32Array(width * height)): Float32Array {
    const rows = new Float32Array(width * height);
    this.rows(input, width, height, rows);
    this.columns(rows, width, height, out);
    return out;
  }

  private rows(input: Float32Array, width: number, height: number, out: Float32Array): void {
    const N = this.radius;
    const [a1, a3, a5] = this.n2;
    const [b1, b3, b5] = this.d1;
    // The row with 2N zeros before it and N after: the recursion's step m (output n = m - N + 1)
    // reads padded[m] and padded[m + 2N], so every read is in bounds and branch-free.
    const padded = new Float64Array(width + 3 * N);
    for (let y = 0; y < height; y++) {
      const row = y * width;
      for (let x = 0; x < width; x++) padded[2 * N + x] = input[row + x]!;
      let p1 = 0;
      let p3 = 0;
      let p5 = 0;
      let q1 = 0;
      let q3 = 0;
      let q5 = 0;
      const last = width + N - 1;
      for (let m = 0; m < last; m++) {
        const sum = padded[m]! + padded[m + 2 * N]!;
        const y1 = a1 * sum - b1 * p1 - q1;
        const y3 = a3 * sum - b3 * p3 - q3;
        const y5 = a5 * sum - b5 * p5 - q5;
        q1 = p1;
        q3 = p3;
        q5 = p5;
        p1 = y1;
        p3 = y3;
        p5 = y5;
        if (m >= N - 1) out[row + m - N + 1] = y1 + y3 + y5;
      }
    }
  }

  private columns(input: Float32Array, width: number, height: number, out: Float32Array): void {
    const N = this.radius;
    const [a1, a3, a5] = this.n2;
    const [b1, b3, b5] = this.d1;
    // Per column the last two outputs of each recursion; y[n] overwrites y[n - 2], then the two swap.
    let prev1 = new Float64Array(width);
    let prev3 = new Float64Array(width);
    let prev5 = new Float64Array(width);
    let older1 = new Float64Array(width);
    let older3 = new Float64Array(width);
    let older5 = new Float64Array(width);
    const zeros = new Float32Array(width);
    const discard = new Float32Array(width);
    for (let n = -N + 1; n < height; n++) {
      const top = n - N - 1;
      const bottom = n + N - 1;
      const above = top >= 0 ? input.subarray(top * width, top * width + width) : zeros;
      const below = bottom < height ? input.subarray(bottom * width, bottom * width + width) : zeros;
      const target = n >= 0 ? out.subarray(n * width, n * width + width) : discard;
      for (let x = 0; x < width; x++) {
        const sum = above[x]! + below[x]!;
        const y1 = a1 * sum - b1 * prev1[x]! - older1[x]!;
        const y3 = a3 * sum - b3 * prev3[x]! - older3[x]!;
        const y5 = a5 * sum - b5 * prev5[x]! - older5[x]!;
        older1[x] = y1;
        older3[x] = y3;
        older5[x] = y5;
        target[x] = y1 + y3 + y5;
      }
      [prev1, older1] = [older1, prev1];
      [prev3, older3] = [older3, prev3];
      [prev5, older5] = [older5, prev5];
    }
  }
}

/** The solution of the 3x3 system `a` x = `b` (Cramer's rule). */
function solve3(a: number[][], b: number[]): number[] {
  const det = (m: number[][]): number =>
    m[0]![0]! * (m[1]![1]! * m[2]![2]! - m[1]![2]! * m[2]![1]!) -
    m[0]![1]! * (m[1]![0]! * m[2]![2]! - m[1]![2]! * m[2]![0]!) +
    m[0]![2]! * (m[1]![0]! * m[2]![1]! - m[1]![1]! * m[2]![0]!);
  const whole = det(a);
  return [0, 1, 2].map((column) => det(a.map((row, i) => row.map((v, j) => (j === column ? b[i]! : v)))) / whole);
}
