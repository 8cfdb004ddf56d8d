import sharp from "sharp";
import { closeHarness, decodePixels, fixturePath, renderFixture } from "./support/render-harness";

afterAll(closeHarness);

describe("format step (extension)", () => {
  it.each([
    ["format:type=avif", "heif", "image/avif"],
    ["format:type=webp", "webp", "image/webp"],
    ["format:type=png", "png", "image/png"],
    ["resize:width=200/format:type=webp:quality=30", "webp", "image/webp"],
  ])("%s encodes a JPEG original as %s", async (steps, decoded, contentType) => {
    const out = await renderFixture("rocket.jpg", steps);
    expect(out.contentType).toBe(contentType);
    expect((await sharp(out.data).metadata()).format).toBe(decoded);
  });

  it("leaves the pixels alone: a PNG re-encoded as PNG decodes to the original's exact pixels", async () => {
    const out = await decodePixels((await renderFixture("coffee.png", "format:type=png")).data);
    const original = await decodePixels(sharp(fixturePath("coffee.png")));
    expect([out.width, out.height, out.channels]).toEqual([original.width, original.height, original.channels]);
    expect(out.data.equals(original.data)).toBe(true);
  });

  it("quality changes the bytes of a lossy output", async () => {
    const low = await renderFixture("rocket.jpg", "format:type=webp:quality=10");
    const high = await renderFixture("rocket.jpg", "format:type=webp:quality=95");
    expect(low.data.length * 2).toBeLessThan(high.data.length);
  });
});
