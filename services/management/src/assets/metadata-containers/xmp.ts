import { DOMParser, XMLSerializer, type Attr, type Element } from "@xmldom/xmldom";
import { MalformedMetadataError, type RemovalRules, type Removed } from "./rules";

/**
 * XMP packets rewritten in place to their own length: the packet is parsed as XML, the properties
 * the rules name are removed (as attributes of an rdf:Description or as elements, with whatever
 * structure they hold), and the serialisation is padded with spaces before the packet's closing
 * `<?xpacket end?>`, where XMP keeps its padding. The containers' lengths and offsets never change.
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

function encode(text: string, encoding: Encoding): Buffer {
  if (encoding === "utf8") return Buffer.from(text, "utf8");
  const le = Buffer.from(text, "utf16le");
  return encoding === "utf16le" ? le : le.swap16();
}

/** An empty packet, for the rare serialisation that came out longer than the original. */
const EMPTY_PACKET = '<?xpacket begin="\uFEFF" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/"/>';
const PACKET_END = /<\?xpacket\s+end=/;

/** Removes what `rules` name from the XMP packet in `packet`, in place; what was removed. */
export function rewriteXmp(packet: Buffer, rules: RemovalRules): Removed {
  if (!rules.location && !rules.serials) return [];
  const encoding = encodingOf(packet);
  // The whole text still decides when the packet is UTF-16 (its letters are not adjacent bytes).
  if (encoding === "utf8" && !CANDIDATE.test(packet.toString("latin1"))) return [];
  const text = decode(packet, encoding);
  if (!CANDIDATE.test(text)) return [];
  const trailing = /\0*$/.exec(text)![0].length;
  const bom = text.startsWith("\uFEFF") ? "\uFEFF" : "";
  let document;
  try {
    document = new DOMParser({
      locator: false,
      // The bytes as they are: a CRLF stays a CRLF.
      normalizeLineEndings: (source) => source,
      onError: (level, message) => {
        if (level !== "warning") throw new MalformedMetadataError(`XMP (${message})`);
      },
    }).parseFromString(text.slice(bom.length, text.length - trailing), "text/xml");
  } catch (err) {
    throw err instanceof MalformedMetadataError ? err : new MalformedMetadataError("XMP");
  }
  const removed: Removed = [];
  const visit = (element: Element): void => {
    for (const attr of Array.from(element.attributes) as Attr[]) {
      if (shouldRemove(attr.namespaceURI, attr.localName, rules)) {
        removed.push(`XMP ${attr.name}`);
        element.removeAttributeNode(attr);
      }
    }
    for (const child of Array.from(element.childNodes)) {
      if (child.nodeType !== child.ELEMENT_NODE) continue;
      const el = child as Element;
      if (shouldRemove(el.namespaceURI, el.localName, rules)) {
        removed.push(`XMP ${el.tagName}`);
        element.removeChild(el);
      } else visit(el);
    }
  };
  if (document.documentElement) visit(document.documentElement);
  if (removed.length === 0) return [];
  const serialised = bom + new XMLSerializer().serializeToString(document);
  writePadded(packet, serialised, encoding, trailing);
  return removed;
}

/** Writes `xml` over `packet`, spaces before the closing processing instruction filling the rest. */
function writePadded(packet: Buffer, xml: string, encoding: Encoding, trailingNuls: number): void {
  const unit = encoding === "utf8" ? 1 : 2;
  const room = packet.length - trailingNuls * unit;
  let candidate = xml;
  if (encode(candidate, encoding).length > room) {
    const end = PACKET_END.exec(xml);
    candidate = end ? `${EMPTY_PACKET}${xml.slice(end.index)}` : EMPTY_PACKET.replace(/^<\?xpacket[^>]*>/, "");
    if (encode(candidate, encoding).length > room) throw new MalformedMetadataError("XMP (no room to rewrite)");
  }
  const spare = (room - encode(candidate, encoding).length) / unit;
  const end = PACKET_END.exec(candidate);
  const at = end ? end.index : candidate.length;
  const padded = `${candidate.slice(0, at)}${" ".repeat(spare)}${candidate.slice(at)}`;
  encode(padded, encoding).copy(packet, 0);
}
