import { createHash } from "node:crypto";
import path from "node:path";
import sharp from "sharp";
import { ssimulacra2 } from "../src/perceptual/ssimulacra2";
import { RecursiveGaussian } from "../src/perceptual/recursive-gaussian";
import type { RawImage } from "../src/render/types";
import { decodePixels } from "./support/render-harness";

/**
 * SSIMULACRA2 against scores of its authors' tool (libjxl tools/ssimulacra2, version 2.1), see
 * test/fixtures/ssimulacra2/README.md for where each score comes from.
 */

const FIXTURES = path.join(__dirname, "fixtures", "ssimulacra2");

describe("SSIMULACRA2 against the authors' tool", () => {
  // A 256x256 photo crop and its JPEG encodes at four qualities (libjpeg-turbo decodes both sides).
  const jpegScores: [string, number][] = [
    ["q20.jpg", 57.14559032],
    ["q45.jpg", 68.62747595],
    ["q70.jpg", 79.38805044],
    ["q90.jpg", 90.85152474],
  ];

  it.each(jpegScores)("scores the photo's %s within 0.25 of the tool's %f", async (file, expected) => {
    const source = await decodePixels(sharp(path.join(FIXTURES, "source.png")));
    const distorted = await decodePixels(sharp(path.join(FIXTURES, file)));
    expect(Math.abs(ssimulacra2(source, distorted) - expected)).toBeLessThanOrEqual(0.25);
  });

  // Pairs generated here, byte for byte the ones the tool scored (the SHA-256 of the raw RGB
  // of each side is the one recorded with the score). Uniform shifts of 1 to 20 levels and the
  // smooth gradients are left out: there, the tool's single-precision rounding moves its own score
  // by up to 1.5 points, so they measure that rounding rather than the metric.
  const synthetic: [string, () => [Uint8Array, Uint8Array], number, string, string][] = [
    [
      "a horizontal gradient vs uniform grey",
      () => [gradient(64, 64), uniform(64, 64, 128)],
      -64.56872148,
      "bfcfaa0618d28284",
      "2203a98fd84adfbd",
    ],
    [
      "noise vs uniform grey",
      () => [noise(64, 64, 42n), uniform(64, 64, 128)],
      -47.33572558,
      "7f6be7f433ccb0a0",
      "2203a98fd84adfbd",
    ],
    [
      "noise vs the noise sharpened",
      () => {
        const source = noise(64, 64, 999n);
        return [source, sharpen(source, 64, 64)];
      },
      -5.81017556,
      "53f592ab5678b4f4",
      "4ad3cfe3e5b8138c",
    ],
    [
      "a vertical edge vs the edge under an 8x8 box blur",
      () => {
        const source = edge(64, 64);
        return [source, boxBlur8(source, 64, 64)];
      },
      24.27333552,
      "f0d003b6007c958d",
      "cbe40f4a1c43e661",
    ],
    [
      "grey 128 vs grey 178 (64x64)",
      () => [uniform(64, 64, 128), uniform(64, 64, 178)],
      -8.75942256,
      "2203a98fd84adfbd",
      "e67286008fa164d1",
    ],
    [
      "grey 128 vs grey 178 (128x128)",
      () => [uniform(128, 128, 128), uniform(128, 128, 178)],
      -9.82383315,
      "2af5ead05032faaf",
      "768e019eb1e7b74a",
    ],
    [
      "grey 128 vs grey 178 (256x256)",
      () => [uniform(256, 256, 128), uniform(256, 256, 178)],
      -0.39085784,
      "83ab53863cf746ef",
      "ebf9afb21c244788",
    ],
  ];

  it.each(synthetic)("scores %s within 0.1 of the tool", (_name, pair, expected, sourceHash, distortedHash) => {
    const [source, distorted] = pair();
    expect(sha256(source).slice(0, 16)).toBe(sourceHash);
    expect(sha256(distorted).slice(0, 16)).toBe(distortedHash);
    const size = Math.sqrt(source.length / 3);
    const score = ssimulacra2(rgb(source, size), rgb(distorted, size));
    expect(Math.abs(score - expected)).toBeLessThanOrEqual(0.1);
  });
});

describe("the recursive Gaussian of SSIMULACRA2 (sigma 1.5)", () => {
  const blur = new RecursiveGaussian(1.5);

  it("has the authors' radius and keeps a flat plane flat away from the borders, zero outside", () => {
    expect(blur.radius).toBe(5);
    const out = blur.apply(new Float32Array(64 * 64).fill(1), 64, 64);
    expect(out[32 * 64 + 32]!).toBeCloseTo(1, 5);
    // The corner sees about half of the kernel in each direction (zeros outside the image).
    expect(out[0]!).toBeGreaterThan(0.35);
    expect(out[0]!).toBeLessThan(0.45);
  });

  it("spreads an impulse symmetrically over 9 taps, as the truncated cosines end at the radius", () => {
    const impulse = new Float32Array(41);
    impulse[20] = 1;
    const out = blur.apply(impulse, 41, 1);
    for (let i = 1; i <= 4; i++) expect(out[20 - i]!).toBeCloseTo(out[20 + i]!, 6);
    expect(out[15]!).toBeCloseTo(0, 6);
    expect(out[25]!).toBeCloseTo(0, 6);
    // Falls off from the centre like the Gaussian of sigma 1.5 (ratio e^(-1/4.5) at one step).
    expect(out[21]! / out[20]!).toBeCloseTo(Math.exp(-1 / 4.5), 1);
  });
});

describe("SSIMULACRA2 with transparency", () => {
  it("blends over a dark and a light background and keeps the lower score: transparent is not mid grey", () => {
    const size = 32;
    const transparent: RawImage = { data: Buffer.alloc(size * size * 4), width: size, height: size, channels: 4 };
    const grey: RawImage = { data: Buffer.alloc(size * size * 3, 128), width: size, height: size, channels: 3 };
    expect(ssimulacra2(transparent, grey)).toBeLessThan(50);
    expect(ssimulacra2(transparent, { ...transparent, data: Buffer.from(transparent.data).fill(200) })).toBeLessThan(
      100,
    );
  });

  it("scores an opaque RGBA image exactly as its RGB", async () => {
    const reference = await decodePixels(sharp(path.join(FIXTURES, "source.png")));
    const distorted = await decodePixels(sharp(path.join(FIXTURES, "q70.jpg")));
    const opaque = (image: RawImage) =>
      decodePixels(sharp(image.data, { raw: { width: 256, height: 256, channels: 3 } }).ensureAlpha());
    const rgba = [await opaque(reference), await opaque(distorted)] as const;
    expect(rgba[0].channels).toBe(4);
    expect(ssimulacra2(...rgba)).toBe(ssimulacra2(reference, distorted));
  });
});

const sha256 = (data: Uint8Array): string => createHash("sha256").update(data).digest("hex");

const rgb = (data: Uint8Array, size: number): RawImage => ({
  data: Buffer.from(data),
  width: size,
  height: size,
  channels: 3,
});

/** Grey pixels of one level. */
const uniform = (width: number, height: number, level: number): Uint8Array =>
  new Uint8Array(width * height * 3).fill(level);

/** Grey from 0 at the left to 255 at the right (truncated to integers). */
function gradient(width: number, height: number): Uint8Array {
  const out = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++)
      out.fill(Math.floor((x * 255) / (width - 1)), (y * width + x) * 3, (y * width + x) * 3 + 3);
  return out;
}

/** Black left half, white right half. */
function edge(width: number, height: number): Uint8Array {
  const out = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) out.fill(x < width / 2 ? 0 : 255, (y * width + x) * 3, (y * width + x) * 3 + 3);
  return out;
}

/** Bytes of a 64-bit linear congruential generator (Knuth's MMIX constants), bits 33-40 of each state. */
function noise(width: number, height: number, seed: bigint): Uint8Array {
  const out = new Uint8Array(width * height * 3);
  let state = seed;
  for (let i = 0; i < out.length; i++) {
    state = BigInt.asUintN(64, state * 6364136223846793005n + 1442695040888963407n);
    out[i] = Number((state >> 33n) & 0xffn);
  }
  return out;
}

/** The mean of the 8x8 pixels from 4 before to 3 after, edges repeated, truncated to integers. */
function boxBlur8(source: Uint8Array, width: number, height: number): Uint8Array {
  const out = new Uint8Array(source.length);
  const clamp = (v: number, max: number) => Math.min(max - 1, Math.max(0, v));
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++)
      for (let c = 0; c < 3; c++) {
        let sum = 0;
        for (let dy = -4; dy < 4; dy++)
          for (let dx = -4; dx < 4; dx++)
            sum += source[(clamp(y + dy, height) * width + clamp(x + dx, width)) * 3 + c]!;
        out[(y * width + x) * 3 + c] = Math.floor(sum / 64);
      }
  return out;
}

/** 5 x centre minus the 4 neighbours (edges repeated), clamped to 0..255. */
function sharpen(source: Uint8Array, width: number, height: number): Uint8Array {
  const out = new Uint8Array(source.length);
  const at = (x: number, y: number, c: number) =>
    source[(Math.min(height - 1, Math.max(0, y)) * width + Math.min(width - 1, Math.max(0, x))) * 3 + c]!;
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++)
      for (let c = 0; c < 3; c++) {
        const v = 5 * at(x, y, c) - at(x, y - 1, c) - at(x, y + 1, c) - at(x - 1, y, c) - at(x + 1, y, c);
        out[(y * width + x) * 3 + c] = Math.min(255, Math.max(0, v));
      }
  return out;
}
