import { IMAGE_EXTENSIONS, type ImageExtension } from "../image-formats";
import { defaultMediaLimits, parseParamValue, type MediaLimits } from "./params";
import {
  isTransformationName,
  paramSpecsOf,
  resolveParams,
  transformationNames,
  transformationSpecs,
  type GivenParams,
  type TransformationName,
} from "./transformations";

/**
 * Media URL grammar (docs/media-urls.md):
 *   /<step>[/<step>...]/<assetId>.<ext>
 *   step = <name>[:<param>=<value>...]
 * Steps apply left to right; one step is the spec's form, more is our chaining extension.
 */

export const MAX_STEPS = 8;
/** Any extension of a stored format; it never changes the output format. */
export const MEDIA_EXTENSIONS = IMAGE_EXTENSIONS;
export type MediaExtension = ImageExtension;

export type TransformationStep = {
  [N in TransformationName]: { name: N; params: GivenParams<N> };
}[TransformationName];

export interface MediaRequest {
  steps: TransformationStep[];
  assetId: string;
  extension: MediaExtension;
}

export interface MediaUrlIssue {
  /** `<transformation>.<param>`, `<transformation>`, `assetId`, `extension` or `path`. */
  path: string;
  message: string;
}

/** The URL does not follow the grammar or a parameter is out of range: a 400, never a 500. */
export class MediaUrlError extends Error {
  constructor(readonly issues: MediaUrlIssue[]) {
    super(issues.map((i) => `${i.path}: ${i.message}`).join("; "));
    this.name = "MediaUrlError";
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

function decode(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined;
  }
}

/** The parser's message for a name that is not a transformation (the client reuses it). */
export const unknownTransformationMessage = (name: string): string =>
  `unknown transformation ${JSON.stringify(name)}; known: ${transformationNames.join(", ")}`;

/** The parser's message for a parameter `transformation` does not take (the client reuses it). */
export function unknownParameterMessage(transformation: TransformationName): string {
  const known = Object.keys(paramSpecsOf(transformation));
  return `unknown parameter; ${transformation} accepts ${known.length ? known.join(", ") : "no parameters"}`;
}

/** Validates one step given as raw strings (from a URL) and returns its typed parameters. */
function parseStep(segment: string, limits: MediaLimits, issues: MediaUrlIssue[]): TransformationStep | undefined {
  const [rawName = "", ...rawParams] = segment.split(":");
  const name = decode(rawName) ?? rawName;
  if (!isTransformationName(name)) {
    issues.push({ path: NAME.test(name) ? name : "path", message: unknownTransformationMessage(name) });
    return undefined;
  }
  const specs = paramSpecsOf(name);
  const params: Record<string, number | string> = {};
  const before = issues.length;
  for (const rawParam of rawParams) {
    const eq = rawParam.indexOf("=");
    const key = decode(eq < 0 ? rawParam : rawParam.slice(0, eq));
    const value = eq < 0 ? undefined : decode(rawParam.slice(eq + 1));
    if (!key || value === undefined || value === "") {
      issues.push({ path: name, message: `parameter ${JSON.stringify(rawParam)} must be written name=value` });
      continue;
    }
    const spec = specs[key];
    if (!spec) {
      issues.push({ path: `${name}.${key}`, message: unknownParameterMessage(name) });
      continue;
    }
    if (key in params) {
      issues.push({ path: `${name}.${key}`, message: "parameter is repeated" });
      continue;
    }
    const parsed = parseParamValue(spec, value, limits);
    if (parsed.ok) params[key] = parsed.value;
    else issues.push({ path: `${name}.${key}`, message: `${JSON.stringify(value)} ${parsed.message}` });
  }
  for (const [key, spec] of Object.entries(specs)) {
    if (
      spec.required &&
      spec.default === undefined &&
      !(key in params) &&
      !issues.some((i) => i.path === `${name}.${key}`)
    ) {
      issues.push({ path: `${name}.${key}`, message: "required parameter is missing" });
    }
  }
  if (issues.length > before) return undefined;
  const check = (
    transformationSpecs[name] as {
      check?: (p: Record<string, number | string | undefined>, l: MediaLimits) => string | undefined;
    }
  ).check;
  // Cross-parameter rules see the resolved values: a defaulted parameter is never missing there.
  const crossIssue = check?.(
    resolveParams(name, params as GivenParams<typeof name>) as Record<string, number | string | undefined>,
    limits,
  );
  if (crossIssue) {
    issues.push({ path: name, message: crossIssue });
    return undefined;
  }
  return { name, params } as TransformationStep;
}

/** `<assetId>.<extension>`, the last segment of a media path (extension lower-cased). */
function splitFileSegment(last: string): { assetId: string; extension: string } {
  const dot = last.lastIndexOf(".");
  return {
    assetId: dot < 0 ? last : last.slice(0, dot),
    extension: (dot < 0 ? "" : last.slice(dot + 1)).toLowerCase(),
  };
}

/**
 * The asset id a media request-target names (its last path segment, query ignored), without
 * parsing its steps; undefined when that is not a UUID. For cache lookups of targets that were
 * validated when they were stored.
 */
export function mediaAssetIdOf(target: string): string | undefined {
  const query = target.indexOf("?");
  const path = query < 0 ? target : target.slice(0, query);
  const { assetId } = splitFileSegment(path.slice(path.lastIndexOf("/") + 1));
  return UUID.test(assetId) ? assetId.toLowerCase() : undefined;
}

/**
 * Parses a media request path (query string ignored). Throws MediaUrlError listing every
 * problem found; never throws anything else.
 */
export function parseMediaPath(path: string, limits: MediaLimits = defaultMediaLimits): MediaRequest {
  const pathname = path.split("?", 1)[0] ?? "";
  const segments = pathname.replace(/^\/+/, "").split("/");
  const last = segments.pop() ?? "";
  const issues: MediaUrlIssue[] = [];

  if (segments.length === 0) {
    throw new MediaUrlError([
      { path: "path", message: "expected /<transformation>[:<param>=<value>...]/<assetId>.<extension>" },
    ]);
  }
  if (segments.length > MAX_STEPS) {
    issues.push({ path: "path", message: `at most ${MAX_STEPS} transformations per URL (got ${segments.length})` });
  }

  const { assetId, extension } = parseMediaFile(last, issues);

  const steps: TransformationStep[] = [];
  for (const segment of segments.slice(0, MAX_STEPS)) {
    if (segment === "") {
      issues.push({ path: "path", message: "empty transformation segment" });
      continue;
    }
    const step = parseStep(segment, limits, issues);
    if (step) steps.push(step);
  }
  if (issues.length) throw new MediaUrlError(issues);
  return { steps, assetId, extension };
}

/**
 * The last segment of a media path, `<assetId>.<extension>`: the asset id lower-cased, the
 * extension as given lower-cased. Its problems are added to `issues` (the values are then not
 * usable). Exported for callers that reuse the parsed steps of a path seen before.
 */
export function parseMediaFile(
  segment: string,
  issues: MediaUrlIssue[],
): { assetId: string; extension: MediaExtension } {
  const { assetId, extension } = splitFileSegment(segment);
  if (!UUID.test(assetId)) issues.push({ path: "assetId", message: "asset id must be a UUID" });
  if (!(MEDIA_EXTENSIONS as readonly string[]).includes(extension)) {
    issues.push({ path: "extension", message: `extension must be one of ${MEDIA_EXTENSIONS.join(", ")}` });
  }
  return { assetId: assetId.toLowerCase(), extension: extension as MediaExtension };
}

function formatValue(value: number | string): string {
  if (typeof value === "number") {
    const s = String(value);
    return s.includes("e") ? value.toFixed(12).replace(/\.?0+$/, "") : s;
  }
  return encodeURIComponent(value).replace(/%2C/gi, ",");
}

/** Formats one step: `name[:param=value...]`, parameters in table order. */
export function formatStep(step: TransformationStep): string {
  const given = step.params as Record<string, number | string | undefined>;
  const parts = Object.keys(paramSpecsOf(step.name))
    .filter((k) => given[k] !== undefined)
    .map((k) => `${k}=${formatValue(given[k]!)}`);
  return [step.name, ...parts].join(":");
}

/** Inverse of parseMediaPath: parseMediaPath(formatMediaPath(r)) deep-equals r for a valid r. */
export function formatMediaPath(request: MediaRequest): string {
  return `/${request.steps.map(formatStep).join("/")}/${request.assetId}.${request.extension}`;
}

/**
 * The one spelling the media service accepts for a parsed request, keeping the parameter order
 * as written (the spec fixes none): names and values without percent-encoding where none is
 * needed, numbers as JavaScript prints them (no sign, no leading or trailing zeros), the asset
 * id and extension in lower case, colours as canonicalColor writes them. Two URLs that mean the same rendition in other spellings would otherwise
 * be two cache entries, without end.
 */
export function canonicalMediaPath(request: MediaRequest): string {
  return `/${request.steps.map(canonicalStep).join("/")}/${request.assetId}.${request.extension}`;
}

/** One step in canonicalMediaPath's spelling (parameters in the order written). */
export function canonicalStep(step: TransformationStep): string {
  const given = step.params as Record<string, number | string | undefined>;
  const specs = paramSpecsOf(step.name);
  const parts = Object.keys(given)
    .filter((k) => given[k] !== undefined && specs[k] !== undefined)
    .map((k) => `${k}=${formatValue(given[k]!)}`);
  return [step.name, ...parts].join(":");
}

/** Validates typed steps (e.g. from the client) with the same rules as a URL. */
export function validateMediaRequest(request: MediaRequest, limits: MediaLimits = defaultMediaLimits): MediaRequest {
  return parseMediaPath(formatMediaPath(request), limits);
}
