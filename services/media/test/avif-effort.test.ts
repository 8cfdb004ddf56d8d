import fs from "node:fs";
import path from "node:path";
import sharp from "sharp";
import { defaultMediaLimits, parseMediaPath } from "@media-platform/contracts";
import { render } from "../src/render/pipeline/render";
import { FIXTURES_DIR } from "./support/memory-store";

/**
 * Every AVIF output uses the configured encoder effort (MEDIA_AVIF_EFFORT): a stored AVIF
 * original (sharp's `pitm.avif` from the corpus), a `format:type=avif` step and a negotiated AVIF.
 */
const CORPUS = path.resolve(__dirname, "..", "..", "..", "..", "shared", "fixtures", "corpus", "sharp");
const ID = "3f2b6c1e-4d5a-4b7c-8e9f-0a1b2c3d4e5f";

describe("AVIF encoder effort", () => {
  let avif: jest.SpyInstance;
  beforeAll(() => {
    if (!fs.existsSync(CORPUS)) throw new Error(`the corpus is missing: ${CORPUS}`);
  });
  beforeEach(() => {
    avif = jest.spyOn(sharp.prototype, "avif");
  });
  afterEach(() => avif.mockRestore());

  const deps = (avifEffort?: number) => ({
    pixels: { run: async () => Promise.reject(new Error("no kernels here")) },
    faces: { detect: async () => [] },
    limits: defaultMediaLimits,
    limitInputPixels: 100_000_000,
    avifEffort,
  });

  async function renderUrl(file: string, contentType: string, steps: string, avifEffort?: number, convert = false) {
    const request = parseMediaPath(`/${steps}/${ID}.avif`);
    return render(
      {
        original: fs.readFileSync(file),
        contentType,
        steps: request.steps,
        cacheKey: steps,
        ...(convert && { convertTo: { format: "avif" as const } }),
      },
      deps(avifEffort),
      {},
    );
  }

  it.each([0, 2])("re-encodes a stored AVIF original at effort %i", async (effort) => {
    const out = await renderUrl(path.join(CORPUS, "pitm.avif"), "image/avif", "thumbnail:size=64", effort);
    expect(out.contentType).toBe("image/avif");
    expect(avif).toHaveBeenCalledTimes(1);
    expect(avif.mock.calls[0]![0]).toMatchObject({ effort });
    expect((await sharp(out.data).metadata()).format).toBe("heif");
  });

  it("encodes format:type=avif of a JPEG at the configured effort", async () => {
    const out = await renderUrl(
      path.join(FIXTURES_DIR, "rocket.jpg"),
      "image/jpeg",
      "thumbnail:size=64/format:type=avif",
      0,
    );
    expect(out.contentType).toBe("image/avif");
    expect(avif.mock.calls[0]![0]).toMatchObject({ effort: 0 });
  });

  it("encodes a negotiated AVIF at the configured effort", async () => {
    const out = await renderUrl(path.join(FIXTURES_DIR, "rocket.jpg"), "image/jpeg", "thumbnail:size=64", 1, true);
    expect(out.contentType).toBe("image/avif");
    expect(avif.mock.calls[0]![0]).toMatchObject({ effort: 1 });
  });
});
