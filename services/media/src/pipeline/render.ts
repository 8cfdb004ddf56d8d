import sharp from "sharp";
import { resolveParams, type MediaLimits, type TransformationStep } from "@media-platform/contracts";
import { transformations } from "../transformations";
import type { FaceDetector, OutputFormat, PixelWorkers, StepContext } from "../transformations/transformation";
import { fromRaw, toRaw } from "./raw";

export interface RenderDeps {
  pixels: PixelWorkers;
  faces: FaceDetector;
  limits: MediaLimits;
  /** sharp's decompression-bomb guard: originals above this many pixels are refused. */
  limitInputPixels: number;
}

export interface RenderInput {
  original: Buffer;
  /** Content type of the stored original: the output keeps this format. */
  contentType: string;
  steps: TransformationStep[];
  cacheKey: string;
}

export interface Rendition {
  data: Buffer;
  contentType: string;
  width: number;
  height: number;
}

const FORMATS: Record<string, OutputFormat> = {
  "image/jpeg": "jpeg",
  "image/png": "png",
  "image/webp": "webp",
  "image/gif": "gif",
  "image/avif": "avif",
  "image/tiff": "tiff",
};

export class UnsupportedOriginalError extends Error {
  constructor(contentType: string) {
    super(`stored original has an unsupported content type: ${contentType}`);
    this.name = "UnsupportedOriginalError";
  }
}

export function outputFormatFor(contentType: string): OutputFormat {
  const format = FORMATS[contentType.split(";", 1)[0]!.trim().toLowerCase()];
  if (!format) throw new UnsupportedOriginalError(contentType);
  return format;
}

/**
 * Decodes the original (EXIF orientation applied, first frame of animations), applies the
 * steps left to right and encodes in the original's format, sRGB, metadata stripped.
 */
export async function render(input: RenderInput, deps: RenderDeps): Promise<Rendition> {
  const format = outputFormatFor(input.contentType);
  let image = sharp(input.original, { limitInputPixels: deps.limitInputPixels, failOn: "error", autoOrient: true });
  const meta = await image.metadata();
  const oriented = meta.autoOrient ?? { width: meta.width, height: meta.height };
  const ctx: StepContext = {
    cacheKey: input.cacheKey,
    stepIndex: 0,
    width: oriented.width,
    height: oriented.height,
    hasAlpha: meta.hasAlpha,
    output: { format },
    limits: deps.limits,
    pixels: deps.pixels,
    faces: deps.faces,
  };
  for (const [index, step] of input.steps.entries()) {
    const transformation = transformations[step.name] as (typeof transformations)[typeof step.name];
    const params = resolveParams(step.name, step.params as never);
    ctx.stepIndex = index;
    image = await (transformation.apply as (i: sharp.Sharp, p: unknown, c: StepContext) => Promise<sharp.Sharp>)(
      image,
      params,
      ctx,
    );
    if (index < input.steps.length - 1) {
      // Materialise so the next step starts from pixels, whatever order sharp would use.
      const raw = await toRaw(image);
      ctx.width = raw.width;
      ctx.height = raw.height;
      ctx.hasAlpha = raw.channels === 4;
      image = fromRaw(raw);
    }
  }
  const { data, info } = await encode(image, ctx.output).toBuffer({ resolveWithObject: true });
  return { data, contentType: `image/${format}`, width: info.width, height: info.height };
}

function encode(image: sharp.Sharp, output: StepContext["output"]): sharp.Sharp {
  const quality = output.quality;
  switch (output.format) {
    case "jpeg":
      return image.jpeg({ quality: quality ?? 82, mozjpeg: false });
    case "webp":
      return image.webp({ quality: quality ?? 80 });
    case "avif":
      return image.avif({ quality: quality ?? 55 });
    case "png":
      return image.png();
    case "gif":
      return image.gif();
    case "tiff":
      return image.tiff({ compression: "lzw" });
  }
}
