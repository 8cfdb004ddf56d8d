import { startsWith, type RemovalRules, type Removed } from "./rules";
import { rewriteXmp } from "./xmp";

/**
 * A GIF's XMP application extension ("XMP DataXMP"), rewritten in place at its own length. Its
 * packet is stored raw, followed by a 258-byte "magic trailer" that leads a decoder reading the
 * packet's bytes as sub-block lengths to the block terminator whatever those bytes are.
 */

const XMP_APPLICATION = Buffer.from("\x0bXMP DataXMP", "latin1");
const MAGIC_TRAILER_START = Buffer.from([0x01, 0xff, 0xfe, 0xfd]);

export const isGif = (bytes: Buffer): boolean => /^GIF8[79]a$/.test(bytes.toString("latin1", 0, 6));

/** Skips a chain of sub-blocks from `at`; where the chain ends (after its terminator). */
function skipSubBlocks(gif: Buffer, at: number): number {
  while (at < gif.length && gif[at] !== 0) at += gif[at]! + 1;
  return at + 1;
}

/** Applies `rules` to the GIF in `gif` in place. */
export function editGif(gif: Buffer, rules: RemovalRules): Removed {
  if (!isGif(gif) || gif.length < 13) return [];
  const removed: Removed = [];
  const packed = gif[10]!;
  let at = 13 + (packed & 0x80 ? 3 << ((packed & 7) + 1) : 0);
  while (at < gif.length) {
    const introducer = gif[at]!;
    if (introducer === 0x3b) break;
    if (introducer === 0x21) {
      const label = gif[at + 1];
      const body = at + 2;
      if (label === 0xff && startsWith(gif.subarray(body), XMP_APPLICATION)) {
        const start = body + XMP_APPLICATION.length;
        const trailer = gif.indexOf(MAGIC_TRAILER_START, start);
        if (trailer > start) {
          removed.push(...rewriteXmp(gif.subarray(start, trailer), rules));
          at = trailer + 258;
          continue;
        }
      }
      at = skipSubBlocks(gif, body);
    } else if (introducer === 0x2c) {
      const flags = gif[at + 9] ?? 0;
      at += 10 + (flags & 0x80 ? 3 << ((flags & 7) + 1) : 0) + 1;
      at = skipSubBlocks(gif, at);
    } else break;
  }
  return removed;
}
