/**
 * The image formats the platform stores and serves: the one table of their MIME types and
 * file extensions (upload sniffing, asset JSON, media URLs and output, the client).
 */
export const ASSET_FORMATS = [
  "jpeg",
  "png",
  "webp",
  "gif",
  "avif",
  "tiff",
  "svg",
  "heic",
  "pdf",
  "dng",
  "cr2",
  "cr3",
  "nef",
  "arw",
  "raf",
  "rw2",
  "orf",
] as const;
export type AssetFormat = (typeof ASSET_FORMATS)[number];

/** Camera RAW formats: stored as uploaded, rendered from their largest embedded JPEG preview. */
export const CAMERA_RAW_FORMATS = ["dng", "cr2", "cr3", "nef", "arw", "raf", "rw2", "orf"] as const;
export type CameraRawFormat = (typeof CAMERA_RAW_FORMATS)[number];
export const isCameraRawFormat = (format: string): format is CameraRawFormat =>
  (CAMERA_RAW_FORMATS as readonly string[]).includes(format);

/**
 * The encoder quality a lossy output gets when its URL sets none (`format:type=webp` without
 * `quality`): what the media service encodes with and what the studio shows as the default.
 */
export const DEFAULT_ENCODER_QUALITY = { jpeg: 82, webp: 80, avif: 55 } as const;
export type LossyFormat = keyof typeof DEFAULT_ENCODER_QUALITY;

/** The formats a rendition can be encoded in (and the stored formats libvips decodes itself). */
export const RASTER_FORMATS = ["jpeg", "png", "webp", "gif", "avif", "tiff"] as const;
export type RasterFormat = (typeof RASTER_FORMATS)[number];

/**
 * The format a rendition of an original stored as `format` is encoded in (unless a step says
 * otherwise). An SVG or a PDF page has no pixels of its own: it is drawn and encoded as PNG. A
 * HEIC photo and a camera RAW render from the JPEG made from them at upload (their rendering
 * source): JPEG.
 */
export function renditionFormatOf(format: AssetFormat): RasterFormat {
  if (format === "svg" || format === "pdf") return "png";
  if (format === "heic" || isCameraRawFormat(format)) return "jpeg";
  return format;
}

/** `extensions[0]` is the one the platform writes (e.g. in an asset's example `mediaUrl`). */
export const IMAGE_FORMATS = {
  jpeg: { mimeType: "image/jpeg", extensions: ["jpg", "jpeg"] },
  png: { mimeType: "image/png", extensions: ["png"] },
  webp: { mimeType: "image/webp", extensions: ["webp"] },
  gif: { mimeType: "image/gif", extensions: ["gif"] },
  avif: { mimeType: "image/avif", extensions: ["avif"] },
  tiff: { mimeType: "image/tiff", extensions: ["tiff", "tif"] },
  svg: { mimeType: "image/svg+xml", extensions: ["svg"] },
  heic: { mimeType: "image/heic", extensions: ["heic", "heif"] },
  pdf: { mimeType: "application/pdf", extensions: ["pdf"] },
  dng: { mimeType: "image/x-adobe-dng", extensions: ["dng"] },
  cr2: { mimeType: "image/x-canon-cr2", extensions: ["cr2"] },
  cr3: { mimeType: "image/x-canon-cr3", extensions: ["cr3"] },
  nef: { mimeType: "image/x-nikon-nef", extensions: ["nef"] },
  arw: { mimeType: "image/x-sony-arw", extensions: ["arw"] },
  raf: { mimeType: "image/x-fuji-raf", extensions: ["raf"] },
  rw2: { mimeType: "image/x-panasonic-rw2", extensions: ["rw2"] },
  orf: { mimeType: "image/x-olympus-orf", extensions: ["orf"] },
} as const satisfies Record<AssetFormat, { mimeType: string; extensions: readonly string[] }>;

export type ImageExtension = (typeof IMAGE_FORMATS)[AssetFormat]["extensions"][number];
export const IMAGE_EXTENSIONS: readonly ImageExtension[] = ASSET_FORMATS.flatMap((f) => IMAGE_FORMATS[f].extensions);

/** The format of a Content-Type (parameters and case ignored), or undefined when not ours. */
export function formatOfMimeType(contentType: string): AssetFormat | undefined {
  const mime = contentType.split(";", 1)[0]!.trim().toLowerCase();
  return ASSET_FORMATS.find((f) => IMAGE_FORMATS[f].mimeType === mime);
}

/** The format a file extension (with or without the dot, any case) names, or undefined. */
export function formatOfExtension(extension: string): AssetFormat | undefined {
  const ext = extension.replace(/^\./, "").toLowerCase();
  return ASSET_FORMATS.find((f) => (IMAGE_FORMATS[f].extensions as readonly string[]).includes(ext));
}

/**
 * The MIME type of a raster image as sharp (libvips) names its format in `metadata().format`, or
 * undefined when it is not one the platform renders. libvips reads AVIF with its HEIF loader, so
 * it names it "heif".
 */
export function rasterMimeTypeOf(decodedFormat: string): string | undefined {
  const format = decodedFormat === "heif" ? "avif" : decodedFormat;
  const raster = RASTER_FORMATS.find((f) => f === format);
  return raster ? IMAGE_FORMATS[raster].mimeType : undefined;
}

/**
 * What each accepted upload format is stored as and rendered to, for people (OpenAPI, docs,
 * GET /transformations): one line per group of formats.
 */
export const ACCEPTED_FORMATS_SUMMARY: ReadonlyArray<{ formats: readonly AssetFormat[]; renders: string }> = [
  { formats: ["jpeg", "png", "webp", "gif", "avif", "tiff"], renders: "in their own format" },
  { formats: ["svg"], renders: "PNG (the SVG stored sanitised)" },
  { formats: ["heic"], renders: "JPEG (HEVC decoded once at upload; the primary image of a burst or Live Photo)" },
  { formats: [...CAMERA_RAW_FORMATS], renders: "JPEG (the largest embedded JPEG preview)" },
  { formats: ["pdf"], renders: "PNG (the first page, or the one page:index selects)" },
];

/**
 * Limits of a PDF original, checked at upload before it is stored and again by media before a
 * page is drawn: the page count (a page tree can claim millions) and a page's side in points,
 * the PDF specification's own implementation limit (200 inches).
 */
export const PDF_LIMITS = { maxPages: 2000, maxPageSidePoints: 14_400 } as const;

/** Every accepted format with its MIME type, extensions and what its renditions are (GET /transformations). */
export function acceptedFormats(): Array<{
  format: AssetFormat;
  mimeType: string;
  extensions: string[];
  renditionFormat: RasterFormat;
}> {
  return ASSET_FORMATS.map((format) => ({
    format,
    mimeType: IMAGE_FORMATS[format].mimeType,
    extensions: [...IMAGE_FORMATS[format].extensions],
    renditionFormat: renditionFormatOf(format),
  }));
}
