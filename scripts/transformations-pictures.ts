/**
 * The pictures of docs/transformations.md: each example URL rendered by the media service's own
 * render pipeline (URL grammar, planning, the step files, the pixel kernels in worker threads,
 * face detection) from one sample photo, then scaled to a small preview. Written by
 * `pnpm docs:transformations`; a test renders them again and compares pixels.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import sharp from "sharp";
import { defaultMediaLimits, parseMediaPath, type FocalPoint } from "@media-platform/contracts";
import { createFaceDetector, createPixelWorkers, render } from "@media-platform/media/render";

export const PICTURES_DIR = path.resolve(__dirname, "../docs/images/transformations");
/** The sample: a portrait (so `avatar` finds a face), stored as a JPEG like a typical upload. */
const SAMPLE = path.resolve(__dirname, "../fixtures/images/astronaut.png");
const ASSET_ID = "0b3c1d2e-4f50-4a61-8b72-93a4b5c6d7e8";
/** The asset the overlay examples draw: the logo fixture, as an asset of the same workspace. */
export const OVERLAY_ASSET_ID = "7d9e0f1a-2b3c-4d5e-8f60-718293a4b5c6";
const OVERLAY = path.resolve(__dirname, "../fixtures/images/logo.png");
export const PREVIEW_WIDTH = 240;

export interface Picture {
  /** File name under docs/images/transformations. */
  file: string;
  /** The steps of the URL, `/<steps>/<assetId>.jpg`. */
  steps: string;
  /** The asset's focal point, for the focal-point examples. */
  focalPoint?: FocalPoint;
}

/** The original as the media service would store it. */
export async function sampleOriginal(): Promise<Buffer> {
  return sharp(readFileSync(SAMPLE)).jpeg({ quality: 90 }).toBuffer();
}

/** A small JPEG of a rendition: at most PREVIEW_WIDTH wide, transparency on white. */
async function preview(data: Buffer): Promise<Buffer> {
  return sharp(data)
    .resize({ width: PREVIEW_WIDTH, withoutEnlargement: true })
    .flatten({ background: "#ffffff" })
    .jpeg({ quality: 70 })
    .toBuffer();
}

/** Renders every picture; returns file name -> preview bytes. */
export async function renderPictures(pictures: readonly Picture[]): Promise<Map<string, Buffer>> {
  sharp.cache(false);
  const original = await sampleOriginal();
  const pixels = createPixelWorkers({ size: 2 });
  const faces = createFaceDetector();
  const deps = { pixels, faces, limits: defaultMediaLimits, limitInputPixels: 100_000_000 };
  const out = new Map<string, Buffer>([["original.jpg", await preview(original)]]);
  const overlays = new Map([[OVERLAY_ASSET_ID, readFileSync(OVERLAY)]]);
  try {
    for (const picture of pictures) {
      const urlPath = `/${picture.steps}/${ASSET_ID}.jpg`;
      const { steps } = parseMediaPath(urlPath, defaultMediaLimits);
      // The cache key seeds add-noise: a fixed one keeps the picture the same on every run.
      const rendition = await render(
        { original, contentType: "image/jpeg", steps, cacheKey: urlPath, focalPoint: picture.focalPoint, overlays },
        deps,
      );
      out.set(picture.file, await preview(rendition.data));
    }
  } finally {
    await Promise.all([pixels.close(), faces.close()]);
  }
  return out;
}

export async function writePictures(pictures: readonly Picture[], dir = PICTURES_DIR): Promise<void> {
  mkdirSync(dir, { recursive: true });
  for (const [file, data] of await renderPictures(pictures)) writeFileSync(path.join(dir, file), data);
}
