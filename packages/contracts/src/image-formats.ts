/**
 * The image formats the platform stores and serves: the one table of their MIME types and
 * file extensions (upload sniffing, asset JSON, media URLs and output, the client).
 */
export const ASSET_FORMATS = ["jpeg", "png", "webp", "gif", "avif", "tiff", "svg"] as const;
export type AssetFormat = (typeof ASSET_FORMATS)[number];

/**
 * The formats a rendition can be encoded in: every stored format but SVG. An SVG original is
 * stored as (sanitised) SVG, but a pixel transformation has no SVG result: its renditions are PNG.
 */
export type RasterFormat = Exclude<AssetFormat, "svg">;

/** The format a rendition of an original stored as `format` is encoded in (unless a step says otherwise). */
/**
 * The encoder quality a lossy output gets when its URL sets none (`format:type=webp` without
 * `quality`): what the media service encodes with and what the studio shows as the default.
 */
export const DEFAULT_ENCODER_QUALITY = { jpeg: 82, webp: 80, avif: 55 } as const;
export type LossyFormat = keyof typeof DEFAULT_ENCODER_QUALITY;

export const renditionFormatOf = (format: AssetFormat): RasterFormat => (format === "svg" ? "png" : format);

/** `extensions[0]` is the one the platform writes (e.g. in an asset's example `mediaUrl`). */
export const IMAGE_FORMATS = {
  jpeg: { mimeType: "image/jpeg", extensions: ["jpg", "jpeg"] },
  png: { mimeType: "image/png", extensions: ["png"] },
  webp: { mimeType: "image/webp", extensions: ["webp"] },
  gif: { mimeType: "image/gif", extensions: ["gif"] },
  avif: { mimeType: "image/avif", extensions: ["avif"] },
  tiff: { mimeType: "image/tiff", extensions: ["tiff", "tif"] },
  svg: { mimeType: "image/svg+xml", extensions: ["svg"] },
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
  const raster = ASSET_FORMATS.find((f): f is RasterFormat => f !== "svg" && f === format);
  return raster ? IMAGE_FORMATS[raster].mimeType : undefined;
}
