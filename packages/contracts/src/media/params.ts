import colorString from "color-string";

/**
 * Safety caps for parameters the spec leaves open-ended ("N+"). Deployments may raise or
 * lower them (MEDIA_MAX_* variables); validation messages always state the cap in force.
 */
export interface MediaLimits {
  /** Largest width/height/size/border, in pixels, a URL may ask for. */
  maxDimension: number;
  /** Largest image, in pixels (width x height), any step may produce; checked from the original's header before decoding. */
  maxOutputPixels: number;
  /**
   * Work budget of one request: the pixels its steps process, summed (each step counts the
   * larger of its input and output). Checked from the original's header before decoding.
   */
  maxWorkPixels: number;
  /**
   * Work budget of one request in CPU milliseconds, estimated before decoding from the calibrated
   * cost per pixel of each step and of the encoder (media's render/pipeline/cost.ts).
   */
  maxWorkCost: number;
  /** Upper bound for multipliers (saturation, brightness, channelManipulation). */
  maxMultiplier: number;
  /** Upper bound for add-noise amount. */
  maxNoiseAmount: number;
  /** Upper bound for wave amplitude, in pixels. */
  maxWaveAmplitude: number;
  /** Upper bound for wave wavelength, in pixels. */
  maxWaveLength: number;
  /** Upper bound for sharpen intensity. */
  maxSharpen: number;
}

export const defaultMediaLimits: Readonly<MediaLimits> = Object.freeze({
  maxDimension: 8192,
  maxOutputPixels: 50_000_000,
  maxWorkPixels: 150_000_000,
  maxWorkCost: 20_000,
  maxMultiplier: 10,
  maxNoiseAmount: 100,
  maxWaveAmplitude: 1000,
  maxWaveLength: 10_000,
  maxSharpen: 20,
});

type CapName = Exclude<keyof MediaLimits, "maxOutputPixels" | "maxWorkPixels" | "maxWorkCost">;

interface BaseSpec {
  description: string;
  required: boolean;
}

/**
 * `default` is the default the spec states (documented, listed by GET /transformations).
 * `implied` is the value an absent optional parameter has where the spec states none but its
 * meaning fixes one (a colour axis not given is 0, a channel multiplier 1.0): applied by
 * resolveParams like a default, not documented as one.
 */
interface NumericSpec<Type extends "integer" | "number"> extends BaseSpec {
  type: Type;
  min: number;
  /** The lower bound itself is not allowed (e.g. brightness must be > 0). */
  exclusiveMin?: boolean;
  /** Fixed upper bound from the spec. */
  max?: number;
  /** Open upper bound ("N+"): the configurable cap applies. */
  cap?: CapName;
  default?: number;
  implied?: number;
  /**
   * Words accepted besides a number (extensions): `auto` for a quality the service chooses per
   * image. Kept apart so the spec's numeric range stays as the spec states it.
   */
  keywords?: readonly string[];
}

export type IntegerSpec = NumericSpec<"integer">;
export type NumberSpec = NumericSpec<"number">;

export interface EnumSpec extends BaseSpec {
  type: "enum";
  /** The values the spec lists. */
  values: readonly string[];
  /**
   * Our values beyond the spec's (extensions): accepted exactly like `values`, kept apart so the
   * spec's list stays as the spec states it (describeRange, GET /transformations `values`).
   */
  extensionValues?: readonly string[];
  default?: string;
  implied?: string;
}

/** Hex without '#' (3, 4, 6 or 8 digits), rgb(r,g,b) or a CSS colour name. */
export interface ColorSpec extends BaseSpec {
  type: "color";
  /** Only hex digits are accepted (the spec's "hex without #"). */
  hexOnly?: boolean;
  default?: string;
  implied?: string;
}

/**
 * Free text (percent-encoded UTF-8 in the URL): at most maxLength characters (code points), no
 * control characters other than a line feed. `canonical` checks and spells a structured value
 * (an asset id, a region) and returns null when it does not parse; `format` names it in words.
 */
export interface TextSpec extends BaseSpec {
  type: "text";
  maxLength: number;
  format?: string;
  canonical?: (value: string) => string | null;
  /** A valid value, for example URLs (GET /transformations, docs). */
  example: string;
  default?: string;
  implied?: string;
}

export type ParamSpec = IntegerSpec | NumberSpec | EnumSpec | ColorSpec | TextSpec;

export type ParamValue<S> = S extends { type: "integer" | "number" }
  ? number | (S extends { keywords: readonly (infer K)[] } ? K : never)
  : S extends { type: "enum"; values: readonly (infer V)[] }
    ? V | (S extends { extensionValues: readonly (infer E)[] } ? E : never)
    : string;

/** Inclusive upper bound in force for a numeric parameter, or undefined when unbounded. */
export function upperBound(spec: IntegerSpec | NumberSpec, limits: MediaLimits): number | undefined {
  if (spec.max !== undefined) return spec.max;
  return spec.cap ? limits[spec.cap] : undefined;
}

/**
 * Human-readable range the spec allows (an enum's extension values are not in it: see
 * describeAllowed), the /transformations `range`.
 */
export function describeRange(spec: ParamSpec, limits: MediaLimits): string {
  switch (spec.type) {
    case "integer":
    case "number": {
      const kind = spec.type === "integer" ? "an integer" : "a number";
      const hi = upperBound(spec, limits);
      const lo = spec.exclusiveMin ? `greater than ${spec.min}` : `from ${spec.min}`;
      if (hi === undefined) return `${kind} ${spec.exclusiveMin ? lo : `>= ${spec.min}`}`;
      const capNote = spec.max === undefined && spec.cap ? ` (safety cap ${spec.cap})` : "";
      return spec.exclusiveMin ? `${kind} ${lo} and up to ${hi}${capNote}` : `${kind} ${lo} to ${hi}${capNote}`;
    }
    case "enum":
      return `one of ${spec.values.join(", ")}`;
    case "color":
      return spec.hexOnly
        ? "a hex colour without # (3, 4, 6 or 8 hex digits)"
        : "a hex colour without # (3, 4, 6 or 8 hex digits), rgb(r,g,b) or a CSS colour name";
    case "text":
      return spec.format ?? `percent-encoded UTF-8 text of 1 to ${spec.maxLength} characters`;
  }
}

/** Everything a URL may give, in words: describeRange plus an enum's extension values (400 details, docs). */
export function describeAllowed(spec: ParamSpec, limits: MediaLimits): string {
  const range = describeRange(spec, limits);
  if (spec.type === "integer" && spec.keywords?.length) return `${range}, or the extension ${spec.keywords.join(", ")}`;
  if (spec.type !== "enum" || !spec.extensionValues?.length) return range;
  return `${range}, or the extensions ${spec.extensionValues.join(", ")}`;
}

/** An enum's every accepted value: the spec's, then the extensions. */
export const enumValues = (spec: EnumSpec): readonly string[] =>
  spec.extensionValues ? [...spec.values, ...spec.extensionValues] : spec.values;

const INTEGER = /^[+-]?\d{1,12}$/;
const DECIMAL = /^[+-]?(?:\d{1,12}(?:\.\d{1,12})?|\.\d{1,12})$/;
const HEX = /^(?:[0-9a-fA-F]{3,4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$/;
const RGB = /^rgba?\(\s*(\d{1,3})\s*,\s*(\d{1,3})\s*,\s*(\d{1,3})\s*(?:,\s*(?:0|1|0?\.\d+)\s*)?\)$/i;

export interface Rgba {
  r: number;
  g: number;
  b: number;
  /** 0..1 */
  alpha: number;
}

/**
 * Parses a colour parameter value. Returns null when it is not a colour. Hex is written
 * without '#', as the spec asks; names and rgb() are delegated to color-string.
 */
export function parseColor(value: string, hexOnly = false): Rgba | null {
  if (HEX.test(value)) {
    const [r, g, b, a] = colorString.get.rgb(`#${value}`) ?? [];
    return r === undefined ? null : { r, g: g!, b: b!, alpha: a ?? 1 };
  }
  if (hexOnly) return null;
  const rgb = RGB.exec(value);
  if (rgb && [rgb[1], rgb[2], rgb[3]].some((c) => Number(c) > 255)) return null;
  if (!rgb && !/^[a-zA-Z]{3,30}$/.test(value)) return null;
  const parsed = colorString.get.rgb(value.toLowerCase());
  return parsed ? { r: parsed[0], g: parsed[1], b: parsed[2], alpha: parsed[3] } : null;
}

const hexByte = (n: number): string => n.toString(16).padStart(2, "0");

/**
 * The one spelling of a colour value: 6 lower-case hex digits, 8 when it is not opaque
 * (`fff`, `FFFFFF`, `rgb(255, 255, 255)`, `white` and `WHITE` are all `ffffff`). Every spelling
 * of a colour is one cache entry; parseColor reads it back as the same colour. Null when
 * `value` is not a colour.
 */
export function canonicalColor(value: string, hexOnly = false): string | null {
  if (HEX.test(value)) {
    // Hex digits expand without a round trip through a 0..1 alpha, so `fff8` keeps its 0x88.
    const digits = value.length <= 4 ? [...value].map((d) => d + d).join("") : value;
    const hex = digits.toLowerCase();
    return hex.length === 8 && hex.endsWith("ff") ? hex.slice(0, 6) : hex;
  }
  const rgba = parseColor(value, hexOnly);
  if (!rgba) return null;
  const alpha = Math.round(rgba.alpha * 255);
  return `${hexByte(rgba.r)}${hexByte(rgba.g)}${hexByte(rgba.b)}${alpha === 255 ? "" : hexByte(alpha)}`;
}

/** Parses one raw URL value against its spec: the value, or a message naming the allowed range. */
export function parseParamValue(
  spec: ParamSpec,
  raw: string,
  limits: MediaLimits,
): { ok: true; value: number | string } | { ok: false; message: string } {
  const fail = (why: string) => ({ ok: false as const, message: `${why}; allowed: ${describeAllowed(spec, limits)}` });
  switch (spec.type) {
    case "integer":
    case "number": {
      if (spec.type === "integer" && spec.keywords?.includes(raw)) return { ok: true, value: raw };
      const grammar = spec.type === "integer" ? INTEGER : DECIMAL;
      if (!grammar.test(raw)) {
        return fail(spec.type === "integer" && DECIMAL.test(raw) ? "must be a whole number" : "is not a number");
      }
      const n = Number(raw);
      const hi = upperBound(spec, limits);
      if (spec.exclusiveMin ? n <= spec.min : n < spec.min) return fail("is below the allowed range");
      if (hi !== undefined && n > hi) return fail("is above the allowed range");
      return { ok: true, value: Object.is(n, -0) ? 0 : n };
    }
    case "enum":
      return enumValues(spec).includes(raw) ? { ok: true, value: raw } : fail("is not an allowed value");
    case "color": {
      const colour = canonicalColor(raw, spec.hexOnly);
      return colour === null ? fail("is not a colour") : { ok: true, value: colour };
    }
    case "text": {
      if ([...raw].length > spec.maxLength) return fail(`is longer than ${spec.maxLength} characters`);
      // eslint-disable-next-line no-control-regex
      if (/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/.test(raw)) return fail("contains control characters");
      if (!spec.canonical) return { ok: true, value: raw };
      const value = spec.canonical(raw);
      return value === null ? fail("is not valid") : { ok: true, value };
    }
  }
}
