import sharp from "sharp";
import { parseColor } from "@media-platform/contracts";
import { fromRaw, toRaw } from "../raw";
import { largestSquareAround } from "./focal-point";
import { cropToSquare } from "./square-crop";
import { formatHasAlpha, type Transformation } from "./transformation";
import type { FaceBox, FaceDetector, Region, StepContext } from "../types";

/**
 * The detector sees a copy no larger than this: the tiny face detector resizes its input
 * to a 416 px square anyway, and libvips shrinks (with shrink-on-load) far better than
 * tf's bilinear resize of a full-size tensor copied to the worker.
 */
const DETECTION_SIDE = 416;

/**
 * Face boxes from the detector run from the eyebrows to the chin; the crop adds this many
 * face sides around the union of the faces (half on each side), so hair, ears and chin fit.
 */
const FACE_MARGIN = 1;

/** Face boxes cover little above the eyes; moving the window up by this share of the face
 * height centres the whole head rather than the box. */
const HEAD_LIFT = 0.1;

/**
 * The square window an avatar crops from a `width` x `height` image, or undefined when no
 * face was found (the caller then uses sharp's attention strategy). Centred on the union
 * of the face boxes, with FACE_MARGIN face sides of margin, made square, then clamped to
 * the image: shrunk to its shorter side if needed and slid inside it.
 */
export function avatarCropBox(width: number, height: number, faces: readonly FaceBox[]): Region | undefined {
  if (faces.length === 0) return undefined;
  const left = Math.min(...faces.map((f) => f.x));
  const top = Math.min(...faces.map((f) => f.y));
  const right = Math.max(...faces.map((f) => f.x + f.width));
  const bottom = Math.max(...faces.map((f) => f.y + f.height));
  const faceSide = Math.max(...faces.map((f) => Math.max(f.width, f.height)));
  const tallest = Math.max(...faces.map((f) => f.height));
  const side = Math.min(width, height, Math.round(Math.max(right - left, bottom - top) + FACE_MARGIN * faceSide));
  const centreX = (left + right) / 2;
  const centreY = (top + bottom) / 2 - HEAD_LIFT * tallest;
  const clamp = (v: number, max: number) => Math.min(Math.max(0, v), max);
  return {
    left: clamp(Math.round(centreX - side / 2), width - side),
    top: clamp(Math.round(centreY - side / 2), height - side),
    width: Math.max(1, side),
    height: Math.max(1, side),
  };
}

/**
 * Faces in the coordinates of the `width` x `height` image entering the step, found on a
 * reduced copy (exported so tests can see what the avatar step sees).
 */
export async function findFaces(
  image: sharp.Sharp,
  detector: FaceDetector,
  width: number,
  height: number,
): Promise<FaceBox[]> {
  const probe = await toRaw(
    image
      .clone()
      .resize(DETECTION_SIDE, DETECTION_SIDE, { fit: "inside", withoutEnlargement: true })
      .flatten({ background: "#ffffff" }),
  );
  const sx = width / probe.width;
  const sy = height / probe.height;
  const faces = await detector.detect(probe);
  return faces.map((f) => ({ x: f.x * sx, y: f.y * sy, width: f.width * sx, height: f.height * sy, score: f.score }));
}

const svg = (size: number, body: string) =>
  Buffer.from(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${size}" height="${size}" viewBox="0 0 ${size} ${size}">${body}</svg>`,
  );

/**
 * The square an avatar shows: around the asset's focal point when it has one (the user's choice
 * wins over the detector, which then does not run), else around the faces found, else undefined
 * (the caller uses sharp's attention strategy).
 */
async function avatarBox(image: sharp.Sharp, ctx: StepContext): Promise<Region | undefined> {
  const size = { width: ctx.width, height: ctx.height };
  if (ctx.focalPoint) return largestSquareAround(ctx.focalPoint, size);
  // A detector failure is an error, not a silent attention crop: results are cached for
  // good, errors are not.
  const faces = await findFaces(image, ctx.faces, ctx.width, ctx.height);
  return avatarCropBox(ctx.width, ctx.height, faces);
}

export const avatar = {
  input: "encoded",
  // Face detection on every frame would move the window between frames: the first frame only.
  posterOnly: () => true,
  outputSize: (_input, params) => ({ width: params.size, height: params.size }),
  usesFocalPoint: () => true,
  // A portrait: nothing after it needs the point (and the box came from faces or from it).
  mapFocalPoint: () => undefined,
  async apply(image, params, ctx) {
    const size = params.size;
    const box = await avatarBox(image, ctx);
    const square = box
      ? cropToSquare(image, box, size, ctx.width, ctx.height)
      : image.resize(size, size, { fit: "cover", position: sharp.strategy.attention });
    if (params.shape === "square" && params.border === undefined) return square;

    // Overlays go on the finished square; materialising first keeps sharp from reordering
    // the composite against the crop/resize.
    const overlays: sharp.OverlayOptions[] = [];
    const c = size / 2;
    if (params.shape === "circle") {
      if (formatHasAlpha(ctx.output.format)) {
        overlays.push({ input: svg(size, `<circle cx="${c}" cy="${c}" r="${c}" fill="#fff"/>`), blend: "dest-in" });
      } else {
        const hole = `M0 ${c}a${c} ${c} 0 1 0 ${size} 0a${c} ${c} 0 1 0 ${-size} 0Z`;
        overlays.push({
          input: svg(size, `<path fill="#fff" fill-rule="evenodd" d="M0 0H${size}V${size}H0Z${hole}"/>`),
        });
      }
    }
    if (params.border !== undefined) {
      // Validated as hex by the URL parser.
      const colour = parseColor(params.border_color, true)!;
      const b = params.border;
      const stroke = `fill="none" stroke="rgb(${colour.r},${colour.g},${colour.b})" stroke-opacity="${colour.alpha}" stroke-width="${b}"`;
      // Drawn inside the size: the stroke is centred on a path inset by half its width.
      const shape =
        params.shape === "circle"
          ? `<circle cx="${c}" cy="${c}" r="${c - b / 2}" ${stroke}/>`
          : `<rect x="${b / 2}" y="${b / 2}" width="${size - b}" height="${size - b}" ${stroke}/>`;
      overlays.push({ input: svg(size, shape) });
    }
    const framed = fromRaw(await toRaw(square)).composite(overlays);
    // composite adds an alpha band; only a transparent circle or a transparent source needs it.
    const transparent = ctx.hasAlpha || (params.shape === "circle" && formatHasAlpha(ctx.output.format));
    return transparent ? framed : framed.removeAlpha();
  },
} satisfies Transformation<"avatar">;
