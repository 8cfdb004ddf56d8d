import sharp from "sharp";
import { closeHarness, fixturePath, renderImage } from "./support/render-harness";

afterAll(closeHarness);

/** A small AVIF original: the pixels of a repository fixture, stored as AVIF. */
const avifOriginal = () => sharp(fixturePath("rocket.jpg")).resize({ width: 160 }).avif({ effort: 0 }).toBuffer();
const jpegOriginal = () => sharp(fixturePath("rocket.jpg")).resize({ width: 160 }).jpeg().toBuffer();

describe("AVIF encoder effort (MEDIA_AVIF_EFFORT)", () => {
  it.each([
    ["a stored AVIF original", avifOriginal, "grayscale"],
    ["format:type=avif", jpegOriginal, "grayscale/format:type=avif"],
  ])("%s is encoded at the deployment's effort, not sharp's default", async (_, original, steps) => {
    const input = await original();
    const at = (avifEffort: number | undefined) =>
      renderImage(input, steps, { deps: { encoder: { avifEffort } } }).then((out) => out.data);
    const [fastest, smallest, sharpDefault, unset] = await Promise.all([at(0), at(9), at(4), at(undefined)]);
    expect((await sharp(fastest).metadata()).format).toBe("heif");
    // The setting reaches the encoder: effort 0 and 9 encode the same pixels differently ...
    expect(fastest.equals(smallest)).toBe(false);
    expect(fastest.equals(sharpDefault)).toBe(false);
    // ... and without a setting the encoder keeps sharp's default (4).
    expect(unset.equals(sharpDefault)).toBe(true);
  });
});
