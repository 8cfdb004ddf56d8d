import { startsWith, type RemovalRules, type Removed } from "./rules";
import { editExifBlock } from "./tiff";
import { rewriteXmp } from "./xmp";

/**
 * A WebP's EXIF and XMP chunks (RIFF), edited in place at their own length: the RIFF sizes and the
 * VP8/VP8L/ANIM chunks are not touched.
 */

const RIFF = Buffer.from("RIFF", "latin1");
const WEBP = Buffer.from("WEBP", "latin1");

export const isWebp = (bytes: Buffer): boolean => startsWith(bytes, RIFF) && bytes.toString("latin1", 8, 12) === "WEBP";

/** Applies `rules` to the WebP in `webp` in place. */
export function editWebp(webp: Buffer, rules: RemovalRules): Removed {
  if (!isWebp(webp) || webp.compare(WEBP, 0, 4, 8, 12) !== 0) return [];
  const removed: Removed = [];
  const end = Math.min(webp.length, 8 + webp.readUInt32LE(4));
  let at = 12;
  while (at + 8 <= end) {
    const type = webp.toString("latin1", at, at + 4);
    const size = webp.readUInt32LE(at + 4);
    const data = webp.subarray(at + 8, Math.min(end, at + 8 + size));
    if (type === "EXIF") removed.push(...editExifBlock(data, rules, "WebP EXIF"));
    else if (type === "XMP ") removed.push(...rewriteXmp(data, rules));
    at += 8 + size + (size % 2);
  }
  return removed;
}
