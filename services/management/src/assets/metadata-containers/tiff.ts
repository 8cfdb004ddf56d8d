import { editIptc, editPhotoshopResources } from "./iptc";
import { MalformedMetadataError, startsWith, type RemovalRules, type Removed } from "./rules";
import { rewriteXmp } from "./xmp";

/**
 * In-place edits of a TIFF structure: a TIFF or DNG file (and the TIFF-based camera RAW files), or
 * the EXIF block embedded in a JPEG, PNG, WebP or HEIC/AVIF file. Every edit keeps every byte where
 * it is: an IFD entry is removed by shifting the entries after it and decrementing the count (its
 * value is zeroed), the GPS IFD is zeroed, and XMP and IPTC values are rewritten to their own length.
 * So every offset in the file stays valid and the coded image data is not touched.
 *
 * Visited: the IFD chain from the header (IFD0, IFD1, the pages of a multi-page TIFF), SubIFDs
 * (DNG's raw and preview images) and Exif IFDs, at any depth.
 */

const TAG = {
  xmp: 700,
  subIfds: 330,
  iptc: 33723,
  photoshop: 34377,
  exifIfd: 34665,
  gpsIfd: 34853,
  makerNote: 37500,
  bodySerialNumber: 42033,
  lensSerialNumber: 42037,
  cameraSerialNumber: 50735,
  dngPrivateData: 50740,
} as const;

const SERIAL_TAGS = new Map<number, string>([
  [TAG.bodySerialNumber, "BodySerialNumber"],
  [TAG.lensSerialNumber, "LensSerialNumber"],
  [TAG.cameraSerialNumber, "CameraSerialNumber"],
]);
/** Where vendors keep serial numbers of their own (DNG keeps a copy of the maker notes). */
const MAKER_NOTE_TAGS = new Map<number, string>([
  [TAG.makerNote, "MakerNote"],
  [TAG.dngPrivateData, "DNGPrivateData"],
]);

/** The name of an entry the rules remove (other than the GPS IFD pointer), if they do. */
function removedName(tag: number, rules: RemovalRules): string | undefined {
  if (rules.serials && SERIAL_TAGS.has(tag)) return SERIAL_TAGS.get(tag);
  if (rules.makerNotes && MAKER_NOTE_TAGS.has(tag)) return MAKER_NOTE_TAGS.get(tag);
  return undefined;
}

/** Bytes per value of each TIFF field type (BigTIFF's 16-18 included). */
const TYPE_SIZE: Record<number, number> = {
  1: 1,
  2: 1,
  3: 2,
  4: 4,
  5: 8,
  6: 1,
  7: 1,
  8: 2,
  9: 4,
  10: 8,
  11: 4,
  12: 8,
  13: 4,
  16: 8,
  17: 8,
  18: 8,
};

/** TIFF magic numbers: classic, BigTIFF, Olympus ORF (two) and Panasonic RW2. */
const CLASSIC_MAGIC = new Set([42, 0x4f52, 0x5352, 0x55]);
const BIG_MAGIC = 43;
/** A file with more IFDs than this is not a photo's metadata: refused rather than walked forever. */
const MAX_IFDS = 512;

interface Entry {
  /** Where the entry starts. */
  at: number;
  tag: number;
  type: number;
  count: number;
  /** Where the value starts (inside the entry when it fits there). */
  valueAt: number;
  /** Bytes of the value (0 for an unknown type). */
  size: number;
  inline: boolean;
}

interface Ifd {
  at: number;
  entries: Entry[];
}

/** A TIFF structure in `tiff` (a view: offsets count from its first byte); edits write through. */
class TiffEditor {
  readonly le: boolean;
  readonly big: boolean;
  private readonly entrySize: number;
  private readonly countSize: number;
  private readonly seen = new Set<number>();
  readonly removed: Removed = [];

  constructor(
    readonly tiff: Buffer,
    private readonly label: string,
  ) {
    if (tiff.length < 8) throw new MalformedMetadataError(label);
    const order = tiff.toString("latin1", 0, 2);
    if (order !== "II" && order !== "MM") throw new MalformedMetadataError(label);
    this.le = order === "II";
    const magic = this.u16(2);
    if (magic === BIG_MAGIC) this.big = true;
    else if (CLASSIC_MAGIC.has(magic)) this.big = false;
    else throw new MalformedMetadataError(label);
    this.entrySize = this.big ? 20 : 12;
    this.countSize = this.big ? 8 : 2;
  }

  u16(at: number): number {
    return this.le ? this.tiff.readUInt16LE(at) : this.tiff.readUInt16BE(at);
  }

  private u32(at: number): number {
    return this.le ? this.tiff.readUInt32LE(at) : this.tiff.readUInt32BE(at);
  }

  /** An offset or count field: 4 bytes, 8 in BigTIFF (beyond 2^53 is not a real file). */
  private word(at: number): number {
    if (!this.big) return this.u32(at);
    const value = this.le ? this.tiff.readBigUInt64LE(at) : this.tiff.readBigUInt64BE(at);
    return value > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(value);
  }

  private writeCount(at: number, count: number): void {
    if (this.big) {
      if (this.le) this.tiff.writeBigUInt64LE(BigInt(count), at);
      else this.tiff.writeBigUInt64BE(BigInt(count), at);
    } else if (this.le) this.tiff.writeUInt16LE(count, at);
    else this.tiff.writeUInt16BE(count, at);
  }

  firstIfd(): number {
    return this.word(this.big ? 8 : 4);
  }

  /** The IFD at `at`, or undefined when it lies outside the block (a dangling pointer). */
  read(at: number): Ifd | undefined {
    if (at < 8 || at + this.countSize > this.tiff.length) return undefined;
    const count = this.big ? this.word(at) : this.u16(at);
    const end = at + this.countSize + count * this.entrySize + (this.big ? 8 : 4);
    if (count > 4096 || end > this.tiff.length) return undefined;
    const entries: Entry[] = [];
    for (let i = 0; i < count; i++) {
      const e = at + this.countSize + i * this.entrySize;
      const type = this.u16(e + 2);
      const n = this.word(e + 4);
      const size = (TYPE_SIZE[type] ?? 0) * n;
      const slot = e + (this.big ? 12 : 8);
      const inline = size <= (this.big ? 8 : 4);
      entries.push({ at: e, tag: this.u16(e), type, count: n, valueAt: inline ? slot : this.word(slot), size, inline });
    }
    return { at, entries };
  }

  nextOf(ifd: Ifd): number {
    return this.word(ifd.at + this.countSize + ifd.entries.length * this.entrySize);
  }

  /** The value's bytes, or undefined when they lie outside the block. */
  value(entry: Entry): Buffer | undefined {
    if (entry.size === 0 || entry.valueAt + entry.size > this.tiff.length) return undefined;
    return this.tiff.subarray(entry.valueAt, entry.valueAt + entry.size);
  }

  /** An entry's first value as a number (SHORT, LONG or LONG8; an IFD pointer), 0 when unreadable. */
  number(entry: Entry): number {
    if (!entry.inline && entry.valueAt + 2 > this.tiff.length) return 0;
    if (entry.type === 3 || entry.type === 8) return this.u16(entry.valueAt);
    if (entry.type === 16 || entry.type === 17) return this.word(entry.valueAt);
    return entry.valueAt + 4 <= this.tiff.length ? this.u32(entry.valueAt) : 0;
  }

  /** Offsets an entry points to (SubIFDs: one or more LONG or IFD values). */
  offsets(entry: Entry): number[] {
    const bytes = this.value(entry);
    if (!bytes) return [];
    const step = TYPE_SIZE[entry.type];
    if (step !== 4 && step !== 8) return [];
    const out: number[] = [];
    for (let at = entry.valueAt; at < entry.valueAt + entry.size; at += step)
      out.push(step === 8 ? this.word(at) : this.u32(at));
    return out;
  }

  /**
   * Removes the entries `drop` picks from `ifd` in place: the kept ones move up, the count and the
   * next-IFD pointer follow them, the freed slots and the removed values are zeroed.
   */
  removeEntries(ifd: Ifd, drop: (entry: Entry) => boolean): Ifd {
    const kept = ifd.entries.filter((e) => !drop(e));
    if (kept.length === ifd.entries.length) return ifd;
    for (const e of ifd.entries) if (!kept.includes(e) && !e.inline) this.value(e)?.fill(0);
    const wordSize = this.big ? 8 : 4;
    const body = ifd.at + this.countSize;
    const oldEnd = body + ifd.entries.length * this.entrySize + wordSize;
    const next = Buffer.from(this.tiff.subarray(oldEnd - wordSize, oldEnd));
    const moved = kept.map((e) => Buffer.from(this.tiff.subarray(e.at, e.at + this.entrySize)));
    this.writeCount(ifd.at, kept.length);
    moved.forEach((bytes, i) => bytes.copy(this.tiff, body + i * this.entrySize));
    const nextAt = body + kept.length * this.entrySize;
    next.copy(this.tiff, nextAt);
    this.tiff.fill(0, nextAt + wordSize, oldEnd);
    return this.read(ifd.at)!;
  }

  /** Zeroes a whole IFD: its entries' values, then the directory itself. */
  private zeroIfd(at: number): void {
    const ifd = this.read(at);
    if (!ifd) return;
    for (const e of ifd.entries) if (!e.inline) this.value(e)?.fill(0);
    this.tiff.fill(0, ifd.at, ifd.at + this.countSize + ifd.entries.length * this.entrySize + (this.big ? 8 : 4));
  }

  /** Walks every IFD reachable from the header and applies `rules` to each. */
  edit(rules: RemovalRules): Removed {
    let at = this.firstIfd();
    while (at !== 0) {
      const next = this.visit(at, rules);
      if (next === undefined) break;
      at = next;
    }
    return this.removed;
  }

  /** The GPS IFD given as the root of a block of its own (CR3's CMT4): zeroed. */
  zeroRootIfd(): Removed {
    const at = this.firstIfd();
    if (this.read(at)?.entries.length) {
      this.zeroIfd(at);
      this.removed.push(`${this.label} GPS IFD`);
    }
    return this.removed;
  }

  /** Applies the rules to one IFD and the IFDs it points to; returns the next IFD of its chain. */
  private visit(at: number, rules: RemovalRules): number | undefined {
    if (this.seen.has(at)) return undefined;
    if (this.seen.size >= MAX_IFDS) throw new MalformedMetadataError(`${this.label} (too many IFDs)`);
    this.seen.add(at);
    let ifd = this.read(at);
    if (!ifd) return undefined;
    if (rules.location && ifd.entries.some((e) => e.tag === TAG.gpsIfd)) {
      for (const e of ifd.entries) if (e.tag === TAG.gpsIfd) for (const gps of this.offsets(e)) this.zeroIfd(gps);
      ifd = this.removeEntries(ifd, (e) => e.tag === TAG.gpsIfd);
      this.removed.push(`${this.label} GPS IFD`);
    }
    if (ifd.entries.some((e) => removedName(e.tag, rules))) {
      for (const e of ifd.entries) {
        const name = removedName(e.tag, rules);
        if (name) this.removed.push(`${this.label} ${name}`);
      }
      ifd = this.removeEntries(ifd, (e) => removedName(e.tag, rules) !== undefined);
    }
    for (const e of ifd.entries) {
      const bytes = e.tag === TAG.xmp || e.tag === TAG.iptc || e.tag === TAG.photoshop ? this.value(e) : undefined;
      if (!bytes) continue;
      if (e.tag === TAG.xmp) this.removed.push(...rewriteXmp(bytes, rules));
      else if (e.tag === TAG.iptc) this.removed.push(...editIptc(bytes, rules));
      else this.removed.push(...editPhotoshopResources(bytes, rules, (t, r) => editExifBlock(t, r, "Photoshop EXIF")));
    }
    for (const e of ifd.entries) {
      if (e.tag !== TAG.subIfds && e.tag !== TAG.exifIfd) continue;
      for (const child of this.offsets(e)) {
        // A SubIFD's own chain (its next pointers) is walked too.
        let sub: number | undefined = child;
        while (sub) sub = this.visit(sub, rules);
      }
    }
    return this.nextOf(ifd);
  }
}

/** Tags that locate an embedded JPEG in a TIFF-based camera RAW file. */
const PREVIEW_TAG = {
  compression: 259,
  stripOffsets: 273,
  stripByteCounts: 279,
  jpegOffset: 513,
  jpegLength: 514,
  photometric: 262,
  /** Panasonic RW2's JpgFromRaw: the JPEG as the value of an IFD0 entry. */
  panasonicJpeg: 46,
} as const;
/** Compression values of a strip coded as JPEG (old-style 6, new-style 7). */
const JPEG_COMPRESSION = new Set([6, 7]);
/** PhotometricInterpretation of sensor data: CFA (a Bayer mosaic) and LinearRaw. */
const SENSOR_PHOTOMETRIC = new Set([32803, 34892]);

/**
 * Every JPEG a TIFF-based camera RAW file embeds, as views of `tiff`: each IFD's
 * JPEGInterchangeFormat/Length pair, its single strip when that strip is JPEG-coded, and RW2's
 * JpgFromRaw entry; over the IFD chain, SubIFDs and the Exif IFD. Read-only; candidates only (a
 * raw image coded as lossless JPEG is among them, and fails to decode as a preview). `sensorData`:
 * some directory holds a CFA or LinearRaw image, which tells a camera's RAW from a TIFF of the
 * same maker's software.
 */
export function embeddedJpegs(tiff: Buffer): { jpegs: Buffer[]; sensorData: boolean } {
  const editor = new TiffEditor(tiff, "RAW");
  const found: Buffer[] = [];
  let sensorData = false;
  const seen = new Set<number>();
  const span = (start: number, length: number) => {
    if (start > 0 && length > 0 && start + 2 < tiff.length && tiff[start] === 0xff && tiff[start + 1] === 0xd8)
      found.push(tiff.subarray(start, Math.min(tiff.length, start + length)));
  };
  const visit = (at: number): void => {
    while (at && !seen.has(at)) {
      if (seen.size >= MAX_IFDS) throw new MalformedMetadataError("RAW (too many IFDs)");
      seen.add(at);
      const ifd = editor.read(at);
      if (!ifd) return;
      const first = (tag: number) => {
        const e = ifd.entries.find((x) => x.tag === tag);
        return e && e.count >= 1 ? editor.number(e) : undefined;
      };
      const photometric = first(PREVIEW_TAG.photometric);
      if (photometric !== undefined && SENSOR_PHOTOMETRIC.has(photometric)) sensorData = true;
      const jpegAt = first(PREVIEW_TAG.jpegOffset);
      const jpegLength = first(PREVIEW_TAG.jpegLength);
      if (jpegAt !== undefined && jpegLength !== undefined) span(jpegAt, jpegLength);
      const strips = ifd.entries.find((e) => e.tag === PREVIEW_TAG.stripOffsets);
      const compression = first(PREVIEW_TAG.compression);
      if (strips?.count === 1 && compression !== undefined && JPEG_COMPRESSION.has(compression))
        span(editor.number(strips), first(PREVIEW_TAG.stripByteCounts) ?? 0);
      const panasonic = ifd.entries.find((e) => e.tag === PREVIEW_TAG.panasonicJpeg && !e.inline);
      if (panasonic) span(panasonic.valueAt, panasonic.size);
      for (const e of ifd.entries)
        if (e.tag === TAG.subIfds || e.tag === TAG.exifIfd) for (const child of editor.offsets(e)) visit(child);
      at = editor.nextOf(ifd);
    }
  };
  visit(editor.firstIfd());
  return { jpegs: found, sensorData };
}

/** Applies `rules` to the TIFF structure in `tiff` in place; `label` names it in what is reported. */
export function editTiff(tiff: Buffer, rules: RemovalRules, label = "EXIF"): Removed {
  return new TiffEditor(tiff, label).edit(rules);
}

/** A block holding a GPS IFD as its root IFD (Canon CR3's CMT4): zeroed when the position goes. */
export function editGpsRootTiff(tiff: Buffer, rules: RemovalRules, label = "EXIF"): Removed {
  return rules.location ? new TiffEditor(tiff, label).zeroRootIfd() : [];
}

/** The "Exif\0\0" prefix an EXIF block may carry before its TIFF header (JPEG's always does). */
export const EXIF_PREFIX = Buffer.from("Exif\0\0", "latin1");

/**
 * An EXIF block embedded in another container (with or without the "Exif\0\0" prefix), edited in
 * place. One that cannot be walked although something must go is zeroed whole: it can be read by
 * nobody then, and what it held is not published.
 */
export function editExifBlock(block: Buffer, rules: RemovalRules, label = "EXIF"): Removed {
  if (!rules.location && !rules.serials && !rules.makerNotes) return [];
  const tiff = startsWith(block, EXIF_PREFIX) ? block.subarray(EXIF_PREFIX.length) : block;
  try {
    return editTiff(tiff, rules, label);
  } catch (err) {
    if (!(err instanceof MalformedMetadataError)) throw err;
    block.fill(0);
    return [`${label} (unreadable, zeroed)`];
  }
}

const MP_ENTRY = 0xb002;

/**
 * The secondary images a JPEG's MPF segment lists (gain maps, depth maps, previews), as
 * [offset, size] pairs; offsets count from the MPF block's TIFF header, as MPF defines them.
 */
export function multiPictureImages(mpf: Buffer): Array<[number, number]> {
  let editor: TiffEditor;
  try {
    editor = new TiffEditor(mpf, "MPF");
  } catch {
    return [];
  }
  const entry = editor.read(editor.firstIfd())?.entries.find((e) => e.tag === MP_ENTRY);
  const bytes = entry && editor.value(entry);
  if (!bytes) return [];
  const images: Array<[number, number]> = [];
  for (let at = 0; at + 16 <= bytes.length; at += 16) {
    const size = editor.le ? bytes.readUInt32LE(at + 4) : bytes.readUInt32BE(at + 4);
    const offset = editor.le ? bytes.readUInt32LE(at + 8) : bytes.readUInt32BE(at + 8);
    // The first image (offset 0) is the file itself.
    if (offset > 0) images.push([offset, size]);
  }
  return images;
}
