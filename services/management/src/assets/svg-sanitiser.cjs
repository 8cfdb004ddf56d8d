"use strict";
/**
 * SVG sanitising, run in a format worker thread (format-worker.cjs, task "svg"; svg-original.ts
 * is the service's side). jsdom's XML parser and DOMPurify's attribute removal both cost time
 * quadratic in an element's attributes, so the text is first read by a streaming tokenizer
 * (saxes) that counts elements and attributes and measures each start tag, and stops at the first
 * limit passed; only a document within them reaches jsdom. What is removed or refused is listed in
 * svg-original.ts. Plain CommonJS, copied as it is into the bundle beside format-worker.cjs.
 */
const { SaxesParser } = require("saxes");

const SVG_NAMESPACE = "http://www.w3.org/2000/svg";
/** Raster images an SVG may embed (a nested SVG could carry what is removed here). */
const EMBEDDED_IMAGE = /^data:image\/(png|jpeg|gif|webp|avif)[;,]/i;
/** A CSS `url(` whose target is not a fragment of this document. */
const EXTERNAL_URL = /url\(\s*(?!['"]?\s*#)/i;

class Refusal extends Error {
  constructor(kind, message) {
    super(message);
    this.kind = kind;
  }
}

let sanitiser;
/** jsdom (about half a second to load) loads on the thread's first SVG. */
function loadSanitiser() {
  if (sanitiser) return sanitiser;
  const { JSDOM } = require("jsdom");
  const createPurify = require("dompurify");
  const { window } = new JSDOM("");
  sanitiser = { window, purify: createPurify(window) };
  return sanitiser;
}

/**
 * Counts elements and attributes with saxes before any DOM exists, and throws a Refusal at the
 * first limit passed: an element with more than `maxAttributesPerElement` attributes or a start
 * tag longer than `maxTagChars`, more than `maxAttributes` in all, more than `maxElements`.
 * Well-formedness is judged by the DOM parser afterwards (saxes errors are ignored here).
 */
function checkLimits(text, limits) {
  const parser = new SaxesParser({ xmlns: false, position: true });
  let elements = 0;
  let attributes = 0;
  let onElement = 0;
  let tagStart = 0;
  let tagName = "";
  const tagLength = () => {
    if (parser.position - tagStart > limits.maxTagChars) {
      throw new Refusal(
        "undecodable",
        `An SVG element may be at most ${limits.maxTagChars} characters long with its attributes (<${tagName}> is longer)`,
      );
    }
  };
  parser.on("error", () => undefined);
  parser.on("opentagstart", (tag) => {
    if (++elements > limits.maxElements) {
      throw new Refusal("undecodable", `An SVG may have at most ${limits.maxElements} elements`);
    }
    onElement = 0;
    tagStart = parser.position;
    tagName = String(tag.name).slice(0, 40);
  });
  parser.on("attribute", () => {
    if (++onElement > limits.maxAttributesPerElement) {
      throw new Refusal(
        "undecodable",
        `An SVG element may have at most ${limits.maxAttributesPerElement} attributes (<${tagName}> has more)`,
      );
    }
    if (++attributes > limits.maxAttributes) {
      throw new Refusal("undecodable", `An SVG may have at most ${limits.maxAttributes} attributes in all`);
    }
    tagLength();
  });
  parser.on("opentag", tagLength);
  parser.write(text).close();
}

/** Drops what leaves the document (see svg-original.ts) from `root` and its descendants. */
function removeExternalReferences(root) {
  // Depth first by sibling links: jsdom's live getElementsByTagName("*") costs O(n^2) here.
  const pending = [root];
  while (pending.length > 0) {
    const element = pending.pop();
    for (let child = element.firstElementChild; child; child = child.nextElementSibling) pending.push(child);
    if (element.localName === "style") {
      const css = element.textContent || "";
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

function sanitise(bytes, limits) {
  let text;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new Refusal("undecodable", "The SVG is not valid UTF-8 text");
  }
  // Before any parsing: jsdom's XML parser expands internal entities.
  if (/<!ENTITY/i.test(text)) {
    throw new Refusal(
      "unsupported",
      "SVG with <!ENTITY> declarations is not accepted (entities are never expanded); remove the DOCTYPE's internal subset",
    );
  }
  checkLimits(text, limits);
  const { window, purify } = loadSanitiser();
  const root = new window.DOMParser().parseFromString(text, "image/svg+xml").documentElement;
  // jsdom answers a document that is not well-formed with a lone <parsererror> root.
  if (root.localName === "parsererror") {
    throw new Refusal(
      "undecodable",
      `The SVG is not well-formed XML (${(root.textContent || "").trim().slice(0, 200)})`,
    );
  }
  if (root.localName !== "svg" || root.namespaceURI !== SVG_NAMESPACE) {
    throw new Refusal(
      "unsupported",
      'The file is markup but not an SVG image (its root must be <svg xmlns="http://www.w3.org/2000/svg">)',
    );
  }
  purify.sanitize(root, {
    IN_PLACE: true,
    USE_PROFILES: { svg: true, svgFilters: true },
    // `use` of a fragment of the document (sprites, repeated shapes); other targets go below.
    ADD_TAGS: ["use"],
    FORBID_TAGS: ["script", "foreignObject", "foreignobject"],
  });
  removeExternalReferences(root);
  return Buffer.from(new window.XMLSerializer().serializeToString(root), "utf8");
}

/**
 * Task "svg": `{ bytes, limits }` → `{ svg }` (the sanitised bytes) or `{ error, message }`, error
 * "unsupported" (not an SVG, entities) or "undecodable" (not UTF-8 or well-formed, a limit passed).
 */
function sanitiseSvgTask({ bytes, limits }) {
  try {
    const svg = sanitise(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), limits);
    return { svg };
  } catch (err) {
    if (err instanceof Refusal) return { error: err.kind, message: err.message };
    throw err;
  }
}

module.exports = { loadSanitiser, sanitiseSvgTask };
