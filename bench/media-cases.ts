/**
 * What the media bench measures: the originals (generated deterministically from fixtures) and
 * the steps, each as the media service URL, the IPX 3 modifiers and the raw sharp calls that
 * produce the same output (same size, format and encoder settings as services/media's pipeline:
 * JPEG quality 75 after thumbnail else 82, mozjpeg off; PNG with sharp's defaults).
 */
import path from "node:path";
import sharp from "sharp";

const ROOT = path.resolve(__dirname, "..");

export interface BenchImage {
  /** Short label used in tables and in the asset ids. */
  name: string;
  /** 1-digit tag, the last digit of this image's asset ids (id spaces never overlap). */
  tag: number;
  format: "jpeg" | "png" | "avif" | "webp";
  extension: "jpg" | "png" | "avif" | "webp";
  width: number;
  height: number;
  make(): Promise<Buffer>;
}

/** The rocket fixture stretched to `width` x `height` (deterministic for a given sharp build). */
const fromRocket = (width: number, height: number) =>
  sharp(path.join(ROOT, "fixtures/images/rocket.jpg")).resize(width, height, { fit: "fill" });

/**
 * A camera-like JPEG of `width` x `height`: the stretched rocket (smooth, as an upscale is) plus a
 * sensor's grain, a fixed pseudo-random sequence (xorshift32) of about +-6 levels per channel, so it
 * decodes and encodes with the entropy of a photo, the same bytes on every run of a sharp build.
 */
async function photoLike(width: number, height: number, quality: number): Promise<Buffer> {
  const pixels = await fromRocket(width, height).removeAlpha().raw().toBuffer();
  let state = 0x2545f491;
  for (let i = 0; i < pixels.length; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    // Two 4-bit draws summed: a triangular grain of -15..15, mostly within +-6.
    const grain = (state & 15) + ((state >>> 4) & 15) - 15;
    pixels[i] = Math.min(255, Math.max(0, pixels[i]! + grain));
  }
  return sharp(pixels, { raw: { width, height, channels: 3 } })
    .jpeg({ quality })
    .toBuffer();
}

export const benchImages: BenchImage[] = [
  {
    name: "12 MP JPEG",
    tag: 1,
    format: "jpeg",
    extension: "jpg",
    width: 4000,
    height: 3000,
    make: () => photoLike(4000, 3000, 90),
  },
  {
    name: "24 MP JPEG",
    tag: 4,
    format: "jpeg",
    extension: "jpg",
    width: 6000,
    height: 4000,
    make: () => photoLike(6000, 4000, 90),
  },
  {
    name: "2.5 MP JPEG",
    tag: 2,
    format: "jpeg",
    extension: "jpg",
    width: 1920,
    height: 1280,
    make: () => fromRocket(1920, 1280).jpeg({ quality: 85 }).toBuffer(),
  },
  {
    name: "1 MP PNG+alpha",
    tag: 3,
    format: "png",
    extension: "png",
    width: 1200,
    height: 800,
    // RGB of the rocket plus a left-to-right alpha ramp (0..255).
    make: async () => {
      const rgb = await fromRocket(1200, 800).removeAlpha().raw().toBuffer();
      const rgba = Buffer.alloc(1200 * 800 * 4);
      for (let i = 0, p = 0; i < 1200 * 800; i++, p += 3) {
        rgba[i * 4] = rgb[p]!;
        rgba[i * 4 + 1] = rgb[p + 1]!;
        rgba[i * 4 + 2] = rgb[p + 2]!;
        rgba[i * 4 + 3] = Math.round(((i % 1200) / 1199) * 255);
      }
      return sharp(rgba, { raw: { width: 1200, height: 800, channels: 4 } })
        .png()
        .toBuffer();
    },
  },
];

export interface BenchStep {
  name: string;
  /** Media service path segment(s) before /<assetId>.<ext>. */
  service: string;
  /** IPX modifiers for this image (the first path segment). */
  ipx(image: BenchImage): string;
  /** The same work on a fresh sharp pipeline, up to and including the encoder. */
  raw(input: sharp.Sharp, image: BenchImage): sharp.Sharp;
}

const encode = (p: sharp.Sharp, image: BenchImage, quality: number) =>
  image.format === "jpeg" ? p.jpeg({ quality, mozjpeg: false }) : p.png();
// IPX passes `quality` to every encoder; for PNG sharp would then quantise to a palette.
const q = (image: BenchImage, quality: number) => (image.format === "jpeg" ? `,q_${quality}` : "");

const CROP = { width: 800, height: 600 };

export const benchSteps: BenchStep[] = [
  {
    name: "thumbnail",
    service: "thumbnail:size=256",
    ipx: (i) => `s_256x256,fit_cover${q(i, 75)}`,
    raw: (p, i) => encode(p.rotate().resize(256, 256, { fit: "cover", position: "centre" }), i, 75),
  },
  {
    name: "fit",
    service: "fit:width=800:height=800",
    ipx: (i) => `s_800x800,fit_contain,b_ffffff${q(i, 82)}`,
    raw: (p, i) =>
      encode(
        p
          .rotate()
          .resize(800, 800, { fit: "contain", position: "centre", background: { r: 255, g: 255, b: 255, alpha: 1 } }),
        i,
        82,
      ),
  },
  {
    name: "crop",
    service: `crop:width=${CROP.width}:height=${CROP.height}`,
    ipx: (i) =>
      `extract_${Math.floor((i.width - CROP.width) / 2)}_${Math.floor((i.height - CROP.height) / 2)}_${CROP.width}_${CROP.height}${q(i, 82)}`,
    raw: (p, i) =>
      encode(
        p.rotate().extract({
          left: Math.floor((i.width - CROP.width) / 2),
          top: Math.floor((i.height - CROP.height) / 2),
          ...CROP,
        }),
        i,
        82,
      ),
  },
  {
    name: "grayscale",
    service: "grayscale",
    ipx: (i) => `grayscale${q(i, 82)}`,
    raw: (p, i) => encode(p.rotate().grayscale(), i, 82),
  },
  {
    name: "chain thumbnail+grayscale",
    service: "thumbnail:size=512/grayscale",
    ipx: (i) => `s_512x512,fit_cover,grayscale${q(i, 75)}`,
    raw: (p, i) => encode(p.rotate().resize(512, 512, { fit: "cover", position: "centre" }).grayscale(), i, 75),
  },
];

/**
 * Asset id number `n` of an image: a UUID whose first group is n in hex and whose last digit is
 * the image's tag. bench/miss.lua builds the same ids for wrk.
 */
export function assetId(n: number, image: BenchImage): string {
  return `${n.toString(16).padStart(8, "0")}-0000-4000-8000-00000000000${image.tag}`;
}
