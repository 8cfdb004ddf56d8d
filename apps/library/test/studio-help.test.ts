/**
 * The studio's words: every transformation and parameter of the contracts' table has its own
 * text written for users, free of the developer wording the catalog keeps for the docs.
 */
import { transformationSpecs } from "@media-platform/contracts";
import { STUDIO_HELP } from "../src/studio-help";

const DEVELOPER_WORDS = /Extension|spec\b|MEDIA_|PATCH|\/v1\/|libvips|SSIMULACRA|maxDimension|OpenCV|ImageMagick/;

it.each(Object.entries(transformationSpecs))(
  "has a label, a description and a tooltip per parameter for %s",
  (name, spec) => {
    const help = STUDIO_HELP[name];
    expect(help).toBeDefined();
    expect(help!.label.length).toBeGreaterThan(2);
    expect(help!.about).not.toMatch(DEVELOPER_WORDS);
    expect(Object.keys(help!.params).sort()).toEqual(Object.keys(spec.params).sort());
    for (const text of Object.values(help!.params)) {
      expect(text.length).toBeGreaterThan(10);
      expect(text).not.toMatch(DEVELOPER_WORDS);
    }
  },
);

it("has nothing for a step the table does not have", () => {
  expect(Object.keys(STUDIO_HELP).sort()).toEqual(Object.keys(transformationSpecs).sort());
});
