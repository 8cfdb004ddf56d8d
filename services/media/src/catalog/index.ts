import { Router } from "express";
import {
  acceptedFormats,
  MAX_STEPS,
  MEDIA_EXTENSIONS,
  describeRange,
  isSpecTransformation,
  paramSpecsOf,
  transformationNames,
  transformationSpecs,
  upperBound,
  type MediaLimits,
  type ParamSpec,
  type TransformationName,
} from "@media-platform/contracts";

/**
 * The transformation parameter table as data (GET /transformations): generated from the
 * contracts' `transformationSpecs`, with the safety caps in force for the open ("N+") ranges.
 */

export interface CatalogParam {
  name: string;
  type: ParamSpec["type"];
  description: string;
  /** The spec's "required" column. */
  required: boolean;
  /** May be left out of a URL: not required, or required with a default (avatar size). */
  omittable: boolean;
  default: number | string | null;
  /**
   * The spec's allowed values, in words (the 400 details use the same text, followed by an
   * enum's extension values).
   */
  range: string;
  /** Numeric bounds in force (integer and number types); null elsewhere. */
  min: number | null;
  /** True when min itself is not allowed (e.g. brightness must be > 0). */
  exclusiveMin: boolean;
  max: number | null;
  /** Set when the spec leaves the upper bound open ("N+") and a configurable safety cap applies. */
  cap: { name: keyof MediaLimits; value: number } | null;
  /** Enum values the spec lists; null for other types. */
  values: string[] | null;
  /** Integer parameters only, when they take words besides numbers (extensions, e.g. quality=auto). */
  keywords?: string[];
  /**
   * Enum parameters only: values beyond the spec's (extensions, e.g. crop gravity=focal), accepted
   * like `values`. Absent on other types, so the spec's table reads as before.
   */
  extensionValues?: string[];
  /** Colour parameters: hex only (true) or also rgb()/CSS names (false); null for other types. */
  hexOnly: boolean | null;
}

export interface CatalogTransformation {
  name: TransformationName;
  /** False for the spec's 16 transformations, true for ours beyond them (listed after them). */
  extension: boolean;
  description: string;
  params: CatalogParam[];
  /** A valid URL path for this transformation alone, with {assetId} and {ext} to fill in. */
  example: string;
}

export interface TransformationCatalog {
  /** URL grammar of the media service. */
  url: string;
  maxSteps: number;
  extensions: string[];
  /** Safety caps in force (configurable through MEDIA_MAX_* variables). */
  limits: MediaLimits;
  count: number;
  transformations: CatalogTransformation[];
  /**
   * The formats an original may be stored in and what their renditions are encoded as (HEIC and
   * camera RAW: JPEG; SVG and PDF: PNG; the rest their own), unless a format step says otherwise.
   */
  formats: ReturnType<typeof acceptedFormats>;
}

function catalogParam(name: string, spec: ParamSpec, limits: MediaLimits): CatalogParam {
  const numeric = spec.type === "integer" || spec.type === "number";
  const max = numeric ? upperBound(spec, limits) : undefined;
  const cap = numeric && spec.max === undefined && spec.cap ? { name: spec.cap, value: limits[spec.cap] } : null;
  return {
    name,
    type: spec.type,
    description: spec.description,
    required: spec.required,
    omittable: !spec.required || spec.default !== undefined,
    default: spec.default ?? null,
    range: describeRange(spec, limits),
    min: numeric ? spec.min : null,
    exclusiveMin: numeric ? spec.exclusiveMin === true : false,
    max: max ?? null,
    cap,
    values: spec.type === "enum" ? [...spec.values] : null,
    ...(spec.type === "enum" ? { extensionValues: [...(spec.extensionValues ?? [])] } : {}),
    ...(spec.type === "integer" && spec.keywords ? { keywords: [...spec.keywords] } : {}),
    hexOnly: spec.type === "color" ? spec.hexOnly === true : null,
  };
}

/** A value for an example URL: a readable size for pixel dimensions, else the default or a small in-range value. */
function exampleValue(spec: ParamSpec, limits: MediaLimits): number | string {
  if (spec.type === "text") return spec.default ?? spec.example;
  if (spec.type === "enum" || spec.type === "color")
    return spec.default ?? (spec.type === "enum" ? spec.values[0]! : "ffffff");
  const hi = upperBound(spec, limits) ?? Number.POSITIVE_INFINITY;
  if (spec.cap === "maxDimension") return Math.min(Math.max(256, spec.min), hi);
  if (spec.default !== undefined) return spec.default;
  const inRange = (v: number) => (spec.exclusiveMin ? v > spec.min : v >= spec.min) && v <= hi;
  if (inRange(1)) return 1;
  return spec.exclusiveMin ? spec.min + 1 : spec.min;
}

function examplePath(name: TransformationName, limits: MediaLimits): string {
  const parts: string[] = [name];
  const given: Record<string, number | string> = {};
  const specs = Object.entries(paramSpecsOf(name));
  for (const [key, spec] of specs) if (spec.required) given[key] = exampleValue(spec, limits);
  // A step whose parameters are all optional but that needs one of them (resize: width or
  // height; redact: faces or region) shows the first parameter that satisfies it.
  const check = (transformationSpecs[name] as { check?: (p: typeof given, l: MediaLimits) => string | undefined })
    .check;
  if (check?.(given, limits)) {
    const first = specs.find(([key, spec]) => !check({ ...given, [key]: exampleValue(spec, limits) }, limits));
    if (first) given[first[0]] = exampleValue(first[1], limits);
  }
  for (const [key] of specs) if (key in given) parts.push(`${key}=${given[key]}`);
  return `/${parts.join(":")}/{assetId}.{ext}`;
}

export function transformationCatalog(limits: MediaLimits): TransformationCatalog {
  const transformations = transformationNames.map((name) => ({
    name,
    extension: !isSpecTransformation(name),
    description: transformationSpecs[name].description,
    params: Object.entries(paramSpecsOf(name)).map(([key, spec]) => catalogParam(key, spec, limits)),
    example: examplePath(name, limits),
  }));
  return {
    url: "/<transformation>[:<param>=<value>...][/<transformation>...]/<assetId>.<extension>",
    maxSteps: MAX_STEPS,
    extensions: [...MEDIA_EXTENSIONS],
    limits: { ...limits },
    count: transformations.length,
    transformations,
    formats: acceptedFormats(),
  };
}

/**
 * `GET /transformations`: the catalog for the limits in force. Mount on the media app:
 * `app.use(catalogRouter(config.limits))`.
 */
export function catalogRouter(limits: MediaLimits): Router {
  const body = JSON.stringify(transformationCatalog(limits));
  const router = Router();
  router.get("/transformations", (_req, res) => {
    res.setHeader("Cache-Control", "public, max-age=300");
    res.type("application/json").send(body);
  });
  return router;
}
