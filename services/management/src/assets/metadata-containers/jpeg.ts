import { editPhotoshopResources } from "./iptc";
import { startsWith, type RemovalRules, type Removed } from "./rules";
import { editExifBlock, multiPictureImages } from "./tiff";
import { rewriteXmp } from "./xmp";

/**
 * A JPEG's metadata segments edited in place, every one of them: each APP1 EXIF block (a file may
 * carry several, and readers differ on which one they show), the APP1 XMP packet and its extended
 * XMP parts, the APP13 Photoshop resources (IPTC), and the same segments of every secondary image
 * the MPF segment lists (gain maps, depth maps). Segment lengths never change, so MPF's offsets and
 * the entropy-coded data stay byte for byte.
 */

const MARKER = { soi: 0xd8, eoi: 0xd9, sos: 0xda, app1: 0xe1, app2: 0xe2, app13: 0xed, tem: 0x01 } as const;
const EXIF_ID = Buffer.from("Exif\0", "latin1");
const XMP_ID = Buffer.from("http://ns.adobe.com/xap/1.0/\0", "latin1");
const EXTENDED_XMP_ID = Buffer.from("http://ns.adobe.com/xmp/extension/\0", "latin1");
const PHOTOSHOP_ID = Buffer.from("Photoshop 3.0\0", "latin1");
const MPF_ID = Buffer.from("MPF\0", "latin1");
/** GUID (32 hex digits), full length and offset before each extended XMP part's bytes. */
const EXTENDED_HEADER = 32 + 4 + 4;

export const isJpeg = (bytes: Buffer): boolean => bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === MARKER.soi;

/** Applies `rules` to the JPEG in `jpeg` (a view) in place. */
export function editJpeg(jpeg: Buffer, rules: RemovalRules, label = "JPEG", nested = false): Removed {
  const removed: Removed = [];
  const extended = new Map<string, Array<{ offset: number; data: Buffer }>>();
  let mpf: Buffer | undefined;
  let at = 2;
  while (at + 4 <= jpeg.length) {
    if (jpeg[at] !== 0xff) break;
    const marker = jpeg[at + 1]!;
    // Fill bytes, and the markers that stand alone without a length.
    if (marker === 0xff) {
      at++;
      continue;
    }
    if (marker === MARKER.tem || (marker >= 0xd0 && marker <= 0xd7)) {
      at += 2;
      continue;
    }
    if (marker === MARKER.sos || marker === MARKER.eoi) break;
    const length = jpeg.readUInt16BE(at + 2);
    if (length < 2) break;
    const body = jpeg.subarray(at + 4, Math.min(jpeg.length, at + 2 + length));
    if (marker === MARKER.app1 && startsWith(body, EXIF_ID)) {
      // "Exif\0" and one pad byte (some writers put another value there).
      removed.push(...editExifBlock(body.subarray(EXIF_ID.length + 1), rules, `${label} EXIF`));
    } else if (marker === MARKER.app1 && startsWith(body, XMP_ID)) {
      removed.push(...rewriteXmp(body.subarray(XMP_ID.length), rules));
    } else if (
      marker === MARKER.app1 &&
      startsWith(body, EXTENDED_XMP_ID) &&
      body.length > EXTENDED_XMP_ID.length + EXTENDED_HEADER
    ) {
      const part = body.subarray(EXTENDED_XMP_ID.length);
      const guid = part.toString("latin1", 0, 32);
      const parts = extended.get(guid) ?? [];
      parts.push({ offset: part.readUInt32BE(36), data: part.subarray(EXTENDED_HEADER) });
      extended.set(guid, parts);
    } else if (marker === MARKER.app13 && startsWith(body, PHOTOSHOP_ID)) {
      removed.push(
        ...editPhotoshopResources(body.subarray(PHOTOSHOP_ID.length), rules, (t, r) =>
          editExifBlock(t, r, `${label} Photoshop EXIF`),
        ),
      );
    } else if (marker === MARKER.app2 && startsWith(body, MPF_ID) && !nested) {
      mpf = body.subarray(MPF_ID.length);
    }
    at += 2 + length;
  }
  for (const parts of extended.values()) removed.push(...rewriteExtendedXmp(parts, rules));
  if (mpf) {
    const origin = mpf.byteOffset - jpeg.byteOffset;
    for (const [index, [offset, size]] of multiPictureImages(mpf).entries()) {
      const start = origin + offset;
      const image = jpeg.subarray(start, Math.min(jpeg.length, start + size));
      if (isJpeg(image)) removed.push(...editJpeg(image, rules, `${label} MPF image ${index + 2}`, true));
    }
  }
  return removed;
}

/**
 * Extended XMP: one packet split across APP1 parts (each with its offset in the whole). The parts
 * are put together, rewritten to the same length, and written back part by part.
 */
function rewriteExtendedXmp(parts: Array<{ offset: number; data: Buffer }>, rules: RemovalRules): Removed {
  parts.sort((a, b) => a.offset - b.offset);
  const whole = Buffer.concat(parts.map((p) => p.data));
  const removed = rewriteXmp(whole, rules);
  if (removed.length === 0) return [];
  let at = 0;
  for (const part of parts) {
    whole.copy(part.data, 0, at, at + part.data.length);
    at += part.data.length;
  }
  return removed.map((name) => `${name} (extended)`);
}
