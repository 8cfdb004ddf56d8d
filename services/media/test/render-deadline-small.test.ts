import sharp from "sharp";
import { defaultMediaLimits, parseMediaPath } from "@media-platform/contracts";
import { render, type RenderDeps } from "../src/render/pipeline/render";
import { isolatingRender, type RenderProcessPool } from "../src/render/pipeline/killable-render";

const ID = "5a1f3c2e-8b4d-4e6f-9a7b-1c2d3e4f5a6b";
const deps: RenderDeps = {
  limits: defaultMediaLimits,
  limitInputPixels: 100_000_000,
  pixels: {
    run: async (kernel: string) => {
      throw new Error(`no pixel kernels here (${kernel})`);
    },
  },
  faces: { detect: async () => [] },
};

describe("every render's libvips work has the request's deadline", () => {
  afterEach(() => jest.restoreAllMocks());

  it.each([
    [
      "a 32 px wide rendition of a 64x48 JPEG",
      "image/jpeg",
      () =>
        sharp({ create: { width: 64, height: 48, channels: 3, background: "#36c" } })
          .jpeg()
          .toBuffer(),
    ],
    [
      "a 32 px wide rendition of an SVG",
      "image/svg+xml",
      async () =>
        Buffer.from(
          '<svg xmlns="http://www.w3.org/2000/svg" width="64" height="48"><rect width="64" height="48" fill="#36c"/></svg>',
        ),
    ],
  ])("%s (far below 32 MP of planned work)", async (_name, contentType, original) => {
    const timeout = jest.spyOn(sharp.prototype, "timeout");
    const bytes = await original();
    const url = `/resize:width=32/${ID}.png`;
    const rendition = await render(
      { original: bytes, contentType, steps: parseMediaPath(url).steps, cacheKey: url },
      deps,
      { deadline: Date.now() + 5000 },
    );
    expect(rendition.width).toBe(32);
    expect(timeout).toHaveBeenCalledWith({ seconds: expect.any(Number) });
    for (const [options] of timeout.mock.calls) expect((options as { seconds: number }).seconds).toBeLessThanOrEqual(5);
  });
});

describe("an SVG priced by its elements above MEDIA_ISOLATED_RENDER_COST goes to a render process whole", () => {
  it("hands the render process every byte, also those read to count the elements", async () => {
    const rects = Array.from({ length: 200 }, (_, i) => `<rect x="${i % 64}" width="1" height="1" fill="#36c"/>`).join(
      "",
    );
    const svg = Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="64" height="48">${rects}</svg>`);
    let received: Buffer | undefined;
    const pool = {
      render: async (_input: unknown, bytes: Buffer) => {
        received = bytes;
        return { data: Buffer.alloc(0), contentType: "image/png", width: 32, height: 24 };
      },
    } as unknown as RenderProcessPool;
    // From 1 ms of planned work: the SVG's 200 elements (14 ms) divert it.
    const isolating = isolatingRender(deps, pool, 1);
    const url = `/resize:width=32/${ID}.png`;
    async function* chunks() {
      yield svg.subarray(0, 100);
      yield svg.subarray(100);
    }
    const header = {
      width: 64,
      height: 48,
      orientedWidth: 64,
      orientedHeight: 48,
      pages: 1,
      hasAlpha: true,
      channels: 4,
      space: "srgb",
      depth: "uchar",
    } as const;
    await isolating(
      { original: chunks(), contentType: "image/svg+xml", header, steps: parseMediaPath(url).steps, cacheKey: url },
      { signal: new AbortController().signal, deadline: Date.now() + 10_000 },
    );
    expect(received?.equals(svg)).toBe(true);
  });
});
