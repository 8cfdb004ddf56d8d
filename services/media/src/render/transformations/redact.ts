import sharp from "sharp";
import type { ResolvedParams } from "@media-platform/contracts";
import { fromRaw } from "../raw";
import type { RawImage } from "../types";
import { findFaces } from "./avatar";
import { sameSize, type Transformation } from "./transformation";
import type { Region, StepContext } from "../types";

/**
 * Face boxes run from the eyebrows to the chin: each side grows by this share of the box, so the
 * forehead, hair line and ears are covered too.
 */
const FACE_MARGIN = 0.25;

/** The region parameter `x,y,w,h` (fractions, validated by the URL contracts) in pixels of `size`. */
export function regionInPixels(region: string, width: number, height: number): Region {
  const [x, y, w, h] = region.split(",").map(Number) as [number, number, number, number];
  const left = Math.min(width - 1, Math.floor(x * width));
  const top = Math.min(height - 1, Math.floor(y * height));
  return {
    left,
    top,
    width: Math.max(1, Math.min(width - left, Math.ceil((x + w) * width) - left)),
    height: Math.max(1, Math.min(height - top, Math.ceil((y + h) * height) - top)),
  };
}

/** Every region the step redacts, in pixels of its input, clipped to it. */
async function regionsOf(image: RawImage, params: ResolvedParams<"redact">, ctx: StepContext): Promise<Region[]> {
  const regions: Region[] = [];
  if (params.region !== undefined) regions.push(regionInPixels(params.region, image.width, image.height));
  if (params.faces === "true") {
    const faces = await findFaces(fromRaw(image), ctx.faces, image.width, image.height);
    for (const face of faces) {
      const left = Math.max(0, Math.floor(face.x - face.width * FACE_MARGIN));
      const top = Math.max(0, Math.floor(face.y - face.height * FACE_MARGIN));
      const right = Math.min(image.width, Math.ceil(face.x + face.width * (1 + FACE_MARGIN)));
      const bottom = Math.min(image.height, Math.ceil(face.y + face.height * (1 + FACE_MARGIN)));
      if (right > left && bottom > top) regions.push({ left, top, width: right - left, height: bottom - top });
    }
  }
  return regions;
}

/** One region's pixels, blurred or pixelated. */
async function obscured(image: RawImage, region: Region, params: ResolvedParams<"redact">): Promise<Buffer> {
  const side = Math.min(region.width, region.height);
  const part = fromRaw(image).extract(region);
  if (params.mode === "pixelate") {
    const block = Math.max(2, Math.round((side / 2) * (params.strength / 100)));
    const small = await part
      .resize(Math.max(1, Math.round(region.width / block)), Math.max(1, Math.round(region.height / block)), {
        fit: "fill",
        kernel: "cubic",
      })
      .raw()
      .toBuffer({ resolveWithObject: true });
    return sharp(small.data, { raw: small.info })
      .resize(region.width, region.height, { fit: "fill", kernel: "nearest" })
      .raw()
      .toBuffer();
  }
  const sigma = Math.max(0.3, (side / 4) * (params.strength / 100));
  // Padded by mirroring inside the region only, so no pixel from outside it leaks in or out.
  return part.blur(sigma).raw().toBuffer();
}

/**
 * Extension step: blurs or pixelates faces and/or a region. Each region is processed from its own
 * pixels and drawn back in place; the rest of the image is untouched.
 */
export const redact = {
  input: "raw",
  outputSize: sameSize,
  // The faces move between frames: the first frame only when faces are looked for.
  posterOnly: (params) => params.faces === "true",
  async apply(image, params, ctx) {
    const regions = await regionsOf(image, params, ctx);
    if (regions.length === 0) return image;
    const raw = { width: 0, height: 0, channels: image.channels };
    const layers = await Promise.all(
      regions.map(async (region) => ({
        input: await obscured(image, region, params),
        raw: { ...raw, width: region.width, height: region.height },
        left: region.left,
        top: region.top,
      })),
    );
    const drawn = fromRaw(image).composite(layers);
    return image.channels === 4 ? drawn : drawn.removeAlpha();
  },
} satisfies Transformation<"redact">;
