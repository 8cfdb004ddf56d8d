import path from "node:path";
import { nativeRequire } from "@media-platform/runtime";
import { PDF_LIMITS } from "@media-platform/contracts";
import type { RawImage, Size } from "../types";
import { TransformationInputError, UndecodableImageError, undecodableOriginal } from "../errors";

/**
 * One page of a PDF original drawn with pdf.js on a Skia canvas (@napi-rs/canvas). It runs only
 * in a render process (killable-render.ts sends every PDF there), which the service kills at the
 * request's deadline. No script runs (isEvalSupported off, no scripting, no XFA), nothing is
 * fetched: the standard fonts and CMaps are pdfjs-dist's own files, system fonts are not used.
 */

interface PdfPage {
  getViewport(options: { scale: number }): { width: number; height: number };
  render(options: { canvasContext: unknown; canvas: unknown; viewport: unknown; background: string }): {
    promise: Promise<void>;
    cancel(): void;
  };
}
interface PdfDocument {
  numPages: number;
  getPage(index: number): Promise<PdfPage>;
  destroy(): Promise<void>;
}
interface PdfJs {
  getDocument(options: Record<string, unknown>): { promise: Promise<PdfDocument> };
}
interface Canvas {
  getContext(kind: "2d"): { getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray } };
}
interface CanvasModule {
  createCanvas(width: number, height: number): Canvas;
}

let loaded: { pdfjs: PdfJs; canvas: CanvasModule; root: string } | undefined;

/** pdf.js and its worker code in this thread (no worker of its own: the render process is one). */
function load(): { pdfjs: PdfJs; canvas: CanvasModule; root: string } {
  if (loaded) return loaded;
  const root = path.dirname(require.resolve("pdfjs-dist/package.json"));
  // pdf.js runs its "worker" in this thread when it finds the worker's handler here.
  (globalThis as { pdfjsWorker?: unknown }).pdfjsWorker = nativeRequire(path.join(root, "legacy/build/pdf.worker.mjs"));
  const pdfjs = nativeRequire<PdfJs>(path.join(root, "legacy/build/pdf.mjs"));
  const canvas = nativeRequire<CanvasModule>(require.resolve("@napi-rs/canvas"));
  loaded = { pdfjs, canvas, root };
  return loaded;
}

export interface PdfDrawing {
  /** The page as RGBA pixels (white behind transparent content). */
  image: RawImage;
  /** The page's size in points (its /Rotate applied). */
  page: Size;
}

/**
 * Draws page `index` (1-based) of the PDF in `bytes`, at the size `sizeFor` gives for the page's
 * size in points (called once the page is read: the steps may need a different scale for a page
 * whose size is not page 1's). A page over PDF_LIMITS is a 400 naming page.index.
 */
export async function drawPdfPage(
  bytes: Buffer,
  index: number,
  sizeFor: (page: Size) => Size,
  signal?: AbortSignal,
): Promise<PdfDrawing> {
  const { pdfjs, canvas, root } = load();
  let doc: PdfDocument;
  try {
    doc = await pdfjs.getDocument({
      // pdf.js takes ownership of the array it is given: a copy, so the caller's buffer stays whole.
      data: new Uint8Array(bytes),
      isEvalSupported: false,
      enableXfa: false,
      disableFontFace: true,
      useSystemFonts: false,
      standardFontDataUrl: `${path.join(root, "standard_fonts")}/`,
      cMapUrl: `${path.join(root, "cmaps")}/`,
      cMapPacked: true,
      wasmUrl: `${path.join(root, "wasm")}/`,
      iccUrl: `${path.join(root, "iccs")}/`,
      verbosity: 0,
    }).promise;
  } catch (err) {
    throw new UndecodableImageError(undecodableOriginal(`the PDF does not parse (${(err as Error).message})`));
  }
  try {
    if (index > doc.numPages) {
      throw new TransformationInputError(
        "page.index",
        `page ${index} does not exist: the document has ${doc.numPages} pages`,
      );
    }
    signal?.throwIfAborted();
    const page = await doc.getPage(index);
    const points = page.getViewport({ scale: 1 });
    const size = { width: Math.round(points.width), height: Math.round(points.height) };
    if (!(size.width >= 1 && size.height >= 1) || Math.max(size.width, size.height) > PDF_LIMITS.maxPageSidePoints) {
      throw new TransformationInputError(
        "page.index",
        `page ${index} is ${size.width} x ${size.height} points; a page side may be 1 to ${PDF_LIMITS.maxPageSidePoints} points`,
      );
    }
    const target = sizeFor(size);
    const scale = Math.min(target.width / points.width, target.height / points.height);
    const viewport = page.getViewport({ scale });
    const width = target.width;
    const height = target.height;
    const surface = canvas.createCanvas(width, height);
    const context = surface.getContext("2d");
    const task = page.render({ canvasContext: context, canvas: surface, viewport, background: "white" });
    const cancel = () => task.cancel();
    signal?.addEventListener("abort", cancel, { once: true });
    try {
      await task.promise;
    } finally {
      signal?.removeEventListener("abort", cancel);
    }
    signal?.throwIfAborted();
    const data = context.getImageData(0, 0, width, height).data;
    return {
      image: { data: Buffer.from(data.buffer, data.byteOffset, data.byteLength), width, height, channels: 4 },
      page: size,
    };
  } finally {
    await doc.destroy();
  }
}
