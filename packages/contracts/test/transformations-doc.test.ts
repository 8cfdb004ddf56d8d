import { readFileSync } from "node:fs";
import path from "node:path";
import { transformationNames } from "@media-platform/contracts";
import { renderTransformationsDoc } from "../../../scripts/transformations-doc";

describe("docs/transformations.md", () => {
  const committed = readFileSync(path.resolve(__dirname, "../../../docs/transformations.md"), "utf8");

  it("is the generator's output for the current parameter table (run `pnpm docs:transformations`)", () => {
    expect(committed).toBe(renderTransformationsDoc());
  });

  it("documents all 16 transformations (and the extensions) with an example URL each", () => {
    expect(transformationNames).toHaveLength(24);
    for (const name of transformationNames) {
      expect(committed).toContain(`## ${name}\n`);
      expect(committed).toMatch(new RegExp(`Example: \`/${name.replace(/[-]/g, "\\-")}[:/]`));
    }
  });
});
