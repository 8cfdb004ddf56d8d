import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import sharp from "sharp";
import { closeHarness, fixturePath, renderImage } from "./support/render-harness";

afterAll(closeHarness);

// sharp's own test images, in shared/ beside the repository: fail loudly when absent.
const CORPUS = path.resolve(__dirname, "..", "..", "..", "..", "shared", "fixtures", "corpus", "sharp");
const corpusFile = (name: string): Buffer => {
  const file = path.join(CORPUS, name);
  if (!existsSync(file)) throw new Error(`corpus file missing: ${file}`);
  return readFileSync(file);
};

async function gainMapSize(jpeg: Buffer): Promise<{ width: number; height: number } | undefined> {
  const { gainMap } = await sharp(jpeg).metadata();
  if (!gainMap) return undefined;
  const { width, height } = await sharp(gainMap.image).metadata();
  return { width, height };
}

describe("HDR gain maps", () => {
  it("the corpus original carries a 960x540 gain map for its 3840x2160 image", async () => {
    expect(await gainMapSize(corpusFile("gain-map.jpg"))).toEqual({ width: 960, height: 540 });
  });

  it("a resize keeps the gain map in JPEG output, scaled with the image", async () => {
    const out = await renderImage(corpusFile("gain-map.jpg"), "resize:width=960");
    expect(out.contentType).toBe("image/jpeg");
    expect([out.width, out.height]).toEqual([960, 540]);
    expect(await gainMapSize(out.data)).toEqual({ width: 240, height: 135 });
  });

  it("a JPEG without a gain map gets none", async () => {
    const out = await renderImage(readFileSync(fixturePath("rocket.jpg")), "resize:width=200");
    expect(await gainMapSize(out.data)).toBeUndefined();
  });

  it("a non-JPEG output of a gain-map original has no gain map (sharp keeps it in JPEG only)", async () => {
    const out = await renderImage(corpusFile("gain-map.jpg"), "resize:width=960/format:type=png");
    expect(out.contentType).toBe("image/png");
    expect((await sharp(out.data).metadata()).gainMap).toBeUndefined();
  });
});
