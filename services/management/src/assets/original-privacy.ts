import { readFile, rename, rm, writeFile } from "node:fs/promises";
import {
  editMetadata,
  METADATA_CONTAINERS,
  type MetadataContainer,
  type RemovalRules,
  type Removed,
} from "./metadata-containers";

export { MalformedMetadataError, type MetadataContainer } from "./metadata-containers";

/**
 * What of an original's metadata is stored (and so served publicly by the media service's
 * `/original/<id>.<ext>`): ORIGINAL_METADATA.
 * - `private` (default): the location and serial numbers (body, lens, camera, and the vendors'
 *   maker notes that hold their own) are removed; orientation, the colour profile, copyright and the
 *   rest of EXIF, XMP and IPTC are kept.
 * - `keep`: everything but the location is kept.
 * In both, KEEP_GPS=true keeps the location too. The location is the EXIF GPS IFD, XMP's GPS fields
 * (any namespace, any case: exif:GPS*, DJI's drone-dji:GpsLatitude, ...), and the place fields of
 * IPTC (City, Sub-location, Province/State, Country, Country Code, Content Location) and XMP
 * (photoshop:City/State/Country, Iptc4xmpCore:Location/CountryCode, Iptc4xmpExt:LocationShown/
 * LocationCreated). docs/security.md lists the same.
 */
export const ORIGINAL_METADATA_POLICIES = ["private", "keep"] as const;
export type OriginalMetadataPolicy = (typeof ORIGINAL_METADATA_POLICIES)[number];

export interface OriginalPrivacyOptions {
  policy: OriginalMetadataPolicy;
  keepGps: boolean;
}

/** Camera RAW formats by their usual names: their maker notes stay (metadata-containers/index.ts). */
const CAMERA_RAW = new Set(["dng", "cr2", "cr3", "nef", "nrw", "arw", "sr2", "raf", "rw2", "orf", "pef", "srw", "raw"]);

/**
 * The upload's format (contracts' AssetFormat, or a format added beside them) -> the container
 * whose metadata is edited; undefined for a format whose stored bytes carry no such metadata (SVG,
 * stored sanitised).
 */
export function metadataContainerOf(format: string): MetadataContainer | undefined {
  if (format === "avif" || format === "heic" || format === "heif") return "heif";
  if (CAMERA_RAW.has(format)) return "camera-raw";
  return (METADATA_CONTAINERS as readonly string[]).includes(format) ? (format as MetadataContainer) : undefined;
}

const rulesOf = (options: OriginalPrivacyOptions): RemovalRules => ({
  location: !options.keepGps,
  serials: options.policy === "private",
  makerNotes: options.policy === "private",
});

export interface PrivateMetadataRemoval {
  /** The original without its private metadata. */
  bytes: Buffer;
  /** What went, e.g. "JPEG EXIF GPS IFD", "XMP exif:GPSLatitude", "IPTC 2:90 City". */
  removed: Removed;
}

/**
 * The original's bytes without the metadata the policy drops, rewritten losslessly in process
 * (metadata-containers/: only metadata bytes change, the coded image stays byte for byte), or
 * undefined when nothing has to go. `bytes` is not modified. Throws MalformedMetadataError when a
 * metadata block that must be checked cannot be read (the upload is refused rather than stored with
 * what it may hold).
 */
export function withoutPrivateMetadata(
  bytes: Buffer,
  container: MetadataContainer,
  options: OriginalPrivacyOptions,
): PrivateMetadataRemoval | undefined {
  const rules = rulesOf(options);
  if (!rules.location && !rules.serials && !rules.makerNotes) return undefined;
  const result = editMetadata(Buffer.from(bytes), container, rules);
  return result.removed.length > 0 ? result : undefined;
}

/** withoutPrivateMetadata of a spooled file, in place; its new size, or undefined when untouched. */
export async function removePrivateMetadata(
  filePath: string,
  container: MetadataContainer,
  options: OriginalPrivacyOptions,
): Promise<number | undefined> {
  const rules = rulesOf(options);
  if (!rules.location && !rules.serials && !rules.makerNotes) return undefined;
  // The file's own buffer is edited: no copy of a 50 MB upload.
  const { bytes, removed } = editMetadata(await readFile(filePath), container, rules);
  if (removed.length === 0) return undefined;
  const temp = `${filePath}.private`;
  try {
    await writeFile(temp, bytes, { mode: 0o600 });
    await rename(temp, filePath);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
  return bytes.length;
}
