import {
  canonicalMediaPathWithPresets,
  compilePresets,
  defaultMediaLimits,
  MediaUrlError,
  parseMediaPathWithPresets,
  type PresetTable,
} from "@media-platform/contracts";
import { ParsedMediaPaths } from "../src/delivery/media-paths";

const ID = "0f8fad5b-d9cb-469f-a165-70867728950e";
const OTHER = "7c9e6679-7425-40de-944b-e07fc1f90ae7";
const presets: PresetTable = compilePresets({ card: "thumbnail:size=320/grayscale" });

/** What the full parse answers: the request and canonical path, or the issues it throws. */
function fullParse(path: string) {
  try {
    const request = parseMediaPathWithPresets(path, presets, defaultMediaLimits);
    return { request, canonical: canonicalMediaPathWithPresets(path, request, presets) };
  } catch (err) {
    if (err instanceof MediaUrlError) return { issues: err.issues };
    throw err;
  }
}

function memoParse(paths: ParsedMediaPaths, path: string) {
  try {
    const { request, canonical } = paths.parse(path);
    return { request, canonical };
  } catch (err) {
    if (err instanceof MediaUrlError) return { issues: err.issues };
    throw err;
  }
}

describe("ParsedMediaPaths (steps parsed once per step string)", () => {
  it("answers exactly what the full parse answers, on first sight and on every later path with the same steps", () => {
    const paths = new ParsedMediaPaths(presets, defaultMediaLimits);
    const cases = [
      `/thumbnail:size=256/${ID}.jpg`,
      `/thumbnail:size=256/${OTHER}.png`,
      `/thumbnail:size=256/${OTHER.toUpperCase()}.JPG`, // valid, not canonical
      `/thumbnail:size=256/not-a-uuid.jpg`,
      `/thumbnail:size=256/${ID}.bmp`,
      `/thumbnail:size=256/${ID}`,
      `/thumbnail:size=256/${ID}.jpg?v=3`,
      `/thumbnail:size=0256/${ID}.jpg`, // other spelling of valid steps
      `/thumbnail:size=0256/${OTHER}.jpg`,
      `/crop:width=100:height=80:gravity=north/grayscale/${ID}.webp`,
      `/crop:width=100:height=80:gravity=north/grayscale/${OTHER}.webp`,
      `/preset:name=card/${ID}.jpg`,
      `/preset:name=card/${OTHER}.jpg`,
      `/preset:name=nope/${ID}.jpg`,
      `/thumbnail:size=99999/${ID}.jpg`,
      `/thumbnail:size=99999/${OTHER}.jpg`,
      `//thumbnail:size=256/${ID}.jpg`,
      `/blur/${ID}.jpg`,
    ];
    for (const round of [1, 2]) {
      for (const path of cases) {
        expect({ round, path, ...memoParse(paths, path) }).toEqual({ round, path, ...fullParse(path) });
      }
    }
  });

  it("hands later paths the same frozen steps, with their own asset id and extension", () => {
    const paths = new ParsedMediaPaths(presets, defaultMediaLimits);
    const a = paths.parse(`/fit:width=800:height=800/${ID}.jpg`);
    const b = paths.parse(`/fit:width=800:height=800/${OTHER}.png`);
    expect(b.request.steps).toBe(a.request.steps);
    expect(b.request).toEqual({ steps: a.request.steps, assetId: OTHER, extension: "png" });
    expect(b.canonical).toBe(`/fit:width=800:height=800/${OTHER}.png`);
    expect(Object.isFrozen(b.request.steps)).toBe(true);
    expect(() => {
      (b.request.steps[0]!.params as Record<string, unknown>).width = 1;
    }).toThrow(TypeError);
    expect(b.request.steps[0]!.params).toEqual({ width: 800, height: 800 });
  });

  it("keeps invalid steps out (every later request is parsed in full and refused with every issue)", () => {
    const paths = new ParsedMediaPaths(presets, defaultMediaLimits);
    for (const id of [ID, OTHER]) {
      expect(() => paths.parse(`/thumbnail:size=0/${id}.jpg`)).toThrow(MediaUrlError);
      const refused = memoParse(paths, `/thumbnail:size=0:mode=x/${id}.jpg`) as { issues?: { path: string }[] };
      expect(refused.issues?.map((i) => i.path)).toEqual(["thumbnail.size", "thumbnail.mode"]);
    }
  });

  it("holds at most `capacity` step strings, least recently used out first", () => {
    const paths = new ParsedMediaPaths(presets, defaultMediaLimits, 2);
    const first = paths.parse(`/thumbnail:size=100/${ID}.jpg`).request.steps;
    paths.parse(`/thumbnail:size=200/${ID}.jpg`);
    expect(paths.parse(`/thumbnail:size=100/${OTHER}.jpg`).request.steps).toBe(first); // 100 is now the most recent
    const threeFirst = paths.parse(`/thumbnail:size=300/${ID}.jpg`).request.steps; // evicts 200
    expect(paths.parse(`/thumbnail:size=100/${ID}.jpg`).request.steps).toBe(first);
    const again = paths.parse(`/thumbnail:size=200/${ID}.jpg`).request.steps;
    expect(paths.parse(`/thumbnail:size=200/${OTHER}.jpg`).request.steps).toBe(again);
    // 300 was evicted by 200's return: parsed afresh, equal but not the same object.
    const three = paths.parse(`/thumbnail:size=300/${OTHER}.jpg`).request.steps;
    expect(three).toEqual([{ name: "thumbnail", params: { size: 300 } }]);
    expect(three).not.toBe(threeFirst);
  });
});
