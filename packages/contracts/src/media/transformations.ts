import type { MediaLimits, ParamSpec, ParamValue } from "./params";

/**
 * The 16 transformations of the spec (§4.2) and their parameters, exactly as the spec lists
 * them, then our extensions (resize, format, frame): the single definition the URL parser, both services, the docs and the client use.
 */
interface TransformationSpec {
  description: string;
  params: Record<string, ParamSpec>;
  /** Rules that involve several parameters; returns a message naming them, or undefined. */
  /** Runs on the resolved parameters (defaults filled in). */
  check?: (params: Record<string, number | string | undefined>, limits: MediaLimits) => string | undefined;
}

/** The nine placements of an overlay, text or other layer over the image. */
export const LAYER_GRAVITIES = [
  "center",
  "north",
  "northeast",
  "east",
  "southeast",
  "south",
  "southwest",
  "west",
  "northwest",
] as const;

/** Longest `text:text=` value, in characters. */
export const MAX_OVERLAY_TEXT = 200;

const ASSET_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const FRACTION = /^(?:\d?\.\d{1,6}|\d\.?)$/;

/**
 * A redaction region `x,y,w,h` in fractions of the image (0 to 1, inside it, not empty), in its one
 * spelling (numbers as JavaScript prints them), or null.
 */
export function canonicalRegion(value: string): string | null {
  const parts = value.split(",");
  if (parts.length !== 4 || !parts.every((p) => FRACTION.test(p))) return null;
  const [x, y, w, h] = parts.map(Number) as [number, number, number, number];
  if ([x, y, w, h].some((n) => n > 1)) return null;
  if (w <= 0 || h <= 0 || x + w > 1 + 1e-9 || y + h > 1 + 1e-9) return null;
  return `${x},${y},${w},${h}`;
}

/** A layer's offsets: pixels, positive moves right (x) or down (y), from where gravity puts it. */
const layerOffset = (axis: "x" | "y") =>
  ({
    type: "integer",
    required: false,
    min: -8192,
    max: 8192,
    default: 0,
    description: `${axis === "x" ? "Horizontal" : "Vertical"} offset in pixels from the place gravity gives; positive moves ${axis === "x" ? "right" : "down"}.`,
  }) as const;

const layerOpacity = {
  type: "number",
  required: false,
  min: 0,
  max: 1,
  default: 1,
  description: "Opacity, 0 (invisible) to 1 (opaque).",
} as const;

export const transformationSpecs = {
  crop: {
    description:
      "Extracts a width x height region. With x/y the region starts at that pixel (0-based); otherwise it is placed by gravity (x or y alone overrides its own axis). The region is clipped to the image.",
    params: {
      width: { type: "integer", required: true, min: 1, cap: "maxDimension", description: "Region width in pixels." },
      height: { type: "integer", required: true, min: 1, cap: "maxDimension", description: "Region height in pixels." },
      x: {
        type: "integer",
        required: false,
        min: 0,
        cap: "maxDimension",
        description: "Horizontal start of the crop (default: placed by gravity).",
      },
      y: {
        type: "integer",
        required: false,
        min: 0,
        cap: "maxDimension",
        description: "Vertical start of the crop (default: placed by gravity).",
      },
      gravity: {
        type: "enum",
        required: false,
        values: ["center", "north", "south", "east", "west"],
        // Issue 11: smart placement beside the spec's five.
        extensionValues: ["focal", "attention", "entropy"],
        default: "center",
        description:
          "Where the region sits when x/y are not given: center, north (top), south (bottom), east (right), west (left). Extensions: focal centres it on the asset's focal point (PATCH /v1/assets/:id focalPoint), slid inside the image, and is center when the asset has none; attention (luminance frequency, saturation, skin tones) and entropy (Shannon entropy) place it on the most interesting part of the image (libvips smartcrop).",
      },
    },
  },
  "color-balance": {
    description:
      "GIMP-style colour balance on the cyan-red, magenta-green and yellow-blue axes, applied to one tonal range; luminosity preserved.",
    params: {
      cyan: {
        type: "number",
        required: false,
        min: -100,
        max: 100,
        implied: 0,
        description: "Negative adds cyan (cool), positive adds red (warm).",
      },
      magenta: {
        type: "number",
        required: false,
        min: -100,
        max: 100,
        implied: 0,
        description: "Negative adds green, positive adds magenta.",
      },
      yellow: {
        type: "number",
        required: false,
        min: -100,
        max: 100,
        implied: 0,
        description: "Negative adds blue, positive adds yellow.",
      },
      target: {
        type: "enum",
        required: false,
        values: ["shadows", "midtones", "highlights"],
        default: "midtones",
        description: "Tonal range: shadows (brightness 0-1/3), midtones (1/3-2/3), highlights (2/3-1).",
      },
    },
  },
  clahe: {
    description: "Contrast Limited Adaptive Histogram Equalization (tiled, as OpenCV), on lightness.",
    params: {
      clipLimit: {
        type: "number",
        required: false,
        min: 1,
        max: 40,
        default: 3,
        description: "Histogram clip limit; higher allows stronger contrast but may amplify artifacts.",
      },
      tileSize: {
        type: "integer",
        required: false,
        min: 2,
        max: 256,
        default: 16,
        description: "Tile size in pixels; smaller tiles work on finer regions.",
      },
    },
  },
  grayscale: {
    description: "Converts to grayscale keeping luminance shades, with an optional lightness shift.",
    params: {
      lightness: {
        type: "number",
        required: false,
        min: -100,
        max: 100,
        default: 0,
        description: "Lightness shift in L* units; negative darkens, positive lightens.",
      },
    },
  },
  fit: {
    description:
      "Scales to fit inside width x height keeping the aspect ratio, then pads to exactly that size, centred.",
    params: {
      width: { type: "integer", required: true, min: 1, cap: "maxDimension", description: "Canvas width in pixels." },
      height: { type: "integer", required: true, min: 1, cap: "maxDimension", description: "Canvas height in pixels." },
      background: {
        type: "color",
        required: false,
        default: "ffffff",
        description: "Padding colour: hex without #, rgb(r,g,b) or a CSS colour name.",
      },
    },
  },
  saturation: {
    description: "Multiplies colour saturation.",
    params: {
      value: {
        type: "number",
        required: true,
        min: 0,
        cap: "maxMultiplier",
        default: 1,
        description: "Multiplier; 1.0 unchanged, 0.0 fully desaturated.",
      },
    },
  },
  "add-noise": {
    description: "Adds noise, deterministic per URL (seeded from the cache key).",
    params: {
      type: {
        type: "enum",
        required: false,
        values: ["gaussian", "uniform", "salt-pepper"],
        default: "gaussian",
        description: "Noise distribution.",
      },
      amount: {
        type: "number",
        required: true,
        min: 0.1,
        cap: "maxNoiseAmount",
        description: "Strength in percent: gaussian sigma, uniform half-width, or share of salt-pepper pixels.",
      },
    },
  },
  brightness: {
    description: "Multiplies brightness.",
    params: {
      value: {
        type: "number",
        required: true,
        min: 0,
        exclusiveMin: true,
        cap: "maxMultiplier",
        description: "Positive multiplier; 1.0 unchanged; extreme values may clip.",
      },
    },
  },
  wave: {
    description:
      "Sinusoidal wave distortion (ImageMagick -wave semantics: vertical displacement along x; the canvas grows by 2 x amplitude).",
    params: {
      amplitude: {
        type: "number",
        required: true,
        min: 1,
        cap: "maxWaveAmplitude",
        description: "Wave amplitude in pixels.",
      },
      wavelength: {
        type: "number",
        required: true,
        min: 5,
        cap: "maxWaveLength",
        description: "Distance between peaks in pixels.",
      },
    },
  },
  channelManipulation: {
    description: "Scales the red, green and blue channels; alpha untouched; a missing channel stays 1.0.",
    params: {
      red: {
        type: "number",
        required: false,
        min: 0,
        cap: "maxMultiplier",
        implied: 1,
        description: "Red multiplier; 1.0 unchanged, 0.0 removes the channel.",
      },
      green: {
        type: "number",
        required: false,
        min: 0,
        cap: "maxMultiplier",
        implied: 1,
        description: "Green multiplier; 1.0 unchanged, 0.0 removes the channel.",
      },
      blue: {
        type: "number",
        required: false,
        min: 0,
        cap: "maxMultiplier",
        implied: 1,
        description: "Blue multiplier; 1.0 unchanged, 0.0 removes the channel.",
      },
    },
  },
  sharpen: {
    description: "Sharpens edges; 0 leaves the image unchanged, larger values sharpen more.",
    params: {
      value: {
        type: "number",
        required: true,
        min: 0,
        cap: "maxSharpen",
        description: "Intensity; 0.0 no sharpening; high values may cause artifacts.",
      },
    },
  },
  avatar: {
    description:
      "Square or circular profile picture, cropped around detected faces (or the most salient content when there is none). When the asset has a focal point (PATCH /v1/assets/:id focalPoint), the largest square centred on it is used instead and no face detection runs.",
    params: {
      size: {
        type: "integer",
        required: true,
        min: 32,
        cap: "maxDimension",
        default: 128,
        description: "Side of the square output in pixels (default 128 when omitted).",
      },
      shape: {
        type: "enum",
        required: false,
        values: ["square", "circle"],
        default: "square",
        description: "Output shape.",
      },
      border: {
        type: "integer",
        required: false,
        min: 1,
        cap: "maxDimension",
        description: "Border width in pixels, drawn inside the size.",
      },
      border_color: {
        type: "color",
        required: false,
        hexOnly: true,
        implied: "ffffff",
        description: "Border colour, hex without #; used only with border.",
      },
    },
    check: (p) =>
      typeof p.border === "number" && p.border * 2 >= Number(p.size)
        ? `border must be less than half of size (border=${p.border}, size=${p.size})`
        : undefined,
  },
  thumbnail: {
    description:
      "Square thumbnail: cover-cropped to the centre and resized. When the asset has a focal point (PATCH /v1/assets/:id focalPoint), the square is centred on it instead, slid inside the image.",
    params: {
      size: {
        type: "integer",
        required: true,
        min: 50,
        cap: "maxDimension",
        description: "Side of the square output in pixels.",
      },
      quality: {
        type: "integer",
        required: false,
        min: 1,
        max: 100,
        default: 75,
        // Extension: the lowest quality meeting MEDIA_AUTO_QUALITY_TARGET (SSIMULACRA2), per image.
        keywords: ["auto"],
        description:
          "Encoder quality for lossy outputs (JPEG, WebP, AVIF). Extension: auto, the lowest quality whose SSIMULACRA2 score against the unencoded result reaches MEDIA_AUTO_QUALITY_TARGET (at most 4 trial encodes).",
      },
    },
  },
  exposure: {
    description: "Exposure shift in stops: linear-light values multiplied by 2^value.",
    params: {
      value: {
        type: "number",
        required: true,
        min: -5,
        max: 5,
        default: 0,
        description: "Stops (EV); negative darkens, positive brightens.",
      },
    },
  },
  solarize: {
    description: "Inverts channel values above a threshold.",
    params: {
      threshold: {
        type: "integer",
        required: false,
        min: 0,
        max: 255,
        default: 128,
        description: "Values brighter than this are inverted.",
      },
    },
  },
  threshold: {
    description: "Binary black and white: intensity >= value becomes white, below becomes black.",
    params: {
      value: { type: "integer", required: true, min: 0, max: 255, description: "Threshold on 0-255 intensity." },
    },
  },
  // --- Extensions beyond the spec's 16 (responsive delivery, issue 11) -----------------------
  resize: {
    description:
      "Extension (not in the spec): scales to width and/or height, the step for srcset widths. fit: inside keeps the aspect ratio within the box, cover fills the box cropping the overflow (centred), contain fits inside and pads to exactly the box, fill stretches. Never enlarges unless enlarge=true. dpr multiplies the sizes; the result is capped by the maxDimension safety cap (keeping the box's aspect ratio).",
    params: {
      width: {
        type: "integer",
        required: false,
        min: 1,
        cap: "maxDimension",
        description: "Target width in CSS pixels (at least one of width and height).",
      },
      height: {
        type: "integer",
        required: false,
        min: 1,
        cap: "maxDimension",
        description: "Target height in CSS pixels (at least one of width and height).",
      },
      fit: {
        type: "enum",
        required: false,
        values: ["inside", "cover", "contain", "fill"],
        default: "inside",
        description: "How the image meets the box: inside, cover, contain (padded with background) or fill.",
      },
      enlarge: {
        type: "enum",
        required: false,
        values: ["false", "true"],
        default: "false",
        description: "Allow scaling up a smaller image (false: a smaller image keeps its size).",
      },
      dpr: {
        type: "number",
        required: false,
        min: 1,
        max: 4,
        default: 1,
        description: "Device pixel ratio: multiplies width and height (capped by maxDimension).",
      },
      background: {
        type: "color",
        required: false,
        default: "ffffff",
        description: "Padding colour for fit=contain: hex without #, rgb(r,g,b) or a CSS colour name.",
      },
    },
    check: (p) => (p.width === undefined && p.height === undefined ? "resize needs width, height or both" : undefined),
  },
  format: {
    description:
      "Extension (not in the spec): encodes the result as the given format instead of the stored one (for <picture> sources when MEDIA_AUTO_FORMAT is off). Applies at encoding, wherever it stands in the chain; steps before it decide transparency by the stored format.",
    params: {
      type: {
        type: "enum",
        required: true,
        values: ["avif", "webp", "jpeg", "png"],
        description: "Output format.",
      },
      quality: {
        type: "integer",
        required: false,
        min: 1,
        max: 100,
        keywords: ["auto"],
        description:
          "Encoder quality for lossy outputs (default: the service's for that format); auto: the lowest quality whose SSIMULACRA2 score against the unencoded result reaches MEDIA_AUTO_QUALITY_TARGET (at most 4 trial encodes).",
      },
    },
  },
  frame: {
    description:
      "Extension (not in the spec): one frame of an animated GIF or WebP, as a still image (a poster). The frame is chosen wherever the step stands in the chain (every other step applies frame by frame, so the result is the same). A still image has one frame, index 0.",
    params: {
      index: {
        type: "integer",
        required: false,
        min: 0,
        max: 65535,
        default: 0,
        description: "0-based frame number; at most the original's frame count minus 1.",
      },
    },
  },
  page: {
    description:
      "Extension (not in the spec): one page of a PDF original, drawn at the size the steps after it need (a PDF renders its first page without it). The page is chosen wherever the step stands in the chain. Any other image has one page, index 1.",
    params: {
      index: {
        type: "integer",
        required: false,
        min: 1,
        max: 100_000,
        default: 1,
        description: "1-based page number; at most the PDF's page count.",
      },
    },
  },
  "max-bytes": {
    description:
      "Extension (not in the spec): a byte budget for the encoded result. A larger result is encoded again at lower quality (lossy formats), then at smaller sizes, within a bounded number of tries; a result that still does not fit answers 422. Applies at encoding, wherever it stands in the chain.",
    params: {
      value: {
        type: "integer",
        required: true,
        min: 100,
        max: 100_000_000,
        description: "Largest size of the encoded result, in bytes.",
      },
    },
  },
  // --- Extensions: overlays and privacy (issue 47) -------------------------------------------
  overlay: {
    description:
      "Extension (not in the spec): composites another asset of the same workspace (a watermark, a logo) over the image, placed by gravity and offsets, optionally scaled to a share of the image width, faded, or tiled over the whole image. An asset of another workspace answers 404 as an unknown id does. Purging the overlay asset purges every rendition that used it.",
    params: {
      asset: {
        type: "text",
        required: true,
        maxLength: 36,
        format: "an asset id (UUID) of the same workspace",
        canonical: (v: string) => (ASSET_ID.test(v) ? v.toLowerCase() : null),
        example: "0f8fad5b-d9cb-469f-a165-70867728950e",
        description: "The asset drawn over the image.",
      },
      gravity: {
        type: "enum",
        required: false,
        values: LAYER_GRAVITIES,
        default: "southeast",
        description: "Where the overlay sits: center, a side (north, east, south, west) or a corner (northeast, ...).",
      },
      x: layerOffset("x"),
      y: layerOffset("y"),
      scale: {
        type: "number",
        required: false,
        min: 0,
        exclusiveMin: true,
        max: 1,
        description:
          "Overlay width as a share of the image width, aspect ratio kept (default: its own size, shrunk to fit).",
      },
      opacity: layerOpacity,
      tile: {
        type: "enum",
        required: false,
        values: ["false", "true"],
        default: "false",
        description: "Repeat the overlay over the whole image (gravity and offsets then do not apply).",
      },
    },
  },
  text: {
    description:
      "Extension (not in the spec): draws a line or more of text over the image (libvips/Pango, right-to-left scripts shaped), in bundled open-licence fonts (DejaVu; Chinese, Japanese and Korean characters in Noto Sans SC and KR), placed by gravity and offsets, with an optional background box. Text wider than the image wraps; what still does not fit is cut at the image edge.",
    params: {
      text: {
        type: "text",
        required: true,
        maxLength: MAX_OVERLAY_TEXT,
        example: "Hello",
        description: `The text, percent-encoded UTF-8 (a %0A starts a new line), at most ${MAX_OVERLAY_TEXT} characters.`,
      },
      size: {
        type: "integer",
        required: false,
        min: 6,
        max: 256,
        default: 32,
        description: "Font size in pixels.",
      },
      color: {
        type: "color",
        required: false,
        default: "ffffff",
        description: "Text colour: hex without #, rgb(r,g,b) or a CSS colour name.",
      },
      font: {
        type: "enum",
        required: false,
        values: ["sans", "serif", "mono"],
        default: "sans",
        description:
          "Typeface: sans (DejaVu Sans), serif (DejaVu Serif) or mono (DejaVu Sans Mono). Chinese, Japanese and Korean characters draw in Noto Sans SC (Han, kana) and Noto Sans KR (Hangul) whatever the typeface.",
      },
      gravity: {
        type: "enum",
        required: false,
        values: LAYER_GRAVITIES,
        default: "center",
        description: "Where the text sits: center, a side (north, east, south, west) or a corner (northeast, ...).",
      },
      x: layerOffset("x"),
      y: layerOffset("y"),
      opacity: layerOpacity,
      background: {
        type: "color",
        required: false,
        description: "Colour of a box drawn behind the text (default: no box).",
      },
      padding: {
        type: "integer",
        required: false,
        min: 0,
        max: 256,
        default: 8,
        description: "Space in pixels between the text and the edge of its background box.",
      },
    },
  },
  redact: {
    description:
      "Extension (not in the spec): blurs or pixelates the faces found by the face detector, a region given in fractions of the image as displayed, or both. MEDIA_REDACT_FACES_ALWAYS applies face redaction to every rendition.",
    params: {
      faces: {
        type: "enum",
        required: false,
        values: ["false", "true"],
        default: "false",
        description: "Redact every face the detector finds.",
      },
      region: {
        type: "text",
        required: false,
        maxLength: 64,
        format: "x,y,w,h: four fractions of the image from 0 to 1 (w and h above 0, inside the image)",
        canonical: canonicalRegion,
        example: "0.25,0.25,0.5,0.5",
        description: "A rectangle to redact: left, top, width and height as fractions of the image entering the step.",
      },
      mode: {
        type: "enum",
        required: false,
        values: ["blur", "pixelate"],
        default: "blur",
        description: "blur (Gaussian) or pixelate (blocks).",
      },
      strength: {
        type: "integer",
        required: false,
        min: 1,
        max: 100,
        default: 50,
        description:
          "How strongly: the blur radius or block size as a share of the region's shorter side (100: blur sigma a quarter of it, blocks half of it).",
      },
    },
    check: (p) =>
      p.faces !== "true" && p.region === undefined ? "redact needs faces=true, a region, or both" : undefined,
  },
} as const satisfies Record<string, TransformationSpec>;

export type TransformationName = keyof typeof transformationSpecs;
export const transformationNames = Object.keys(transformationSpecs) as TransformationName[];

/** The spec's 16 transformations (§4.2); every other entry of transformationSpecs is an extension. */
export const specTransformationNames: readonly TransformationName[] = transformationNames.slice(0, 16);
export const isSpecTransformation = (name: TransformationName): boolean => specTransformationNames.includes(name);

type SpecsOf<N extends TransformationName> = (typeof transformationSpecs)[N]["params"];

/** Parameters exactly as given in a URL (optional ones may be absent). */
export type GivenParams<N extends TransformationName> = {
  [K in keyof SpecsOf<N>]?: ParamValue<SpecsOf<N>[K]>;
};

/** Parameters after defaults: required, defaulted and implied ones are always present. */
export type ResolvedParams<N extends TransformationName> = {
  [K in keyof SpecsOf<N>]: SpecsOf<N>[K] extends { default: unknown } | { implied: unknown }
    ? ParamValue<SpecsOf<N>[K]>
    : SpecsOf<N>[K] extends { required: true }
      ? ParamValue<SpecsOf<N>[K]>
      : ParamValue<SpecsOf<N>[K]> | undefined;
};

export function isTransformationName(name: string): name is TransformationName {
  return Object.prototype.hasOwnProperty.call(transformationSpecs, name);
}

export function paramSpecsOf(name: TransformationName): Record<string, ParamSpec> {
  return transformationSpecs[name].params as Record<string, ParamSpec>;
}

/**
 * Fills in defaults (and implied values); a parameter with either is never missing afterwards.
 * The one place defaults are applied: the URL parser's cross-parameter checks and the media
 * pipeline both see these values, and steps never re-default.
 */
export function resolveParams<N extends TransformationName>(name: N, given: GivenParams<N>): ResolvedParams<N> {
  const out: Record<string, unknown> = {};
  for (const [key, spec] of Object.entries(paramSpecsOf(name))) {
    const v = (given as Record<string, unknown>)[key];
    out[key] = v !== undefined ? v : (spec.default ?? spec.implied);
  }
  return out as ResolvedParams<N>;
}
