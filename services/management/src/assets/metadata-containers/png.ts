import zlib from "node:zlib";
import { editIptc, editPhotoshopResources } from "./iptc";
import { MalformedMetadataError, startsWith, type RemovalRules, type Removed } from "./rules";
import { editExifBlock } from "./tiff";
import { rewriteXmp } from "./xmp";

/**
 * A PNG's metadata chunks: eXIf, the XMP packet (iTXt "XML:com.adobe.xmp", compressed or not), and
 * the text chunks ImageMagick and exiv2 write ("Raw profile type exif|APP1|iptc|8bim|xmp": the block
 * as hexadecimal in a tEXt, zTXt or iTXt chunk). A chunk edited in place gets its CRC again; PNG
 * holds no offsets, so a compressed one may change its length (the file is then put together anew,
 * its image chunks as they were).
 */

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const XMP_KEYWORD = "XML:com.adobe.xmp";
const RAW_PROFILE = /^Raw profile type (exif|app1|iptc|8bim|xmp)$/i;

export const isPng = (bytes: Buffer): boolean => startsWith(bytes, SIGNATURE);

interface Chunk {
  type: string;
  data: Buffer;
  /** The chunk's bytes as they came (length, type, data, CRC), when unchanged. */
  raw?: Buffer;
}

/**
 * Applies `rules` to the PNG: in place when every edited chunk keeps its length (its CRC is
 * rewritten), else as a new file. Undefined when nothing was removed.
 */
export function editPng(png: Buffer, rules: RemovalRules): { bytes: Buffer; removed: Removed } | undefined {
  const chunks: Chunk[] = [];
  const removed: Removed = [];
  let resized = false;
  let at = SIGNATURE.length;
  while (at + 12 <= png.length) {
    const length = png.readUInt32BE(at);
    const type = png.toString("latin1", at + 4, at + 8);
    const end = at + 12 + length;
    if (end > png.length) break;
    const data = png.subarray(at + 8, at + 8 + length);
    const edit = editChunk(type, data, rules);
    if (edit) {
      removed.push(...edit.removed);
      if (edit.data === data) png.writeUInt32BE(zlib.crc32(png.subarray(at + 4, at + 8 + length)), at + 8 + length);
      else resized = true;
    }
    chunks.push(edit && edit.data !== data ? { type, data: edit.data } : { type, data, raw: png.subarray(at, end) });
    at = end;
    if (type === "IEND") break;
  }
  if (removed.length === 0) return undefined;
  if (!resized) return { bytes: png, removed };
  const out = [png.subarray(0, SIGNATURE.length)];
  for (const chunk of chunks) out.push(chunk.raw ?? encodeChunk(chunk.type, chunk.data));
  // Whatever followed IEND stays.
  out.push(png.subarray(at));
  return { bytes: Buffer.concat(out), removed };
}

/** A chunk's bytes: length, type, data and CRC. */
export function encodeChunk(type: string, data: Buffer): Buffer {
  const chunk = Buffer.alloc(12 + data.length);
  chunk.writeUInt32BE(data.length, 0);
  chunk.write(type, 4, "latin1");
  data.copy(chunk, 8);
  chunk.writeUInt32BE(zlib.crc32(chunk.subarray(4, 8 + data.length)), 8 + data.length);
  return chunk;
}

/**
 * The chunk's data when something was removed from it: `data` itself, edited in place, or new data
 * (a compressed text chunk, compressed again).
 */
function editChunk(type: string, data: Buffer, rules: RemovalRules): { data: Buffer; removed: Removed } | undefined {
  if (type === "eXIf") {
    const removed = editExifBlock(data, rules, "PNG eXIf");
    return removed.length ? { data, removed } : undefined;
  }
  if (type !== "tEXt" && type !== "zTXt" && type !== "iTXt") return undefined;
  const text = textChunk(type, data);
  if (!text) return undefined;
  const isXmp = text.keyword === XMP_KEYWORD;
  const profile = RAW_PROFILE.exec(text.keyword)?.[1]?.toLowerCase();
  if (!isXmp && !profile) return undefined;
  let value: Buffer;
  try {
    value = text.compressed ? zlib.inflateSync(text.value) : text.value;
  } catch {
    throw new MalformedMetadataError(`PNG ${type} "${text.keyword}"`);
  }
  const removed = isXmp ? rewriteXmp(value, rules) : editRawProfile(value, profile!, rules);
  if (removed.length === 0) return undefined;
  if (!text.compressed) return { data, removed };
  return { data: Buffer.concat([data.subarray(0, text.valueAt), zlib.deflateSync(value)]), removed };
}

/** A text chunk's keyword and value (and where the value starts in the chunk). */
function textChunk(
  type: string,
  data: Buffer,
): { keyword: string; value: Buffer; valueAt: number; compressed: boolean } | undefined {
  const nul = data.indexOf(0);
  if (nul < 1) return undefined;
  const keyword = data.toString("latin1", 0, nul);
  if (type === "tEXt") return { keyword, value: data.subarray(nul + 1), valueAt: nul + 1, compressed: false };
  if (type === "zTXt") return { keyword, value: data.subarray(nul + 2), valueAt: nul + 2, compressed: true };
  // iTXt: compression flag and method, then language tag and translated keyword, each NUL-ended.
  const compressed = data[nul + 1] === 1;
  const language = data.indexOf(0, nul + 3);
  const translated = language < 0 ? -1 : data.indexOf(0, language + 1);
  if (translated < 0) return undefined;
  return { keyword, value: data.subarray(translated + 1), valueAt: translated + 1, compressed };
}

/**
 * A raw profile: "\n<name>\n<length>\n" then the block in hexadecimal over several lines. The block
 * is decoded, edited, and its digits written back where they were (its length does not change).
 */
function editRawProfile(text: Buffer, profile: string, rules: RemovalRules): Removed {
  const header = /^\s*\S+\s+\d+\s/.exec(text.toString("latin1"));
  if (!header) return [];
  const digits: number[] = [];
  for (let i = header[0].length; i < text.length; i++) if (isHex(text[i]!)) digits.push(i);
  const block = Buffer.alloc(digits.length >> 1);
  for (let i = 0; i < block.length; i++)
    block[i] = parseInt(String.fromCharCode(text[digits[2 * i]!]!, text[digits[2 * i + 1]!]!), 16);
  let removed: Removed;
  if (profile === "exif" || profile === "app1") removed = editExifBlock(block, rules, "PNG raw profile EXIF");
  else if (profile === "xmp") removed = rewriteXmp(block, rules);
  else if (block[0] === 0x1c) removed = editIptc(block, rules);
  else removed = editPhotoshopResources(block, rules);
  if (removed.length === 0) return [];
  const hex = block.toString("hex");
  for (let i = 0; i < hex.length; i++) text[digits[i]!] = hex.charCodeAt(i);
  return removed;
}

const isHex = (c: number): boolean => (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);
