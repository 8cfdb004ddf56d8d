/**
 * What a metadata edit removes, decided once from the privacy policy (original-privacy.ts) and
 * handed to every container's walker.
 */
export interface RemovalRules {
  /** The position: EXIF GPS IFD, XMP GPS/DJI position fields, and the IPTC/XMP location fields. */
  location: boolean;
  /** Serial numbers: EXIF BodySerialNumber, LensSerialNumber, CameraSerialNumber, XMP *SerialNumber. */
  serials: boolean;
  /**
   * The vendors' maker notes (EXIF MakerNote, DNG's copy of them), where cameras keep serial
   * numbers of their own. Never for camera RAW files: their decoders need them.
   */
  makerNotes: boolean;
}

/** A metadata block that cannot be walked although it must be checked: the original is refused. */
export class MalformedMetadataError extends Error {
  constructor(what: string) {
    super(`malformed ${what}`);
    this.name = "MalformedMetadataError";
  }
}

/** Names of what an edit removed, e.g. "EXIF GPS IFD", "XMP exif:GPSLatitude", "IPTC 2:90". */
export type Removed = string[];

/** `body` starts with `prefix`. */
export const startsWith = (body: Buffer, prefix: Buffer): boolean =>
  body.length >= prefix.length && body.compare(prefix, 0, prefix.length, 0, prefix.length) === 0;
