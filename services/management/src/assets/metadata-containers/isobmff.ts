import { MalformedMetadataError, type RemovalRules, type Removed } from "./rules";
import { editExifBlock, editGpsRootTiff, editTiff } from "./tiff";
import { rewriteXmp } from "./xmp";

/**
 * ISO base media files: HEIC, HEIF and AVIF keep their metadata as items of the `meta` box (an
 * `Exif` item, and XMP as a `mime` item of type application/rdf+xml) whose bytes `iloc` locates,
 * in the file or in `idat`; Canon's CR3 keeps TIFF blocks in `moov`'s Canon box (CMT1 IFD0, CMT2
 * Exif IFD, CMT4 the GPS IFD). Each is edited in place at its own length, so `iloc`'s offsets and
 * the coded image stay as they are.
 */

interface Box {
  type: string;
  /** Where the box's payload starts (after its header), and where the box ends. */
  start: number;
  end: number;
}

function* boxes(file: Buffer, from: number, to: number): Generator<Box> {
  let at = from;
  while (at + 8 <= to) {
    let size = file.readUInt32BE(at);
    const type = file.toString("latin1", at + 4, at + 8);
    let header = 8;
    if (size === 1) {
      if (at + 16 > to) return;
      size = Number(file.readBigUInt64BE(at + 8));
      header = 16;
    } else if (size === 0) size = to - at;
    if (type === "uuid") header += 16;
    if (size < header || at + size > to) return;
    yield { type, start: at + header, end: at + size };
    at += size;
  }
}

const child = (file: Buffer, parent: Box, type: string, skip = 0): Box | undefined => {
  for (const box of boxes(file, parent.start + skip, parent.end)) if (box.type === type) return box;
  return undefined;
};

/** Reads an unsigned integer of 0, 4 or 8 bytes. */
function uint(file: Buffer, at: number, size: number): number {
  if (size === 0) return 0;
  if (size === 4) return file.readUInt32BE(at);
  if (size === 8) return Number(file.readBigUInt64BE(at));
  if (size === 2) return file.readUInt16BE(at);
  throw new MalformedMetadataError("iloc");
}

interface Item {
  id: number;
  type: string;
  contentType?: string;
}

function itemInfos(file: Buffer, iinf: Box): Item[] {
  const version = file[iinf.start]!;
  const items: Item[] = [];
  for (const infe of boxes(file, iinf.start + 4 + (version === 0 ? 2 : 4), iinf.end)) {
    if (infe.type !== "infe") continue;
    const v = file[infe.start]!;
    let at = infe.start + 4;
    if (v < 2) {
      const id = file.readUInt16BE(at);
      const nameEnd = file.indexOf(0, at + 4);
      const typeEnd = nameEnd < 0 ? -1 : file.indexOf(0, nameEnd + 1);
      if (typeEnd > 0 && typeEnd < infe.end)
        items.push({ id, type: "mime", contentType: file.toString("latin1", nameEnd + 1, typeEnd) });
      continue;
    }
    const id = v === 2 ? file.readUInt16BE(at) : file.readUInt32BE(at);
    at += (v === 2 ? 2 : 4) + 2;
    const type = file.toString("latin1", at, at + 4);
    const nameEnd = file.indexOf(0, at + 4);
    let contentType: string | undefined;
    if (type === "mime" && nameEnd >= 0 && nameEnd < infe.end) {
      const end = file.indexOf(0, nameEnd + 1);
      contentType = file.toString("latin1", nameEnd + 1, end < 0 || end > infe.end ? infe.end : end);
    }
    items.push({ id, type, contentType });
  }
  return items;
}

/** Each item's extents as [start, end] in the file. */
function itemLocations(file: Buffer, iloc: Box, idat: Box | undefined): Map<number, Array<[number, number]>> {
  const version = file[iloc.start]!;
  let at = iloc.start + 4;
  const offsetSize = file[at]! >> 4;
  const lengthSize = file[at]! & 15;
  const baseSize = file[at + 1]! >> 4;
  const indexSize = version === 1 || version === 2 ? file[at + 1]! & 15 : 0;
  at += 2;
  const count = version < 2 ? file.readUInt16BE(at) : file.readUInt32BE(at);
  at += version < 2 ? 2 : 4;
  const out = new Map<number, Array<[number, number]>>();
  for (let i = 0; i < count && at < iloc.end; i++) {
    const id = version < 2 ? file.readUInt16BE(at) : file.readUInt32BE(at);
    at += version < 2 ? 2 : 4;
    let method = 0;
    if (version === 1 || version === 2) {
      method = file.readUInt16BE(at) & 15;
      at += 2;
    }
    at += 2; // data_reference_index
    const base = uint(file, at, baseSize);
    at += baseSize;
    const extentCount = file.readUInt16BE(at);
    at += 2;
    const extents: Array<[number, number]> = [];
    for (let e = 0; e < extentCount; e++) {
      at += indexSize;
      const offset = uint(file, at, offsetSize);
      at += offsetSize;
      const length = uint(file, at, lengthSize);
      at += lengthSize;
      // Method 1: inside idat; 2 (from another item) is not used for metadata by any writer.
      const origin = method === 0 ? 0 : method === 1 && idat ? idat.start : -1;
      const limit = method === 0 ? file.length : (idat?.end ?? 0);
      const start = origin + base + offset;
      if (origin < 0 || start > limit) continue;
      extents.push([start, length === 0 ? limit : Math.min(limit, start + length)]);
    }
    out.set(id, extents);
  }
  return out;
}

/** Edits an item's bytes (its extents put together when there are several) and writes them back. */
function editItem(file: Buffer, extents: Array<[number, number]>, edit: (bytes: Buffer) => Removed): Removed {
  if (extents.length === 1) return edit(file.subarray(extents[0]![0], extents[0]![1]));
  const whole = Buffer.concat(extents.map(([s, e]) => file.subarray(s, e)));
  const removed = edit(whole);
  let at = 0;
  for (const [s, e] of extents) {
    whole.copy(file, s, at, at + (e - s));
    at += e - s;
  }
  return removed;
}

/** The Exif item: a 4-byte offset to the TIFF header, then the block. */
function editExifItem(item: Buffer, rules: RemovalRules, label: string): Removed {
  if (item.length < 4) return [];
  const skip = item.readUInt32BE(0);
  if (4 + skip > item.length) throw new MalformedMetadataError(`${label} Exif item`);
  return editExifBlock(item.subarray(4 + skip), rules, `${label} EXIF`);
}

const CANON_UUID = "85c0b687820f11e08111f4ce462b6a48";

/** Applies `rules` to the ISO BMFF file in `file` in place. */
export function editIsobmff(file: Buffer, rules: RemovalRules, label = "HEIF"): Removed {
  const removed: Removed = [];
  for (const top of boxes(file, 0, file.length)) {
    if (top.type === "meta") removed.push(...editMeta(file, top, rules, label));
    if (top.type === "moov") removed.push(...editCanonBoxes(file, top, rules));
  }
  return removed;
}

function editMeta(file: Buffer, meta: Box, rules: RemovalRules, label: string): Removed {
  const iinf = child(file, meta, "iinf", 4);
  const iloc = child(file, meta, "iloc", 4);
  if (!iinf || !iloc) return [];
  const locations = itemLocations(file, iloc, child(file, meta, "idat", 4));
  const removed: Removed = [];
  for (const item of itemInfos(file, iinf)) {
    const extents = locations.get(item.id);
    if (!extents?.length) continue;
    if (item.type === "Exif") removed.push(...editItem(file, extents, (b) => editExifItem(b, rules, label)));
    else if (item.type === "mime" && /^application\/rdf\+xml$/i.test(item.contentType ?? ""))
      removed.push(...editItem(file, extents, (b) => rewriteXmp(b, rules)));
  }
  return removed;
}

/** CR3: the TIFF blocks in moov's Canon box. CMT3 (maker notes) is a raw decoder's and stays. */
function editCanonBoxes(file: Buffer, moov: Box, rules: RemovalRules): Removed {
  const removed: Removed = [];
  for (const box of boxes(file, moov.start, moov.end)) {
    if (box.type !== "uuid" || file.toString("hex", box.start - 16, box.start) !== CANON_UUID) continue;
    for (const cmt of boxes(file, box.start, box.end)) {
      const tiff = file.subarray(cmt.start, cmt.end);
      if (cmt.type === "CMT4") removed.push(...editGpsRootTiff(tiff, rules, "CR3 CMT4"));
      else if (cmt.type === "CMT1" || cmt.type === "CMT2") removed.push(...editTiff(tiff, rules, `CR3 ${cmt.type}`));
    }
  }
  return removed;
}

/** The top-level uuid box of a CR3 that holds its PRVW box (a 1620x1080 JPEG on current bodies). */
const CANON_PREVIEW_UUID = "eaf42b5e1c984b88b9fbb7dc406e4d16";

/** The JPEG a PRVW or THMB box carries after its small header (sizes, dimensions), up to the box's end. */
function boxJpeg(file: Buffer, box: Box): Buffer | undefined {
  const start = file.subarray(box.start, Math.min(box.end, box.start + 64)).indexOf(Buffer.from([0xff, 0xd8, 0xff]));
  return start < 0 ? undefined : file.subarray(box.start + start, box.end);
}

export interface Cr3Contents {
  /** PRVW and THMB JPEGs, as views of the file. */
  previews: Buffer[];
  /** CMT1 (IFD0), CMT2 (the Exif IFD as a root IFD) and CMT4 (the GPS IFD as a root IFD), as TIFF blocks. */
  cmt: Partial<Record<"CMT1" | "CMT2" | "CMT4", Buffer>>;
}

/** A Canon CR3's embedded JPEGs and camera tag blocks, read in place. */
export function cr3Contents(file: Buffer): Cr3Contents {
  const contents: Cr3Contents = { previews: [], cmt: {} };
  for (const top of boxes(file, 0, file.length)) {
    if (top.type === "uuid" && file.toString("hex", top.start - 16, top.start) === CANON_PREVIEW_UUID) {
      // 8 bytes of the uuid box's own come before PRVW.
      for (const box of boxes(file, top.start + 8, top.end)) {
        const jpeg = box.type === "PRVW" ? boxJpeg(file, box) : undefined;
        if (jpeg) contents.previews.push(jpeg);
      }
    }
    if (top.type !== "moov") continue;
    for (const box of boxes(file, top.start, top.end)) {
      if (box.type !== "uuid" || file.toString("hex", box.start - 16, box.start) !== CANON_UUID) continue;
      for (const inner of boxes(file, box.start, box.end)) {
        if (inner.type === "THMB") {
          const jpeg = boxJpeg(file, inner);
          if (jpeg) contents.previews.push(jpeg);
        } else if (inner.type === "CMT1" || inner.type === "CMT2" || inner.type === "CMT4") {
          contents.cmt[inner.type] = file.subarray(inner.start, inner.end);
        }
      }
    }
  }
  return contents;
}
