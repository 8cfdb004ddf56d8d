import sharp from "sharp";
import { defaultMediaLimits, parseMediaPath } from "@media-platform/contracts";
import { render, type RenderDeps } from "../src/render/pipeline/render";

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
