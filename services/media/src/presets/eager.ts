import { canonicalStep, PRESET_NAME, type MediaLimits, type PresetTable } from "@media-platform/contracts";

/**
 * An eager preset (MEDIA_PRESETS_FILE, object form with `eager: true`): rendered into the cache
 * tiers right after an upload or replace, so its first public request is a HIT. `paths` are the
 * step parts of the URLs rendered (no asset file segment): `preset:name=<name>` for a preset
 * without `widths`, else one canonical path per width, the width written in place of the width
 * of the preset's first `resize` step (the srcset URLs a page asks for).
 */
export interface EagerPreset {
  name: string;
  paths: string[];
}

/**
 * The object form of a preset, `{steps, eager?, widths?}`, split from the plain forms: the
 * steps of every preset go to compilePresets (contracts) as before; the eager flags and widths
 * come back here. Returns the plain table and the raw eager entries, or the problems found.
 */
export function splitPresetDefinitions(definitions: unknown): {
  plain: unknown;
  eager: Array<{ name: string; widths?: number[] }>;
  problems: string[];
} {
  if (typeof definitions !== "object" || definitions === null || Array.isArray(definitions)) {
    return { plain: definitions, eager: [], problems: [] };
  }
  const plain: Record<string, unknown> = {};
  const eager: Array<{ name: string; widths?: number[] }> = [];
  const problems: string[] = [];
  for (const [name, value] of Object.entries(definitions)) {
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      plain[name] = value;
      continue;
    }
    const where = `preset ${JSON.stringify(name)}`;
    const { steps, eager: isEager, widths, ...rest } = value as Record<string, unknown>;
    const unknown = Object.keys(rest);
    if (unknown.length)
      problems.push(`${where}: unknown field(s) ${unknown.join(", ")} (allowed: steps, eager, widths)`);
    if (isEager !== undefined && typeof isEager !== "boolean") problems.push(`${where}: eager must be true or false`);
    if (
      widths !== undefined &&
      !(Array.isArray(widths) && widths.length > 0 && widths.every((w) => Number.isInteger(w) && (w as number) > 0))
    ) {
      problems.push(`${where}: widths must be a non-empty list of positive whole numbers`);
    }
    plain[name] = steps;
    if (isEager === true && PRESET_NAME.test(name)) {
      eager.push({ name, ...(Array.isArray(widths) && { widths: [...new Set(widths as number[])] }) });
    }
  }
  return { plain, eager, problems };
}

/**
 * The URLs of each eager preset, checked against the compiled table: `widths` needs a first
 * `resize` step that has a width, and every width within MEDIA_MAX_DIMENSION.
 */
export function eagerPresetsOf(
  entries: Array<{ name: string; widths?: number[] }>,
  presets: PresetTable,
  limits: MediaLimits,
): { eager: EagerPreset[]; problems: string[] } {
  const eager: EagerPreset[] = [];
  const problems: string[] = [];
  for (const { name, widths } of entries) {
    const steps = presets[name];
    if (!steps) continue;
    if (!widths) {
      eager.push({ name, paths: [`preset:name=${name}`] });
      continue;
    }
    const where = `preset ${JSON.stringify(name)}`;
    const first = steps[0];
    if (first?.name !== "resize" || (first.params as { width?: number }).width === undefined) {
      problems.push(`${where}: widths needs a first step resize with a width`);
      continue;
    }
    const tooWide = widths.filter((w) => w > limits.maxDimension);
    if (tooWide.length) {
      problems.push(`${where}: widths ${tooWide.join(", ")} exceed MEDIA_MAX_DIMENSION (${limits.maxDimension})`);
      continue;
    }
    eager.push({
      name,
      paths: widths.map((width) => {
        const resized = { ...first, params: { ...first.params, width } } as typeof first;
        return [resized, ...steps.slice(1)].map(canonicalStep).join("/");
      }),
    });
  }
  return { eager, problems };
}
