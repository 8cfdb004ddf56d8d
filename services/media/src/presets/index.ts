import { readFileSync } from "node:fs";
import { Router } from "express";
import YAML from "yaml";
import {
  compilePresets,
  formatStep,
  isOriginalPath,
  isPresetPath,
  DomainError,
  PresetDefinitionError,
  type MediaLimits,
  type PresetTable,
} from "@media-platform/contracts";
import { pathOf } from "../delivery/media-paths";
import { eagerPresetsOf, splitPresetDefinitions, type EagerPreset } from "./eager";

export type { EagerPreset } from "./eager";

/**
 * MEDIA_PRESETS_FILE: read once at start-up, parsed as YAML (a superset of JSON, so both
 * formats work) and validated with the URL contracts under the limits in force. Returns the
 * table, or a list of messages naming the file, the preset and the step that is wrong.
 */
export function loadPresetsFile(
  file: string,
  limits: MediaLimits,
): { ok: true; presets: PresetTable; eager: EagerPreset[] } | { ok: false; problems: string[] } {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    return { ok: false, problems: [`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`] };
  }
  let parsed: unknown;
  try {
    parsed = YAML.parse(text);
  } catch (err) {
    return { ok: false, problems: [`${file} is neither JSON nor YAML: ${(err as Error).message.split("\n", 1)[0]}`] };
  }
  // The object form ({steps, eager, widths}) is read here; its steps are compiled like the plain forms.
  const split = splitPresetDefinitions(parsed ?? {});
  const problems = [...split.problems];
  let presets: PresetTable = {};
  try {
    presets = compilePresets(split.plain, limits);
  } catch (err) {
    if (!(err instanceof PresetDefinitionError)) throw err;
    problems.push(...err.problems);
  }
  const eager = eagerPresetsOf(split.eager, presets, limits);
  problems.push(...eager.problems);
  if (problems.length) return { ok: false, problems: problems.map((p) => `${file}: ${p}`) };
  return { ok: true, presets, eager: eager.eager };
}

export interface PresetListing {
  count: number;
  presets: Array<{ name: string; steps: string; example: string }>;
  /** MEDIA_PRESETS_ONLY: every other media URL answers 403. */
  presetsOnly: boolean;
}

export function presetListing(presets: PresetTable, presetsOnly: boolean): PresetListing {
  const list = Object.entries(presets).map(([name, steps]) => ({
    name,
    steps: steps.map(formatStep).join("/"),
    example: `/preset:name=${name}/{assetId}.{ext}`,
  }));
  return { count: list.length, presets: list, presetsOnly };
}

/** `GET /presets`: the configured presets with the steps each stands for. */
export function presetsRouter(presets: PresetTable, presetsOnly: boolean): Router {
  const body = JSON.stringify(presetListing(presets, presetsOnly));
  const router = Router();
  router.get("/presets", (_req, res) => {
    res.setHeader("Cache-Control", "public, max-age=300");
    res.type("application/json").send(body);
  });
  return router;
}

/** Query parameters a presets-only URL may carry: the signature's own (see contracts' signing). */
const PRESETS_ONLY_QUERY = /^(?:(?:exp=\d{1,12}&)?sig=[A-Za-z0-9_-]*)?$/;

/**
 * MEDIA_PRESETS_ONLY: bounds the URL space a CDN can be made to fill. A media URL passes only
 * when each of its steps is a preset and its query is at most the signature (`exp`, `sig`): no
 * free-form steps, no cache busters, no originals. Anything else is the 403 returned here.
 * `signed` says whether MEDIA_SIGNING_KEY is set: without it nothing checks a `sig`, so any query
 * is refused (each `?sig=<anything>` would otherwise be one more cache entry). Fails closed.
 */
export function presetsOnlyGate(target: string, signed = false): PresetsOnlyError | undefined {
  const path = pathOf(target);
  const query = target.length > path.length ? target.slice(path.length + 1) : "";
  const queryAllowed = signed ? PRESETS_ONLY_QUERY.test(query) : query === "";
  if (!isOriginalPath(path) && isPresetPath(path) && queryAllowed) return undefined;
  return new PresetsOnlyError();
}

/** MEDIA_PRESETS_ONLY and a URL that is not made of presets (or carries another query): answered 403. */
export class PresetsOnlyError extends DomainError<"presets-only"> {
  readonly code = "presets-only";

  constructor() {
    super(
      "This service only serves presets (MEDIA_PRESETS_ONLY): use /preset:name=<preset>/<assetId>.<ext>, with no query other than the signature; GET /presets lists them",
    );
    this.name = "PresetsOnlyError";
  }
}
