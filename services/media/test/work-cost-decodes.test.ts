import { defaultMediaLimits, parseMediaPath } from "@media-platform/contracts";
import { OVERLAY_DECODE_NS_PER_PIXEL, STEP_NS_PER_PIXEL, SVG_NS_PER_ELEMENT } from "../src/render/pipeline/cost";
import { TransformationInputError } from "../src/render/errors";
import { planRender } from "../src/render/pipeline/plan";

/**
 * What the pixel count of the base does not show: an overlay's own original is decoded whole,
 * once per layer (each opacity, scale and size), and an SVG costs by what it draws.
 */
const ID = "0f8fad5b-d9cb-469f-a165-70867728950e";
const OVERLAY = "6e8bc430-9c3a-11d9-9669-0800200c9a66";
const stepsOf = (url: string) => parseMediaPath(`/${url}/${ID}.jpg`, defaultMediaLimits).steps;
const BASE = { width: 1000, height: 1000 };

describe("cost of overlay decodes and SVG drawings (pipeline/cost.ts)", () => {
  it("prices each layer an overlay makes as a decode of its whole original (24 MP, three opacities)", () => {
    const steps = stepsOf([0.5, 0.7, 0.9].map((opacity) => `overlay:asset=${OVERLAY}:opacity=${opacity}`).join("/"));
    const overlays = new Map([[OVERLAY, { pixels: 24_000_000 }]]);
    const plan = planRender(steps, BASE, defaultMediaLimits, { format: "jpeg", overlays });
    const drawing = 3 * BASE.width * BASE.height * STEP_NS_PER_PIXEL.overlay;
    const decodes = 3 * 24_000_000 * OVERLAY_DECODE_NS_PER_PIXEL;
    expect(plan.workCost).toBeGreaterThanOrEqual((drawing + decodes) / 1e6);
    // The same layer twice is decoded once (the render keeps it).
    const twice = planRender(stepsOf(`overlay:asset=${OVERLAY}/overlay:asset=${OVERLAY}`), BASE, defaultMediaLimits, {
      format: "jpeg",
      overlays,
    });
    const once = planRender(stepsOf(`overlay:asset=${OVERLAY}`), BASE, defaultMediaLimits, {
      format: "jpeg",
      overlays,
    });
    expect(twice.workCost - once.workCost).toBeCloseTo((BASE.width * BASE.height * STEP_NS_PER_PIXEL.overlay) / 1e6, 6);
  });

  it("prices a 64 px base under eight opacities of a 100 MP overlay at seconds, and refuses it (400, naming the overlay) above the budget", () => {
    // Eight steps: the most a URL holds.
    const steps = stepsOf(Array.from({ length: 8 }, (_, i) => `overlay:asset=${OVERLAY}:opacity=0.${i + 1}`).join("/"));
    const overlays = new Map([[OVERLAY, { pixels: 100_000_000 }]]);
    const base = { width: 64, height: 64 };
    const plan = planRender(steps, base, defaultMediaLimits, { format: "jpeg", overlays });
    expect(plan.workCost).toBeGreaterThanOrEqual((8 * 100_000_000 * OVERLAY_DECODE_NS_PER_PIXEL) / 1e6);
    const tight = { ...defaultMediaLimits, maxWorkCost: 5000 };
    const refused = () => planRender(steps, base, tight, { format: "jpeg", overlays });
    expect(refused).toThrow(TransformationInputError);
    expect(refused).toThrow(/the most expensive step is decoding overlay originals \(8 layers, 800\.0 MP\)/);
  });

  it("prices an SVG by its elements, and an SVG overlay's elements once per layer", () => {
    const plain = planRender(stepsOf("resize:width=200"), BASE, defaultMediaLimits, { format: "png" });
    const svg = planRender(stepsOf("resize:width=200"), BASE, defaultMediaLimits, {
      format: "png",
      svgElements: 20_000,
    });
    expect(svg.workCost - plain.workCost).toBeCloseTo((20_000 * SVG_NS_PER_ELEMENT) / 1e6, 6);
    const overlays = new Map([[OVERLAY, { pixels: 10_000, svgElements: 5000 }]]);
    const layered = planRender(
      stepsOf(`overlay:asset=${OVERLAY}:opacity=0.5/overlay:asset=${OVERLAY}`),
      BASE,
      defaultMediaLimits,
      {
        format: "png",
        overlays,
      },
    );
    expect(layered.workCost).toBeGreaterThanOrEqual((2 * 5000 * SVG_NS_PER_ELEMENT) / 1e6);
  });
});
