"use strict";
/**
 * Worker thread of assets/format-workers.ts: the decoders that run WebAssembly or draw for long
 * (HEVC with libheif, PDF pages with pdf.js) and SVG sanitising
 * (svg-sanitiser.cjs: jsdom and DOMPurify) run here, off the service's event loop, and the
 * service terminates the thread at a task's deadline. Plain CommonJS, copied as it is into the bundle beside index.js: its packages load through Node's own
 * resolution (ES module builds by `import()`) under tsx, jest and the bundle alike.
 */
const { parentPort } = require("node:worker_threads");
const path = require("node:path");
const { loadSanitiser, sanitiseSvgTask } = require("./svg-sanitiser.cjs");

let heif;
let pdfjs;

function loadHeif() {
  heif ??= require("libheif-js/wasm-bundle");
  return heif;
}

/** HEIC/HEIF: the primary image, decoded to RGBA; its size (ispe, after irot/imir) checked against `maxPixels` first. */
async function decodeHeic({ bytes, maxPixels }) {
  loadHeif();
  const decoder = new heif.HeifDecoder();
  const images = decoder.decode(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  try {
    if (images.length === 0) return { error: "undecodable", message: "The HEIF file holds no image" };
    const primary = images.find((image) => image.is_primary()) ?? images[0];
    const width = primary.get_width();
    const height = primary.get_height();
    if (width * height > maxPixels) return { error: "pixel-limit", width, height };
    const data = await new Promise((resolve, reject) =>
      primary.display({ data: new Uint8ClampedArray(width * height * 4), width, height }, (result) =>
        result ? resolve(result.data) : reject(new Error("HEVC decode failed")),
      ),
    );
    return { width, height, images: images.length, data: Buffer.from(data.buffer, data.byteOffset, data.byteLength) };
  } finally {
    for (const image of images) image.free?.();
  }
}

async function loadPdfjs() {
  if (pdfjs) return pdfjs;
  const lib = await import("pdfjs-dist/legacy/build/pdf.mjs");
  const root = path.dirname(require.resolve("pdfjs-dist/package.json"));
  lib.GlobalWorkerOptions.workerSrc = path.join(root, "legacy/build/pdf.worker.mjs");
  pdfjs = { lib, root, canvas: require("@napi-rs/canvas") };
  return pdfjs;
}

/**
 * PDF: the page count and page 1's size in points (its rotation applied), refused over the
 * limits before any page is drawn; then page 1 drawn to fit `thumbnailSide`, as PNG. No script
 * runs (isEvalSupported off, no scripting), nothing is fetched: fonts and CMaps come from
 * pdfjs-dist's own folders, system fonts are not looked up.
 */
async function readPdf({ bytes, maxPages, maxPageSide, thumbnailSide }) {
  const { lib, root, canvas } = await loadPdfjs();
  const doc = await lib.getDocument({
    data: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength),
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
  try {
    const pages = doc.numPages;
    if (pages > maxPages)
      return { error: "pdf-limit", message: `The PDF has ${pages} pages, above the limit of ${maxPages}` };
    const page = await doc.getPage(1);
    const viewport = page.getViewport({ scale: 1 });
    const width = Math.round(viewport.width);
    const height = Math.round(viewport.height);
    if (!(width >= 1 && height >= 1) || width > maxPageSide || height > maxPageSide) {
      return {
        error: "pdf-limit",
        message: `Page 1 is ${width} x ${height} points; a page side may be 1 to ${maxPageSide} points`,
      };
    }
    const scale = Math.min(1, thumbnailSide / Math.max(width, height));
    const drawn = page.getViewport({ scale });
    const target = canvas.createCanvas(Math.max(1, Math.round(drawn.width)), Math.max(1, Math.round(drawn.height)));
    await page.render({ canvasContext: target.getContext("2d"), canvas: target, viewport: drawn, background: "white" })
      .promise;
    return { pages, width, height, png: target.toBuffer("image/png") };
  } finally {
    await doc.destroy();
  }
}

const TASKS = { heic: decodeHeic, pdf: readPdf, svg: sanitiseSvgTask };
/** What each task loads once per thread; the service's clock for the task starts after it. */
const LOADERS = { heic: loadHeif, pdf: loadPdfjs, svg: loadSanitiser };

parentPort.on("message", ({ id, kind, input }) => {
  Promise.resolve()
    .then(() => LOADERS[kind]())
    .then(() => {
      parentPort.postMessage({ id, started: true });
      return TASKS[kind](input);
    })
    .then(
      // Decoded pixels (48 MB for 12 MP) move to the service without a copy.
      (output) => parentPort.postMessage({ id, output }, output && output.data ? [output.data.buffer] : []),
      (err) =>
        parentPort.postMessage({
          id,
          output: { error: "undecodable", message: String(err && err.message).slice(0, 200) },
        }),
    );
});
