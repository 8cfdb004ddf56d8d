import { defaultMediaLimits, type MediaLimits } from "./params";
import {
  canonicalMediaPath,
  canonicalStep,
  formatStep,
  MAX_STEPS,
  MediaUrlError,
  parseMediaPath,
  type MediaRequest,
  type MediaUrlIssue,
  type TransformationStep,
} from "./url";

/**
 * Presets (extension, issue 11): named step chains from the media service's MEDIA_PRESETS_FILE,
 * used as a step of their own:
 *   /preset:name=card/<assetId>.<ext>
 *   /resize:width=800/preset:name=watermark/<assetId>.<ext>     (inside a chain)
 * A preset segment is replaced by the preset's steps before the URL is parsed, so a preset
 * obeys exactly the rules of the steps it stands for, MAX_STEPS included (counted after
 * expansion). Presets do not nest.
 *
 * The file (JSON or YAML) maps names to steps, written as in a URL, either as one path or as a
 * list of segments:
 *   card: "resize:width=400:height=300:fit=cover/sharpen:value=0.5"
 *   hero: ["resize:width=1600", "sharpen:value=1"]
 */

export const PRESET_STEP = "preset";
/** Preset names: letters, digits, `-` and `_`, starting with a letter or digit, at most 64. */
export const PRESET_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/** Validated presets: name -> steps. */
export type PresetTable = Readonly<Record<string, readonly TransformationStep[]>>;

/** A preset file whose content is not a valid table; the message names the preset and the step. */
export class PresetDefinitionError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join("; "));
    this.name = "PresetDefinitionError";
  }
}

const PLACEHOLDER_ID = "00000000-0000-4000-8000-000000000000";

/**
 * Validates a parsed preset file (any JSON/YAML value) with the same contracts as URLs, under
 * the limits in force. Throws PresetDefinitionError listing every problem.
 */
export function compilePresets(definitions: unknown, limits: MediaLimits = defaultMediaLimits): PresetTable {
  if (typeof definitions !== "object" || definitions === null || Array.isArray(definitions)) {
    throw new PresetDefinitionError(["the file must map preset names to steps (an object at the top level)"]);
  }
  const problems: string[] = [];
  const table: Record<string, TransformationStep[]> = {};
  for (const [name, value] of Object.entries(definitions)) {
    const where = `preset ${JSON.stringify(name)}`;
    if (!PRESET_NAME.test(name)) {
      problems.push(`${where}: a name is 1-64 letters, digits, - or _, starting with a letter or digit`);
      continue;
    }
    const segments =
      typeof value === "string"
        ? value.replace(/^\/+|\/+$/g, "").split("/")
        : Array.isArray(value) && value.every((v) => typeof v === "string")
          ? (value as string[])
          : undefined;
    if (!segments || segments.length === 0 || segments.some((s) => s === "")) {
      problems.push(`${where}: steps must be a non-empty "step/step" string or a list of step strings`);
      continue;
    }
    if (segments.some((s) => s.split(":", 1)[0] === PRESET_STEP)) {
      problems.push(`${where}: presets cannot contain presets`);
      continue;
    }
    try {
      table[name] = parseMediaPath(`/${segments.join("/")}/${PLACEHOLDER_ID}.jpg`, limits).steps;
    } catch (err) {
      if (!(err instanceof MediaUrlError)) throw err;
      for (const issue of err.issues) problems.push(`${where}: ${issue.path}: ${issue.message}`);
    }
  }
  if (problems.length) throw new PresetDefinitionError(problems);
  return table;
}

/** The preset name of a `preset:name=<name>` segment, or undefined for any other segment. */
function presetSegment(segment: string, issues: MediaUrlIssue[]): string | undefined {
  const [name, ...params] = segment.split(":");
  if (name !== PRESET_STEP) return undefined;
  if (params.length !== 1 || !params[0]!.startsWith("name=") || params[0]!.length === 5) {
    issues.push({ path: PRESET_STEP, message: "write a preset as preset:name=<preset name>" });
    return "";
  }
  return decodeURIComponent(params[0]!.slice(5));
}

/** True when every step segment of the path is a preset (MEDIA_PRESETS_ONLY). */
export function isPresetPath(path: string): boolean {
  const segments = (path.split("?", 1)[0] ?? "").replace(/^\/+/, "").split("/");
  segments.pop();
  return segments.length > 0 && segments.every((s) => /^preset:name=[^:/]+$/.test(s));
}

/**
 * Parses a media path whose steps may include presets: each `preset:name=<name>` segment is
 * replaced by the preset's steps, then the whole path is parsed by parseMediaPath. An unknown
 * preset is a 400 naming `preset.name` and the known ones.
 */
export function parseMediaPathWithPresets(
  path: string,
  presets: PresetTable,
  limits: MediaLimits = defaultMediaLimits,
): MediaRequest {
  const pathname = path.split("?", 1)[0] ?? "";
  if (!pathname.includes(`${PRESET_STEP}:`)) return parseMediaPath(path, limits);
  const segments = pathname.replace(/^\/+/, "").split("/");
  const file = segments.pop() ?? "";
  const issues: MediaUrlIssue[] = [];
  const expanded: string[] = [];
  for (const segment of segments) {
    let name: string | undefined;
    try {
      name = presetSegment(segment, issues);
    } catch {
      issues.push({ path: `${PRESET_STEP}.name`, message: "is not valid percent-encoding" });
      continue;
    }
    if (name === undefined) {
      expanded.push(segment);
    } else if (name !== "") {
      const steps = Object.prototype.hasOwnProperty.call(presets, name) ? presets[name] : undefined;
      if (steps) expanded.push(...steps.map(formatStep));
      else {
        const known = Object.keys(presets);
        issues.push({
          path: `${PRESET_STEP}.name`,
          message: `unknown preset ${JSON.stringify(name)}; ${known.length ? `known: ${known.join(", ")}` : "no presets are configured"}`,
        });
      }
    }
  }
  if (issues.length) throw new MediaUrlError(issues);
  if (expanded.length > MAX_STEPS) {
    throw new MediaUrlError([
      {
        path: "path",
        message: `at most ${MAX_STEPS} transformations per URL, presets expanded (got ${expanded.length})`,
      },
    ]);
  }
  return parseMediaPath(`/${[...expanded, file].join("/")}`, limits);
}

/**
 * canonicalMediaPath for a path that may contain presets, compared before expansion: a preset
 * segment is spelt `preset:name=<name>` (percent-decoded: names need no encoding), every other
 * step as canonicalMediaPath spells it, in the order written. So `/preset:name=card/<id>.jpg`
 * is canonical as written, while the steps it stands for never appear in the URL.
 * `request` is parseMediaPathWithPresets(path, presets): it supplies the parsed steps.
 */
export function canonicalMediaPathWithPresets(path: string, request: MediaRequest, presets: PresetTable): string {
  const pathname = path.split("?", 1)[0] ?? "";
  if (!pathname.includes(`${PRESET_STEP}:`)) return canonicalMediaPath(request);
  const segments = pathname.replace(/^\/+/, "").split("/");
  segments.pop();
  const canonical: string[] = [];
  let next = 0;
  for (const segment of segments) {
    // The path parsed already, so every preset segment is well formed and names a known preset.
    const name = presetSegment(segment, []);
    if (name === undefined) {
      canonical.push(canonicalStep(request.steps[next]!));
      next += 1;
    } else {
      canonical.push(`${PRESET_STEP}:name=${encodeURIComponent(name)}`);
      next += presets[name]?.length ?? 0;
    }
  }
  return `/${canonical.join("/")}/${request.assetId}.${request.extension}`;
}
