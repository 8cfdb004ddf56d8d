import Negotiator from "negotiator";

/**
 * Opt-in format negotiation (MEDIA_AUTO_FORMAT, extension, issue 11). With it off nothing here
 * runs and the spec's rule holds: the output keeps the stored format.
 *
 * With it on, a JPEG or PNG original is encoded as the first configured format the request's
 * Accept names explicitly with q > 0 (browsers list image/avif and image/webp by name; a bare
 * `*` / `image/*` does not count, so curl and old clients keep getting the stored format).
 * Other originals (GIF, animated WebP, AVIF, TIFF) are never converted.
 *
 * The cache key (delivery/admission.ts, renditionKey) is the request-target plus the format bucket (`#avif`, `#webp`), never the raw
 * Accept: browsers send a handful of Accept strings but each would otherwise be its own entry.
 * Requests that accept none of the formats keep the bare request-target as key, the same entry
 * as with negotiation off. `#` cannot occur in a request-target, so no URL collides with a key.
 */

export const AUTO_FORMATS = ["avif", "webp"] as const;
export type AutoFormat = (typeof AUTO_FORMATS)[number];

const MIME: Record<AutoFormat, string> = { avif: "image/avif", webp: "image/webp" };

/** Originals that may be converted: stills in formats every browser decodes. */
const CONVERTIBLE: ReadonlySet<string> = new Set(["image/jpeg", "image/png"]);

export const isConvertible = (contentType: string): boolean => CONVERTIBLE.has(contentType);

/** Bounded memo of Accept header -> bucket: the hot path pays a Map lookup, not a parse. */
const MEMO_LIMIT = 512;

export class FormatNegotiator {
  private readonly memo = new Map<string, AutoFormat | undefined>();

  constructor(readonly order: readonly AutoFormat[]) {}

  /** The bucket for an Accept header: the first configured format it names with q > 0. */
  bucket(accept: string | undefined): AutoFormat | undefined {
    if (accept === undefined || accept === "") return undefined;
    if (this.memo.has(accept)) return this.memo.get(accept);
    const accepted = new Negotiator({ headers: { accept } }).mediaTypes();
    const found = this.order.find((format) => accepted.includes(MIME[format]));
    if (this.memo.size >= MEMO_LIMIT) this.memo.clear();
    this.memo.set(accept, found);
    return found;
  }
}

/** `Vary: Accept` on every rendition while negotiation is on (a CDN must not mix the buckets). */
export const VARY_ACCEPT = "Accept";
