import { UndecodableImageError, UnsupportedImageError } from "@media-platform/contracts";
import { formatTaskRefusal, formatWorkers } from "./format-workers";

/**
 * SVG originals are stored sanitised, and only the sanitised bytes ever reach librsvg (upload
 * metadata, renders) or a browser (`/original/<id>.svg`). What is removed or refused:
 * - `<!ENTITY` declarations anywhere: refused before any parser sees the text (XXE, billion
 *   laughs); no entity can then be defined, and the document type is never written back;
 * - scripts, event handlers, `foreignObject` and everything else outside DOMPurify's SVG profile;
 * - every reference that leaves the document: `href`/`xlink:href` other than `#fragment` or a
 *   raster `data:image/...` URI, `url(...)` other than `url(#fragment)` in attributes, and style
 *   sheets with `@import` or such a `url(...)`.
 *
 * The work runs in a format worker thread (svg-sanitiser.cjs), never on the event loop, and the
 * thread is terminated past SVG_TIMEOUT_MS.
 */

/**
 * Sanitising holds the whole document in jsdom (about 8 KB and 60 µs of CPU per element), and
 * jsdom's parser and DOMPurify spend time quadratic in an element's attributes: the limits below
 * are checked by a streaming tokenizer before any DOM is built (422). Logos and icons are far
 * below all of them.
 */
export const MAX_SVG_BYTES = 5 * 1024 * 1024;
export const MAX_SVG_ELEMENTS = 20_000;
export const MAX_SVG_ATTRIBUTES_PER_ELEMENT = 100;
export const MAX_SVG_ATTRIBUTES = 200_000;
/** One start tag with its attributes (a long path's `d`, an embedded raster image), in characters. */
export const MAX_SVG_TAG_CHARS = 1024 * 1024;
/** A document within the limits sanitises in well under a second. */
const SVG_TIMEOUT_MS = 20_000;

const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/**
 * True when the bytes are markup (after an optional UTF-8 byte order mark and white space, the
 * first character is `<`): no raster format starts so, and such a file is checked as SVG here
 * before sharp (librsvg) reads any of it.
 */
export function looksLikeSvg(head: Buffer): boolean {
  let i = head.subarray(0, 3).equals(UTF8_BOM) ? 3 : 0;
  while (i < head.length && (head[i] === 0x20 || head[i] === 0x09 || head[i] === 0x0a || head[i] === 0x0d)) i++;
  return head[i] === 0x3c;
}

/** gzip's magic number: a compressed SVG (SVGZ) would reach librsvg unsanitised, so it is refused. */
export const isGzip = (head: Buffer): boolean => head[0] === 0x1f && head[1] === 0x8b;

type SanitiseOutput = { svg: Uint8Array } | { error: "unsupported" | "undecodable"; message: string };

/**
 * The sanitised SVG of an upload's bytes (UTF-8, the root `<svg>` element only: no XML
 * declaration, document type or processing instruction). Rejects with UnsupportedImageError
 * (415) for markup that is not an SVG or declares entities, UndecodableImageError (422) for text
 * that is not well-formed UTF-8 XML, is above one of the limits above, or takes longer than
 * SVG_TIMEOUT_MS.
 */
export async function sanitiseSvg(bytes: Buffer): Promise<Buffer> {
  if (bytes.length > MAX_SVG_BYTES) {
    throw new UndecodableImageError(`An SVG may be at most ${MAX_SVG_BYTES} bytes (this one is ${bytes.length})`);
  }
  const limits = {
    maxElements: MAX_SVG_ELEMENTS,
    maxAttributesPerElement: MAX_SVG_ATTRIBUTES_PER_ELEMENT,
    maxAttributes: MAX_SVG_ATTRIBUTES,
    maxTagChars: MAX_SVG_TAG_CHARS,
  };
  const output = await formatWorkers()
    .run<SanitiseOutput>("svg", { bytes, limits }, SVG_TIMEOUT_MS)
    .catch((err: unknown) => formatTaskRefusal(err, (seconds) => `Sanitising the SVG took longer than ${seconds} s`));
  if ("error" in output) {
    throw output.error === "unsupported"
      ? new UnsupportedImageError(output.message)
      : new UndecodableImageError(output.message);
  }
  return Buffer.from(output.svg.buffer, output.svg.byteOffset, output.svg.byteLength);
}
