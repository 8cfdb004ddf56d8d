import { SaxesParser, type SaxesAttributeNS, type SaxesTagNS } from "saxes";
import { MalformedMetadataError, type RemovalRules, type Removed } from "./rules";

/**
 * XMP packets edited in place: the packet is parsed as XML (saxes, with namespaces), and each
 * property the rules name, an attribute of an rdf:Description or an element with whatever structure
 * it holds, is overwritten with spaces. Whitespace is what XML allows there, so the packet stays
 * well formed, at its own length, every other byte as it was; the containers' lengths and offsets
 * never change.
 *
 * Names are compared without case: writers spell the same field GPSLatitude and GpsLatitude.
 */

const NS = {
  photoshop: "http://ns.adobe.com/photoshop/1.0/",
  iptcCore: "http://iptc.org/std/Iptc4xmpCore/1.0/xmlns/",
  iptcExt: "http://iptc.org/std/Iptc4xmpExt/2008-02-29/",
  dji: "http://www.dji.com/drone-dji/1.0/",
  rdf: "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
  xmlns: "http://www.w3.org/2000/xmlns/",
} as const;

/** Location fields by namespace (lower-case local names): where the photo was taken, or shows. */
const LOCATION_FIELDS = new Map<string, Set<string>>([
  [NS.photoshop, new Set(["city", "state", "country"])],
  [NS.iptcCore, new Set(["location", "countrycode"])],
  [NS.iptcExt, new Set(["locationshown", "locationcreated"])],
  // DJI drones: the take-off-relative altitude says nothing of the place; the absolute one does.
  [NS.dji, new Set(["absolutealtitude"])],
]);

/** A property is the position: exif:GPS*, DJI's drone-dji:GpsLatitude, any namespace's Latitude. */
const isPosition = (local: string): boolean => /^gps/i.test(local) || /^(latitude|longitude|altitude)$/i.test(local);
const isSerial = (local: string): boolean => /serialnumber$/i.test(local);

/** Cheap test on the raw bytes before any parsing: none of these words, nothing to remove. */
const CANDIDATE = /gps|latitude|longitude|altitude|serialnumber|city|state|country|location/i;

function shouldRemove(namespace: string | null, local: string | null, rules: RemovalRules): boolean {
  if (!local || namespace === NS.rdf || namespace === NS.xmlns) return false;
  if (rules.location && (isPosition(local) || LOCATION_FIELDS.get(namespace ?? "")?.has(local.toLowerCase())))
    return true;
  return rules.serials && isSerial(local);
}

type Encoding = "utf8" | "utf16le" | "utf16be";

function encodingOf(packet: Buffer): Encoding {
  if (packet[0] === 0xfe && packet[1] === 0xff) return "utf16be";
  if (packet[0] === 0xff && packet[1] === 0xfe) return "utf16le";
  if (packet.length >= 2 && packet[0] === 0 && packet[1] !== 0) return "utf16be";
  if (packet.length >= 2 && packet[0] !== 0 && packet[1] === 0) return "utf16le";
  return "utf8";
}

function decode(packet: Buffer, encoding: Encoding): string {
  if (encoding === "utf8") return packet.toString("utf8");
  const le = encoding === "utf16le" ? packet : Buffer.from(packet).swap16();
  return le.toString("utf16le");
}

/** Removes what `rules` name from the XMP packet in `packet`, in place; what was removed. */
export function rewriteXmp(packet: Buffer, rules: RemovalRules): Removed {
  if (!rules.location && !rules.serials) return [];
  const encoding = encodingOf(packet);
  // UTF-16 is decoded first: its letters are not adjacent bytes.
  if (encoding === "utf8" && !CANDIDATE.test(packet.toString("latin1"))) return [];
  const text = decode(packet, encoding);
  if (!CANDIDATE.test(text)) return [];
  // A byte order mark is not the parser's: the positions it reports count from after it.
  const bom = text.startsWith("\uFEFF") ? 1 : 0;
  const found = propertiesToRemove(text.slice(bom, endOfContent(text)), rules);
  const ranges = found.ranges.map(([start, end]) => [start + bom, end + bom] as const);
  const removed = found.removed;
  if (ranges.length === 0) return [];
  if (encoding === "utf8") {
    // Character positions to byte offsets, in one pass over the ranges in order.
    let chars = 0;
    let bytes = 0;
    const byteAt = (position: number): number => {
      bytes += Buffer.byteLength(text.slice(chars, position), "utf8");
      chars = position;
      return bytes;
    };
    for (const [start, end] of ranges) packet.fill(0x20, byteAt(start), byteAt(end));
  } else {
    const space = encoding === "utf16le" ? Buffer.from([0x20, 0]) : Buffer.from([0, 0x20]);
    for (const [start, end] of ranges) packet.fill(space, start * 2, end * 2);
  }
  return removed;
}

/** Where the text ends without its trailing padding (spaces, newlines, NULs). */
function endOfContent(text: string): number {
  let end = text.length;
  while (end > 0 && /[\0\s]/.test(text[end - 1]!)) end--;
  return end;
}

/**
 * The character ranges of the properties to remove, in document order and not nested. An
 * attribute's range runs from the end of what precedes it in its tag (the whitespace before it
 * included); an element's from its "<" to the end of its closing tag.
 */
function propertiesToRemove(xml: string, rules: RemovalRules): { ranges: Array<[number, number]>; removed: Removed } {
  const ranges: Array<[number, number]> = [];
  const removed: Removed = [];
  const parser = new SaxesParser({ xmlns: true, position: true });
  /** Of the tag being opened: where it starts, and each attribute's range by name. */
  let tagStart = 0;
  let previousEnd = 0;
  let attributeRanges = new Map<string, [number, number]>();
  /** Depth inside an element being removed (0: not inside one); the removed element's start. */
  let removingDepth = 0;
  let removedStart = 0;
  parser.on("opentagstart", (tag) => {
    tagStart = xml.lastIndexOf("<", parser.position - 1);
    previousEnd = tagStart + 1 + tag.name.length;
    attributeRanges = new Map();
  });
  parser.on("attribute", (attr) => {
    attributeRanges.set(attr.name, [previousEnd, parser.position]);
    previousEnd = parser.position;
  });
  parser.on("opentag", (tag: SaxesTagNS) => {
    if (removingDepth > 0) {
      removingDepth++;
      return;
    }
    if (shouldRemove(tag.uri, tag.local, rules)) {
      removed.push(`XMP ${tag.name}`);
      removingDepth = 1;
      removedStart = tagStart;
      return;
    }
    for (const attr of Object.values(tag.attributes) as SaxesAttributeNS[]) {
      const range = attributeRanges.get(attr.name);
      if (range && shouldRemove(attr.uri, attr.local, rules)) {
        removed.push(`XMP ${attr.name}`);
        ranges.push(range);
      }
    }
  });
  parser.on("closetag", () => {
    if (removingDepth > 0 && --removingDepth === 0) ranges.push([removedStart, parser.position]);
  });
  parser.on("error", (err) => {
    throw new MalformedMetadataError(`XMP (${err.message})`);
  });
  parser.write(xml).close();
  return { ranges, removed };
}
