import createPurify, { type DOMPurify as Purifier } from "dompurify";
import { nativeRequire } from "../native-require";
import { UndecodableImageError, UnsupportedImageError } from "@media-platform/contracts";

/**
 * SVG originals are stored sanitised, and only the sanitised bytes ever reach librsvg (upload
 * metadata, renders) or a browser (`/original/<id>.svg`). What is removed or refused:
 * - `<!ENTITY` declarations anywhere: refused before any parser sees the text (XXE, billion
 *   laughs); no entity can then be defined, and the document type is never written back;
 * - scripts, event handlers, `foreignObject` and everything else outside DOMPurify's SVG profile;
 * - every reference that leaves the document: `href`/`xlink:href` other than `#fragment` or a
 *   raster `data:image/...` URI, `url(...)` other than `url(#fragment)` in attributes, and style
 *   sheets with `@import` or such a `url(...)`.
 */

const SVG_NAMESPACE = "http://www.w3.org/2000/svg";

/**
 * Sanitising holds the whole document in jsdom (about 8 KB and 60 µs of CPU per element, on
 * management's event loop): larger SVGs are refused before parsing (422). Logos and icons are
 * far below both.
 */
export const MAX_SVG_BYTES = 5 * 1024 * 1024;
export const MAX_SVG_ELEMENTS = 20_000;

/** Raster images an SVG may embed (a nested SVG could carry what is removed here). */
const EMBEDDED_IMAGE = /^data:image\/(png|jpeg|gif|webp|avif)[;,]/i;
/** A CSS `url(` whose target is not a fragment of this document. */
const EXTERNAL_URL = /url\(\s*(?!['"]?\s*#)/i;

/** What is used of jsdom's DOM (the project compiles without the DOM library's types). */
interface SvgAttribute {
  localName: string;
  value: string;
}
interface SvgElement {
  localName: string;
  namespaceURI: string | null;
  textContent: string | null;
  attributes: ArrayLike<SvgAttribute>;
  firstElementChild: SvgElement | null;
  nextElementSibling: SvgElement | null;
  remove(): void;
  removeAttributeNode(attribute: SvgAttribute): void;
}
interface SvgWindow {
  DOMParser: new () => { parseFromString(text: string, type: string): { documentElement: SvgElement } };
  XMLSerializer: new () => { serializeToString(node: SvgElement): string };
}

interface Sanitiser {
  window: SvgWindow;
  purify: Purifier;
}
let sanitiser: Sanitiser | undefined;

/** jsdom (about half a second to load) loads on the first SVG upload: other uploads never pay for it. */
function loadSanitiser(): Sanitiser {
  if (sanitiser) return sanitiser;
  // jsdom depends on ESM-only packages: loaded through Node's require(esm) (native-require.ts).
  const { JSDOM } = nativeRequire<{ JSDOM: new (html: string) => { window: SvgWindow } }>("jsdom");
  const { window } = new JSDOM("");
  const purify = createPurify(window as unknown as Parameters<typeof createPurify>[0]);
  sanitiser = { window, purify };
  return sanitiser;
}

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

/** Drops what leaves the document (see the module comment) from `root` and its descendants. */
function removeExternalReferences(root: SvgElement): void {
  // Depth first by sibling links: jsdom's live getElementsByTagName("*") costs O(n^2) here.
  const pending: SvgElement[] = [root];
  while (pending.length > 0) {
    const element = pending.pop()!;
    for (let child = element.firstElementChild; child; child = child.nextElementSibling) pending.push(child);
    if (element.localName === "style") {
      const css = element.textContent ?? "";
      if (/@import/i.test(css) || EXTERNAL_URL.test(css)) element.remove();
      continue;
    }
    for (const attribute of Array.from(element.attributes)) {
      const value = attribute.value.trim();
      const reference = attribute.localName === "href" ? !value.startsWith("#") && !EMBEDDED_IMAGE.test(value) : false;
      if (reference || EXTERNAL_URL.test(value)) element.removeAttributeNode(attribute);
    }
  }
}

/**
 * The sanitised SVG of an upload's bytes (UTF-8, the root `<svg>` element only: no XML
 * declaration, document type or processing instruction). Throws UnsupportedImageError (415)
 * for markup that is not an SVG or declares entities, UndecodableImageError (422) for text
 * that is not well-formed UTF-8 XML or is above MAX_SVG_BYTES or MAX_SVG_ELEMENTS.
 */
export function sanitiseSvg(bytes: Buffer): Buffer {
  if (bytes.length > MAX_SVG_BYTES) {
    throw new UndecodableImageError(`An SVG may be at most ${MAX_SVG_BYTES} bytes (this one is ${bytes.length})`);
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new UndecodableImageError("The SVG is not valid UTF-8 text");
  }
  // Before any parsing: jsdom's XML parser expands internal entities.
  if (/<!ENTITY/i.test(text)) {
    throw new UnsupportedImageError(
      "SVG with <!ENTITY> declarations is not accepted (entities are never expanded); remove the DOCTYPE's internal subset",
    );
  }
  // Every start tag counts (also one in a comment: an upper bound is enough).
  let elements = 0;
  for (const _tag of text.matchAll(/<[A-Za-z_:]/g)) {
    if (++elements > MAX_SVG_ELEMENTS) {
      throw new UndecodableImageError(`An SVG may have at most ${MAX_SVG_ELEMENTS} elements`);
    }
  }
  const { window, purify } = loadSanitiser();
  const document = new window.DOMParser().parseFromString(text, "image/svg+xml");
  const root = document.documentElement;
  // jsdom answers a document that is not well-formed with a lone <parsererror> root.
  if (root.localName === "parsererror") {
    throw new UndecodableImageError(
      `The SVG is not well-formed XML (${(root.textContent ?? "").trim().slice(0, 200)})`,
    );
  }
  if (root.localName !== "svg" || root.namespaceURI !== SVG_NAMESPACE) {
    throw new UnsupportedImageError(
      'The file is markup but not an SVG image (its root must be <svg xmlns="http://www.w3.org/2000/svg">)',
    );
  }
  purify.sanitize(root as unknown as Parameters<Purifier["sanitize"]>[0], {
    IN_PLACE: true,
    USE_PROFILES: { svg: true, svgFilters: true },
    // `use` of a fragment of the document (sprites, repeated shapes); other targets go below.
    ADD_TAGS: ["use"],
    FORBID_TAGS: ["script", "foreignObject", "foreignobject"],
  });
  removeExternalReferences(root);
  return Buffer.from(new window.XMLSerializer().serializeToString(root), "utf8");
}
