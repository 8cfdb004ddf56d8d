import { readFile } from "node:fs/promises";
import path from "node:path";
import sharp from "sharp";
import {
  defaultMediaLimits,
  formatStep,
  parseMediaPath,
  rasterMimeTypeOf,
  type FocalPoint,
  type MediaLimits,
  type TransformationStep,
} from "@media-platform/contracts";
import { createFaceDetector, type ManagedFaceDetector } from "../../src/faces";
import type { RawImage } from "../../src/render/types";
import { render, type RenderDeps, type Rendition } from "../../src/render/pipeline/render";
import { createPixelWorkers, type PixelWorkerPool } from "../../src/render/pixels/pool";

/** The repository's fixture images (fixtures/images at the workspace root). */
export const FIXTURES = path.join(__dirname, "..", "..", "..", "..", "fixtures", "images");

export const fixturePath = (file: string): string => path.join(FIXTURES, file);

/** Asset id used when a test gives steps only. */
export const HARNESS_ASSET_ID = "00000000-0000-4000-8000-000000000000";

interface Harness {
  deps: RenderDeps;
  faces: ManagedFaceDetector;
  pixels: PixelWorkerPool;
}

let harness: Harness | undefined;

/** Real render dependencies, created once per test file (jest isolates module state per file). */
export function harnessDeps(limits: MediaLimits = defaultMediaLimits): RenderDeps {
  if (!harness) {
    const faces = createFaceDetector();
    // Two threads: enough for the kernels, light on the 2-core machines tests run on.
    const pixels = createPixelWorkers({ size: 2 });
    harness = { faces, pixels, deps: { faces, pixels, limits: defaultMediaLimits, limitInputPixels: 100_000_000 } };
  }
  return limits === harness.deps.limits ? harness.deps : { ...harness.deps, limits };
}

/** The face detector the harness renders with (for tests that measure faces directly). */
export function harnessFaces(): ManagedFaceDetector {
  harnessDeps();
  return harness!.faces;
}

/** Stops the harness's worker threads; call from afterAll. */
export async function closeHarness(): Promise<void> {
  const h = harness;
  harness = undefined;
  if (!h) return;
  await Promise.all([h.faces.close(), h.pixels.close()]);
}

export async function contentTypeOf(data: Buffer): Promise<string> {
  const { format } = await sharp(data).metadata();
  const type = rasterMimeTypeOf(format);
  if (!type) throw new Error(`fixture format ${format} has no media content type`);
  return type;
}

export interface RenderFixtureOptions {
  limits?: MediaLimits;
  /** Defaults to the media path (steps + asset id), as the service would use. */
  cacheKey?: string;
  /** The asset's focal point, as delivery passes it from the attributes blob. */
  focalPoint?: FocalPoint;
  /** Replaces some real dependencies (e.g. a face detector that counts its calls). */
  deps?: Partial<RenderDeps>;
  /** Originals of the overlay assets the steps name, by asset id. */
  overlays?: ReadonlyMap<string, Buffer>;
}

/**
 * Renders a fixture through the real pipeline (render() with real face detection and pixel
 * workers). `steps` is either typed steps or a URL path: a full media path
 * (`/crop:width=10:height=10/<uuid>.jpg`) or only its steps (`crop:width=10:height=10`, or
 * several joined by `/`), validated by the real URL parser.
 */
export async function renderFixture(
  file: string,
  steps: TransformationStep[] | string,
  options: RenderFixtureOptions = {},
): Promise<Rendition> {
  return renderImage(await readFile(fixturePath(file)), steps, options);
}

/** renderFixture for an image built in the test (e.g. a fixture given a real alpha ramp). */
export async function renderImage(
  original: Buffer,
  steps: TransformationStep[] | string,
  options: RenderFixtureOptions = {},
): Promise<Rendition> {
  const limits = options.limits ?? defaultMediaLimits;
  const contentType = await contentTypeOf(original);
  let parsed: TransformationStep[];
  let mediaPath: string;
  if (typeof steps === "string") {
    const full = /\/[0-9a-f-]{36}\.[a-z]+$/i.test(steps);
    const extension = contentType === "image/jpeg" ? "jpg" : contentType.slice("image/".length);
    mediaPath = full ? steps : `/${steps.replace(/^\/+/, "")}/${HARNESS_ASSET_ID}.${extension}`;
    parsed = parseMediaPath(mediaPath, limits).steps;
  } else {
    parsed = steps;
    mediaPath = `/${steps.map(formatStep).join("/")}/${HARNESS_ASSET_ID}`;
  }
  return render(
    {
      original,
      contentType,
      steps: parsed,
      cacheKey: options.cacheKey ?? mediaPath,
      focalPoint: options.focalPoint,
      overlays: options.overlays,
    },
    { ...harnessDeps(limits), ...options.deps },
  );
}

/** Decodes an image to 8-bit sRGB pixels (3 or 4 channels), as tests compare them. */
export async function decodePixels(input: Buffer | sharp.Sharp): Promise<RawImage> {
  const image = Buffer.isBuffer(input) ? sharp(input) : input;
  const { data, info } = await image
    .toColourspace("srgb")
    .raw({ depth: "uchar" })
    .toBuffer({ resolveWithObject: true });
  if (info.channels !== 3 && info.channels !== 4) throw new Error(`decoded ${info.channels} channels`);
  return { data, width: info.width, height: info.height, channels: info.channels };
}
