import { type RemovalRules, type Removed } from "./rules";
import { rewriteXmp } from "./xmp";

/**
 * IPTC-IIM (JPEG APP13 and TIFF's Photoshop resources, TIFF tag 33723, PNG raw profiles) edited in
 * place: the kept datasets move up and the freed tail is zeroed, so the block keeps its length
 * (readers stop at the first byte that does not open a dataset, as they do at the usual padding).
 */

/** Application record datasets that say where the photo was taken or what place it shows. */
const LOCATION_DATASETS = new Map<number, string>([
  [26, "Content Location Code"],
  [27, "Content Location Name"],
  [90, "City"],
  [92, "Sub-location"],
  [95, "Province/State"],
  [100, "Country Code"],
  [101, "Country"],
]);
const TAG_MARKER = 0x1c;
const APPLICATION_RECORD = 2;

/** Removes the location datasets from an IIM block in place. */
export function editIptc(block: Buffer, rules: RemovalRules): Removed {
  if (!rules.location) return [];
  const removed: Removed = [];
  const kept: Array<[number, number]> = [];
  let at = 0;
  while (at + 5 <= block.length && block[at] === TAG_MARKER) {
    const record = block[at + 1]!;
    const dataset = block[at + 2]!;
    let size = block.readUInt16BE(at + 3);
    let header = 5;
    if (size & 0x8000) {
      // Extended dataset: the low 15 bits give the length of the length field.
      const lengthBytes = size & 0x7fff;
      if (lengthBytes > 4 || at + 5 + lengthBytes > block.length) break;
      size = block.readUIntBE(at + 5, lengthBytes || 1);
      header += lengthBytes;
    }
    const end = Math.min(block.length, at + header + size);
    if (record === APPLICATION_RECORD && LOCATION_DATASETS.has(dataset))
      removed.push(`IPTC ${record}:${dataset} ${LOCATION_DATASETS.get(dataset)}`);
    else kept.push([at, end]);
    at = end;
  }
  if (removed.length === 0) return [];
  const compacted = Buffer.concat(kept.map(([start, end]) => block.subarray(start, end)));
  compacted.copy(block, 0);
  block.fill(0, compacted.length, at);
  return removed;
}

const RESOURCE_SIGNATURE = "8BIM";
const RESOURCE = { iptc: 0x0404, exif1: 0x0422, exif3: 0x0423, xmp: 0x0424 } as const;

/** An editor of an embedded EXIF block (tiff.ts), passed in so the two files do not import each other. */
export type ExifEditor = (tiff: Buffer, rules: RemovalRules) => Removed;

/**
 * Photoshop image resources (JPEG APP13 "Photoshop 3.0", TIFF tag 34377): the IPTC resource edited
 * as above, the XMP resource rewritten to its length, and EXIF resources through `exif` when given.
 */
export function editPhotoshopResources(resources: Buffer, rules: RemovalRules, exif?: ExifEditor): Removed {
  const removed: Removed = [];
  let at = 0;
  while (at + 12 <= resources.length && resources.toString("latin1", at, at + 4) === RESOURCE_SIGNATURE) {
    const id = resources.readUInt16BE(at + 4);
    const nameLength = resources[at + 6]!;
    // The Pascal name, padded with its length byte to an even length.
    const nameEnd = at + 6 + ((nameLength + 2) & ~1);
    if (nameEnd + 4 > resources.length) break;
    const size = resources.readUInt32BE(nameEnd);
    const data = resources.subarray(nameEnd + 4, Math.min(resources.length, nameEnd + 4 + size));
    if (id === RESOURCE.iptc) removed.push(...editIptc(data, rules));
    else if (id === RESOURCE.xmp) removed.push(...rewriteXmp(data, rules));
    else if ((id === RESOURCE.exif1 || id === RESOURCE.exif3) && exif) removed.push(...exif(data, rules));
    at = nameEnd + 4 + size + (size % 2);
  }
  return removed;
}
