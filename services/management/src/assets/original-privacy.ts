import { readFile, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import exifReader from "exif-reader";
import type sharp from "sharp";
import { nativeRequire } from "../native-require";

// ExifTool compiled to WebAssembly (no perl, nothing downloaded), loaded on the first original
// that has something to remove.
type ExifTool = typeof import("@uswriting/exiftool", { with: { "resolution-mode": "import" } });
let exiftoolModule: ExifTool | undefined;
// Its ES module build: the CommonJS one looks for the WebAssembly file at its build machine's path.
const exiftool = (): ExifTool =>
  (exiftoolModule ??= nativeRequire<ExifTool>(
    path.join(path.dirname(require.resolve("@uswriting/exiftool")), "..", "esm", "index.js"),
  ));

/**
 * What of an original's metadata is stored (and so served publicly by the media service's
 * `/original/<id>.<ext>`): ORIGINAL_METADATA.
 * - `private` (default): GPS and serial numbers (body, lens, internal) are removed; orientation,
 *   the colour profile, copyright and the rest of EXIF are kept.
 * - `keep`: everything but GPS is kept.
 * In both, KEEP_GPS=true keeps the GPS position too.
 */
export const ORIGINAL_METADATA_POLICIES = ["private", "keep"] as const;
export type OriginalMetadataPolicy = (typeof ORIGINAL_METADATA_POLICIES)[number];

export interface OriginalPrivacyOptions {
  policy: OriginalMetadataPolicy;
  keepGps: boolean;
}

/** ExifTool tag names (wildcards allowed) to delete: GPS in EXIF and XMP, and serial numbers. */
function tagsToDelete(meta: sharp.Metadata, options: OriginalPrivacyOptions): string[] {
  const tags: string[] = [];
  const exif = meta.exif ? safeExif(meta.exif) : undefined;
  const xmp = meta.xmp?.toString("latin1") ?? "";
  if (!options.keepGps && (hasEntries(exif?.GPSInfo) || /GPS(Latitude|Longitude|Altitude|Position)/.test(xmp))) {
    tags.push("GPS*");
  }
  if (options.policy === "private") {
    const photo = exif?.Photo ?? {};
    const image = exif?.Image ?? {};
    const serial = ["BodySerialNumber", "LensSerialNumber", "CameraSerialNumber", "SerialNumber"].some(
      (name) => name in photo || name in image,
    );
    if (serial || /SerialNumber/.test(xmp)) tags.push("*SerialNumber");
  }
  return tags;
}

function safeExif(buffer: Buffer): exifReader.Exif | undefined {
  try {
    return exifReader(buffer);
  } catch {
    return undefined;
  }
}

const hasEntries = (value: object | undefined): boolean => value !== undefined && Object.keys(value).length > 0;

/**
 * The original's bytes without the metadata the policy drops, rewritten losslessly (ExifTool edits
 * the metadata segments only; the coded image data is untouched), or undefined when nothing has to
 * go (no ExifTool instance is started then).
 */
export async function withoutPrivateMetadata(
  bytes: Buffer,
  extension: string,
  meta: sharp.Metadata,
  options: OriginalPrivacyOptions,
): Promise<Buffer | undefined> {
  const tags = tagsToDelete(meta, options);
  if (tags.length === 0) return undefined;
  const result = await exiftool().writeMetadata(
    { name: `original.${extension}`, data: new Uint8Array(bytes) },
    Object.fromEntries(tags.map((tag) => [tag, ""])),
  );
  if (!result.success) throw new Error(`could not remove private metadata: ${result.error}`);
  return Buffer.from(result.data);
}

/** withoutPrivateMetadata of a spooled file, in place; its new size, or undefined when untouched. */
export async function removePrivateMetadata(
  filePath: string,
  extension: string,
  meta: sharp.Metadata,
  options: OriginalPrivacyOptions,
): Promise<number | undefined> {
  if (tagsToDelete(meta, options).length === 0) return undefined;
  const cleaned = await withoutPrivateMetadata(await readFile(filePath), extension, meta, options);
  if (!cleaned) return undefined;
  const temp = `${filePath}.private`;
  try {
    await writeFile(temp, cleaned, { mode: 0o600 });
    await rename(temp, filePath);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
  return cleaned.length;
}
