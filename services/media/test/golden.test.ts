import { RENDERER_VERSION } from "../src/cache/entry";
import { driftOf, GOLDEN_CASES, goldenInputs, readGoldenSet, renderGoldenSet, type GoldenSet } from "./support/golden";
import { transformationNames } from "@media-platform/contracts";

/**
 * The output-drift guard (support/golden.ts): fails when the installed sharp/libvips renders an
 * output of the golden set beyond its budget. Intended changes: `pnpm golden:update`.
 */
describe("output-drift guard", () => {
  const golden = readGoldenSet();
  let current: GoldenSet;
  beforeAll(async () => {
    current = await renderGoldenSet(golden);
  });

  it("covers every transformation of the contracts (the spec's 16 and ours) on 5 photos", () => {
    const covered = new Set(Object.values(GOLDEN_CASES).map((steps) => steps.split(":", 1)[0]));
    expect(transformationNames.filter((name) => !covered.has(name))).toEqual([]);
    expect(goldenInputs()).toHaveLength(5);
    expect(Object.keys(golden.outputs)).toHaveLength(Object.keys(GOLDEN_CASES).length * 5);
  });

  it("renders every output within its budget (bytes, SSIMULACRA2 of the fingerprint) or run `pnpm golden:update`", () => {
    const drifts = driftOf(golden, current).map((d) => `${d.key}: ${d.reasons.join("; ")}`);
    const note =
      golden.renderer === RENDERER_VERSION ? "" : ` (recorded with ${golden.renderer}; now ${RENDERER_VERSION})`;
    expect({ note, drifts }).toEqual({ note, drifts: [] });
  });

  it("the guard catches drift: an output re-encoded at another quality is beyond its budget", () => {
    const key = Object.keys(golden.outputs).find((k) => k.startsWith("format webp |"))!;
    const moved: GoldenSet = {
      ...golden,
      outputs: {
        ...golden.outputs,
        [key]: { ...golden.outputs[key]!, sha256: "x", bytes: golden.outputs[key]!.bytes * 2 },
      },
    };
    expect(driftOf(golden, moved)).toEqual([
      { key, reasons: [expect.stringMatching(/^bytes \d+ -> \d+ \(budget \+-\d+\)$/)] },
    ]);
    const blurred = Buffer.from(golden.outputs[key]!.fingerprint, "base64").map((v, i, all) =>
      i >= 3 ? (v + all[i - 3]!) >> 1 : v,
    );
    const smeared: GoldenSet = {
      ...golden,
      outputs: {
        ...golden.outputs,
        [key]: {
          ...golden.outputs[key]!,
          sha256: "y",
          fingerprint: Buffer.from(blurred.map((v) => 255 - v)).toString("base64"),
        },
      },
    };
    expect(driftOf(golden, smeared)[0]!.reasons).toEqual([expect.stringMatching(/^SSIMULACRA2 -?\d+\.\d < 85$/)]);
  });
});
