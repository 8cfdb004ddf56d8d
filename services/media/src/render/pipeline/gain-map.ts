import type sharp from "sharp";

/**
 * How far into a JPEG its gain-map signature is looked for: the primary image's XMP (Ultra HDR,
 * Adobe `hdrgm`) and the ISO 21496-1 APP2 segment both come before the first scan.
 */
const SIGNATURE_WINDOW = 128 * 1024;
const SIGNATURES = [Buffer.from("hdrgm:Version"), Buffer.from("urn:iso:std:iso:ts:21496:-1")];

/** Whether a JPEG original announces an HDR gain map; only those take the gain-map path. */
export function carriesGainMap(original: Buffer): boolean {
  if (original.length < 3 || original[0] !== 0xff || original[1] !== 0xd8) return false;
  const head = original.subarray(0, SIGNATURE_WINDOW);
  return SIGNATURES.some((signature) => head.includes(signature));
}

/**
 * The JPEG encode of `image` with the original's gain map, transformed with the image (sharp's
 * keepGainMap: JPEG in and out only). The types of sharp 0.35 do not declare it yet.
 */
export function keepingGainMap(image: sharp.Sharp): sharp.Sharp {
  return (image.clone() as sharp.Sharp & { keepGainMap(): sharp.Sharp }).keepGainMap();
}
