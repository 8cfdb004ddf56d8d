import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import sharp from "sharp";
import { RENDERER_VERSION } from "../../src/cache/entry";
import { Ssimulacra2Reference } from "../../src/perceptual/ssimulacra2";
import type { RawImage } from "../../src/render/types";
import { closeHarness, decodePixels, renderImage } from "./render-harness";

/**
 * The output-drift guard: every spec transformation and every extension, applied to 5 small
 * photos, each output recorded by its hash, size in bytes and a 24 x 24 fingerprint of its pixels.
 * An upgrade of sharp or libvips (or a codec it bundles) that moves an output beyond its budget
 * (bytes, or SSIMULACRA2 of the fingerprints) fails test/golden.test.ts; `pnpm golden:update`
 * records the new outputs on purpose, and its diff shows which changed.
 */

export const GOLDEN_DIR = path.join(__dirname, "..", "golden");
export const GOLDEN_FILE = path.join(GOLDEN_DIR, "renditions.json");
const INPUTS_DIR = path.join(GOLDEN_DIR, "inputs");

/** The overlay asset of the overlay case: the first input, drawn over each input. */
const GOLDEN_OVERLAY_ID = "00000000-0000-4000-8000-00000000001a";

/** One URL per step (the spec's 16, then ours), sized for the 96 px inputs. */
export const GOLDEN_CASES: Readonly<Record<string, string>> = {
  crop: "crop:width=64:height=48:gravity=north",
  "color-balance": "color-balance:cyan=40:yellow=-20:target=highlights",
  clahe: "clahe:clipLimit=4:tileSize=16",
  grayscale: "grayscale:lightness=10.5",
  fit: "fit:width=80:height=48:background=000000",
  saturation: "saturation:value=1.5",
  "add-noise": "add-noise:type=gaussian:amount=5",
  brightness: "brightness:value=1.2",
  wave: "wave:amplitude=4:wavelength=30",
  channelManipulation: "channelManipulation:red=1.2:blue=0.8",
  sharpen: "sharpen:value=1.5",
  avatar: "avatar:size=48:shape=circle:border=2:border_color=ff8800",
  thumbnail: "thumbnail:size=64:quality=80",
  exposure: "exposure:value=-0.5",
  solarize: "solarize:threshold=100",
  threshold: "threshold:value=128",
  resize: "resize:width=48",
  "format webp": "format:type=webp:quality=70",
  "format avif": "format:type=avif:quality=50",
  "format png": "format:type=png",
  frame: "frame:index=0",
  // A photo is one page: page 1 selects it, its pixels unchanged (a PDF's pages: pdf-pages.test.ts).
  page: "page:index=1",
  "max-bytes": "max-bytes:value=1500",
  "quality=auto": "thumbnail:size=64:quality=auto",
  overlay: `overlay:asset=${GOLDEN_OVERLAY_ID}:scale=.3:opacity=.8:gravity=southeast`,
  text: "text:text=Golden:size=16:background=000000",
  redact: "redact:region=.25,.25,.5,.5:mode=pixelate",
};

/** Default budgets written for a new output; `pnpm golden:update` keeps a budget edited by hand. */
export const DEFAULT_BUDGET = { minScore: 85, bytesTolerance: 0.05, bytesSlack: 64 } as const;

const FINGERPRINT_SIDE = 24;

export interface GoldenOutput {
  sha256: string;
  bytes: number;
  width: number;
  height: number;
  contentType: string;
  /** 24 x 24 RGB (alpha over white), box-averaged from the decoded output, base64. */
  fingerprint: string;
  /** SSIMULACRA2 of a new fingerprint against this one must reach this. */
  minScore: number;
  /** Bytes may move by this fraction, or by bytesSlack, whichever is larger. */
  bytesTolerance: number;
  bytesSlack: number;
}

export interface GoldenSet {
  /** The sharp, libvips and codec versions that made the set (the ETag prefix). */
  renderer: string;
  inputs: Record<string, string>;
  outputs: Record<string, GoldenOutput>;
}

export function goldenInputs(): { name: string; bytes: Buffer }[] {
  return readdirSync(INPUTS_DIR)
    .filter((f) => f.endsWith(".jpg"))
    .sort()
    .map((f) => ({ name: f, bytes: readFileSync(path.join(INPUTS_DIR, f)) }));
}

const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");

/** Box average to FINGERPRINT_SIDE square, by hand (a resize kernel of libvips would drift itself). */
function fingerprintOf(image: RawImage): Buffer {
  const out = Buffer.alloc(FINGERPRINT_SIDE * FINGERPRINT_SIDE * 3);
  for (let fy = 0; fy < FINGERPRINT_SIDE; fy++) {
    const y0 = Math.floor((fy * image.height) / FINGERPRINT_SIDE);
    const y1 = Math.max(y0 + 1, Math.floor(((fy + 1) * image.height) / FINGERPRINT_SIDE));
    for (let fx = 0; fx < FINGERPRINT_SIDE; fx++) {
      const x0 = Math.floor((fx * image.width) / FINGERPRINT_SIDE);
      const x1 = Math.max(x0 + 1, Math.floor(((fx + 1) * image.width) / FINGERPRINT_SIDE));
      const sum = [0, 0, 0];
      for (let y = y0; y < y1; y++) {
        for (let x = x0; x < x1; x++) {
          const i = (y * image.width + x) * image.channels;
          const a = image.channels === 4 ? image.data[i + 3]! / 255 : 1;
          for (let c = 0; c < 3; c++) sum[c]! += a * image.data[i + c]! + (1 - a) * 255;
        }
      }
      const n = (y1 - y0) * (x1 - x0);
      for (let c = 0; c < 3; c++) out[(fy * FINGERPRINT_SIDE + fx) * 3 + c] = Math.round(sum[c]! / n);
    }
  }
  return out;
}

const fingerprintImage = (data: Buffer): RawImage => ({
  data,
  width: FINGERPRINT_SIDE,
  height: FINGERPRINT_SIDE,
  channels: 3,
});

/** Renders every case on every input with the current sharp/libvips. */
export async function renderGoldenSet(previous?: GoldenSet): Promise<GoldenSet> {
  const set: GoldenSet = { renderer: RENDERER_VERSION, inputs: {}, outputs: {} };
  try {
    const inputs = goldenInputs();
    const overlays = new Map([[GOLDEN_OVERLAY_ID, inputs[0]!.bytes]]);
    for (const input of inputs) {
      set.inputs[input.name] = sha256(input.bytes);
      for (const [name, steps] of Object.entries(GOLDEN_CASES)) {
        const key = `${name} | ${input.name}`;
        const out = await renderImage(input.bytes, steps, { overlays });
        const pixels = await decodePixels(sharp(out.data));
        const kept = previous?.outputs[key];
        set.outputs[key] = {
          sha256: sha256(out.data),
          bytes: out.data.length,
          width: out.width,
          height: out.height,
          contentType: out.contentType,
          fingerprint: fingerprintOf(pixels).toString("base64"),
          minScore: kept?.minScore ?? DEFAULT_BUDGET.minScore,
          bytesTolerance: kept?.bytesTolerance ?? DEFAULT_BUDGET.bytesTolerance,
          bytesSlack: kept?.bytesSlack ?? DEFAULT_BUDGET.bytesSlack,
        };
      }
    }
  } finally {
    await closeHarness();
  }
  return set;
}

export interface Drift {
  key: string;
  reasons: string[];
}

/** The outputs of `current` beyond their budget in `golden` (identical bytes always pass). */
export function driftOf(golden: GoldenSet, current: GoldenSet): Drift[] {
  const drifts: Drift[] = [];
  const keys = new Set([...Object.keys(golden.outputs), ...Object.keys(current.outputs)]);
  for (const key of keys) {
    const was = golden.outputs[key];
    const now = current.outputs[key];
    if (!was || !now) {
      drifts.push({ key, reasons: [was ? "no longer rendered" : "not in the golden set"] });
      continue;
    }
    if (was.sha256 === now.sha256) continue;
    const reasons: string[] = [];
    if (was.width !== now.width || was.height !== now.height) {
      reasons.push(`size ${was.width}x${was.height} -> ${now.width}x${now.height}`);
    }
    if (was.contentType !== now.contentType) reasons.push(`type ${was.contentType} -> ${now.contentType}`);
    const allowed = Math.max(was.bytesSlack, Math.round(was.bytes * was.bytesTolerance));
    if (Math.abs(now.bytes - was.bytes) > allowed) {
      reasons.push(`bytes ${was.bytes} -> ${now.bytes} (budget +-${allowed})`);
    }
    const score = new Ssimulacra2Reference(fingerprintImage(Buffer.from(was.fingerprint, "base64"))).score(
      fingerprintImage(Buffer.from(now.fingerprint, "base64")),
    );
    if (score < was.minScore) reasons.push(`SSIMULACRA2 ${score.toFixed(1)} < ${was.minScore}`);
    if (reasons.length) drifts.push({ key, reasons });
  }
  return drifts;
}

export function readGoldenSet(): GoldenSet {
  return JSON.parse(readFileSync(GOLDEN_FILE, "utf8")) as GoldenSet;
}

/** Stable, diff-friendly JSON: one output per line. */
export function formatGoldenSet(set: GoldenSet): string {
  const outputs = Object.entries(set.outputs)
    .map(([key, value]) => `    ${JSON.stringify(key)}: ${JSON.stringify(value)}`)
    .join(",\n");
  return `{\n  "renderer": ${JSON.stringify(set.renderer)},\n  "inputs": ${JSON.stringify(set.inputs)},\n  "outputs": {\n${outputs}\n  }\n}\n`;
}
