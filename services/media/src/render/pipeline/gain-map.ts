import type sharp from "sharp";

/** The APP1 segment of the primary image's XMP (Ultra HDR and Adobe `hdrgm` gain maps). */
const XMP_NAMESPACE = Buffer.from("http://ns.adobe.com/xap/1.0/\0");
const XMP_GAIN_MAP = Buffer.from("hdrgm:Version");
/** The APP2 segment of an ISO 21496-1 gain map. */
const ISO_GAIN_MAP = Buffer.from("urn:iso:std:iso:ts:21496:-1");
const APP1 = 0xe1;
const APP2 = 0xe2;
/** Start of scan: the metadata segments all come before it. */
const SOS = 0xda;

/**
 * Whether a JPEG original announces an HDR gain map; only those take the gain-map path. Reads
 * the marker segments before the first scan and looks only into the XMP and APP2 ones, so a MISS
 * does not search a camera's large EXIF thumbnail. A stream that is not well formed announces none.
 */
export function carriesGainMap(original: Buffer): boolean {
  if (original.length < 4 || original[0] !== 0xff || original[1] !== 0xd8) return false;
  let at = 2;
  while (at + 4 <= original.length) {
    if (original[at] !== 0xff) return false;
    const marker = original[at + 1]!;
    // Fill bytes before a marker.
    if (marker === 0xff) {
      at++;
      continue;
    }
    if (marker === SOS) return false;
    const length = original.readUInt16BE(at + 2);
    const body = original.subarray(at + 4, Math.min(original.length, at + 2 + length));
    if (marker === APP1 && startsWith(body, XMP_NAMESPACE) && body.includes(XMP_GAIN_MAP)) return true;
    if (marker === APP2 && startsWith(body, ISO_GAIN_MAP)) return true;
    at += 2 + length;
  }
  return false;
}

const startsWith = (body: Buffer, prefix: Buffer): boolean =>
  body.length >= prefix.length && body.compare(prefix, 0, prefix.length, 0, prefix.length) === 0;

/**
 * The JPEG encode of `image` with the original's gain map, transformed with the image (sharp's
 * keepGainMap: JPEG in and out only). The types of sharp 0.35 do not declare it yet.
 */
export function keepingGainMap(image: sharp.Sharp): sharp.Sharp {
  return (image.clone() as sharp.Sharp & { keepGainMap(): sharp.Sharp }).keepGainMap();
}
