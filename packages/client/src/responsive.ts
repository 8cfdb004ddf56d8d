import {
  formatOriginalPath,
  MediaUrlError,
  parseOriginalPath,
  PRESET_NAME,
  type MediaExtension,
  type TransformationStep,
} from "@media-platform/contracts";
import { mediaUrl, step, withBase, type MediaUrlOptions } from "./media-url";

/**
 * Responsive-image URLs for a media service: srcset (resize widths), sizes, <picture> sources and
 * typed preset URLs. Every URL goes through mediaUrl(), so it is validated with the service's
 * own rules and signed (and expiring) when a key is given.
 */

export interface ResponsiveOptions<P extends string = string> extends MediaUrlOptions {
  /** Public base URL of the media service (or the CDN in front of it). */
  baseUrl: string;
  /**
   * The service's preset file content (MEDIA_PRESETS_FILE, e.g. `import presets from "./presets.json"`):
   * preset names become a type, and preset() refuses names the file does not have.
   */
  presets?: Record<P, unknown>;
}

/** One `<source>` of a `<picture>`. */
export interface PictureSource {
  type: string;
  srcset: string;
  sizes?: string;
}

export interface Picture {
  /** In order: AVIF, WebP (browsers take the first type they support). */
  sources: PictureSource[];
  /** The `<img>`: the stored format, for browsers without either. */
  img: { src: string; srcset: string; sizes?: string };
}

const FORMAT_TYPES = [
  ["avif", "image/avif"],
  ["webp", "image/webp"],
] as const;

/** `sizes` attribute: media conditions with their slot widths, then the default slot width. */
export function sizes(rules: ReadonlyArray<readonly [media: string, size: string]>, fallback: string): string {
  for (const part of [...rules.flat(), fallback]) {
    if (part.trim() === "" || part.includes(",")) {
      throw new TypeError(`sizes: ${JSON.stringify(part)} must be non-empty and contain no comma`);
    }
  }
  return [...rules.map(([media, size]) => `${media.trim()} ${size.trim()}`), fallback.trim()].join(", ");
}

function checkWidths(widths: readonly number[]): number[] {
  if (widths.length === 0) throw new MediaUrlError([{ path: "resize.width", message: "give at least one width" }]);
  return [...new Set(widths)].sort((a, b) => a - b);
}

export class ResponsiveImages<P extends string = string> {
  constructor(private readonly options: ResponsiveOptions<P>) {}

  private url(assetId: string, ext: MediaExtension, steps: readonly TransformationStep[]): string {
    return mediaUrl(this.options.baseUrl, assetId, ext, steps, this.options);
  }

  /**
   * `srcset` attribute: one `resize:width=<w>` URL per width (ascending, duplicates dropped),
   * after `steps` (e.g. a crop), each with its `<w>w` descriptor.
   */
  srcset(
    assetId: string,
    ext: MediaExtension,
    widths: readonly number[],
    steps: readonly TransformationStep[] = [],
  ): string {
    return checkWidths(widths)
      .map((width) => `${this.url(assetId, ext, [...steps, step("resize", { width })])} ${width}w`)
      .join(", ");
  }

  /**
   * `<picture>` sources for when MEDIA_AUTO_FORMAT is off: AVIF and WebP srcsets (a `format`
   * step after the resize) and the `<img>` in the stored format. With negotiation on, a plain
   * `<img srcset>` already gets AVIF/WebP from the same URLs.
   */
  picture(
    assetId: string,
    ext: MediaExtension,
    widths: readonly number[],
    options: { steps?: readonly TransformationStep[]; sizes?: string } = {},
  ): Picture {
    const list = checkWidths(widths);
    const steps = options.steps ?? [];
    const sized = options.sizes === undefined ? {} : { sizes: options.sizes };
    const sources = FORMAT_TYPES.map(([format, type]) => ({
      type,
      srcset: list
        .map(
          (width) =>
            `${this.url(assetId, ext, [...steps, step("resize", { width }), step("format", { type: format })])} ${width}w`,
        )
        .join(", "),
      ...sized,
    }));
    const largest = list[list.length - 1]!;
    return {
      sources,
      img: {
        src: this.url(assetId, ext, [...steps, step("resize", { width: largest })]),
        srcset: this.srcset(assetId, ext, list, steps),
        ...sized,
      },
    };
  }

  /** `/preset:name=<name>/<assetId>.<ext>`, signed when a key is given; a name the preset file lacks throws. */
  preset(name: P, assetId: string, ext: MediaExtension): string {
    if (!PRESET_NAME.test(name) || (this.options.presets && !Object.hasOwn(this.options.presets, name))) {
      const known = this.options.presets ? Object.keys(this.options.presets).join(", ") : "";
      throw new MediaUrlError([
        { path: "preset.name", message: `unknown preset ${JSON.stringify(name)}; known: ${known}` },
      ]);
    }
    // Same id and extension rules as every media URL (throws MediaUrlError naming them).
    const asset = parseOriginalPath(formatOriginalPath(assetId, ext));
    return withBase(this.options.baseUrl, `/preset:name=${name}/${asset.assetId}.${asset.extension}`, this.options);
  }
}

/** `responsiveImages({ baseUrl, signingKey?, expiresAt?, presets? })`. */
export function responsiveImages<P extends string = string>(options: ResponsiveOptions<P>): ResponsiveImages<P> {
  return new ResponsiveImages<P>(options);
}
