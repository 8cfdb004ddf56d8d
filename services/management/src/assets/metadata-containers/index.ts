import { editGif, isGif } from "./gif";
import { editIsobmff } from "./isobmff";
import { editJpeg, isJpeg } from "./jpeg";
import { editPng, isPng } from "./png";
import { MalformedMetadataError, type RemovalRules, type Removed } from "./rules";
import { editTiff } from "./tiff";
import { editWebp, isWebp } from "./webp";

export { MalformedMetadataError, type RemovalRules, type Removed } from "./rules";

/**
 * The containers whose metadata can be edited: what an upload was detected as. `heif` is HEIC,
 * HEIF and AVIF; `camera-raw` is a TIFF-based RAW (DNG, CR2, NEF, ARW, ORF, RW2, ...), Canon's
 * CR3 or Fujifilm's RAF, whose maker notes always stay (their decoders need them).
 */
export const METADATA_CONTAINERS = ["jpeg", "png", "webp", "gif", "tiff", "heif", "camera-raw"] as const;
export type MetadataContainer = (typeof METADATA_CONTAINERS)[number];

const isTiff = (b: Buffer): boolean => /^(II|MM)$/.test(b.toString("latin1", 0, 2));
const isIsobmff = (b: Buffer): boolean => b.length >= 12 && b.toString("latin1", 4, 8) === "ftyp";
const RAF_MAGIC = "FUJIFILMCCD-RAW";

/**
 * Removes what `rules` name from `bytes`, a file of the given container: in place (every edit but
 * a compressed PNG text chunk keeps the file's length and every offset in it), or as a new buffer
 * (PNG). Throws MalformedMetadataError when a block that must be checked cannot be walked.
 */
export function editMetadata(
  bytes: Buffer,
  container: MetadataContainer,
  rules: RemovalRules,
): { bytes: Buffer; removed: Removed } {
  const edit = (): { bytes: Buffer; removed: Removed } => {
    switch (container) {
      case "jpeg":
        return expect(isJpeg(bytes), "JPEG", () => editJpeg(bytes, rules));
      case "png":
        if (!isPng(bytes)) throw new MalformedMetadataError("PNG signature");
        return editPng(bytes, rules) ?? { bytes, removed: [] };
      case "webp":
        return expect(isWebp(bytes), "WebP", () => editWebp(bytes, rules));
      case "gif":
        return expect(isGif(bytes), "GIF", () => editGif(bytes, rules));
      case "tiff":
        return expect(isTiff(bytes), "TIFF", () => editTiff(bytes, rules, "TIFF"));
      case "heif":
        return expect(isIsobmff(bytes), "HEIF", () => editIsobmff(bytes, rules));
      case "camera-raw":
        return { bytes, removed: editCameraRaw(bytes, { ...rules, makerNotes: false }) };
    }
  };
  const expect = (ok: boolean, what: string, run: () => Removed) => {
    if (!ok) throw new MalformedMetadataError(`${what} signature`);
    return { bytes, removed: run() };
  };
  try {
    return edit();
  } catch (err) {
    // A length or offset that runs past the end of the file is a malformed block too.
    if (err instanceof RangeError) throw new MalformedMetadataError(`${container} (${err.message})`);
    throw err;
  }
}

function editCameraRaw(bytes: Buffer, rules: RemovalRules): Removed {
  if (isTiff(bytes)) return editTiff(bytes, rules, "RAW");
  if (isIsobmff(bytes)) return editIsobmff(bytes, rules, "CR3");
  if (bytes.toString("latin1", 0, RAF_MAGIC.length) === RAF_MAGIC && bytes.length >= 92) {
    // RAF: the header gives the embedded JPEG (with the camera's EXIF) by offset and length.
    const start = bytes.readUInt32BE(84);
    const jpeg = bytes.subarray(start, Math.min(bytes.length, start + bytes.readUInt32BE(88)));
    if (!isJpeg(jpeg)) throw new MalformedMetadataError("RAF JPEG");
    return editJpeg(jpeg, rules, "RAF JPEG");
  }
  throw new MalformedMetadataError("camera RAW container");
}
