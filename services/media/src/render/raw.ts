import sharp from "sharp";
import type { RawImage } from "./types";

/** Runs the pending sharp operations and returns 8-bit sRGB pixels. */
export async function toRaw(image: sharp.Sharp): Promise<RawImage> {
  const { data, info } = await image
    .toColourspace("srgb")
    .raw({ depth: "uchar" })
    .toBuffer({ resolveWithObject: true });
  if (info.channels === 3 || info.channels === 4) {
    return { data, width: info.width, height: info.height, channels: info.channels };
  }
  if (info.channels === 1 && info.hasAlpha) {
    // sharp's raw output of a greyscale() pipeline keeps the grey band only, dropping the alpha:
    // this rare case (grayscale of a translucent image, then more steps) runs again through a
    // lossless PNG, which keeps it.
    return toRaw(sharp(await image.png({ compressionLevel: 0 }).toBuffer()));
  }
  // Grey(+alpha) can still come out of some ops (grayscale); widen so kernels see one layout.
  // By hand: libvips reads 2-band raw input as two colour bands, so its sRGB conversion would
  // drop the alpha (a translucent grey came back opaque).
  return widenGrey(data, info.width, info.height, info.channels);
}

function widenGrey(data: Buffer, width: number, height: number, bands: number): RawImage {
  const alpha = bands === 2;
  const channels = alpha ? 4 : 3;
  const out = Buffer.allocUnsafe(width * height * channels);
  for (let i = 0, o = 0; i < data.length; i += bands, o += channels) {
    const grey = data[i]!;
    out[o] = grey;
    out[o + 1] = grey;
    out[o + 2] = grey;
    if (alpha) out[o + 3] = data[i + 1]!;
  }
  return { data: out, width, height, channels };
}

/** Wraps raw pixels as a new sharp pipeline (operations after this run in call order). */
export function fromRaw(image: RawImage): sharp.Sharp {
  return sharp(image.data, { raw: { width: image.width, height: image.height, channels: image.channels } });
}
