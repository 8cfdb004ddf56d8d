import sharp from "sharp";
import { defaultMediaLimits, parseMediaPath } from "@media-platform/contracts";
import { toRaw } from "../src/render/raw";
import type { RawImage } from "../src/render/types";
import { render } from "../src/render/pipeline/render";
import { CJK_FONTS, fontFile } from "../src/render/transformations/text";

const BASE_ID = "00000000-0000-4000-8000-000000000000";
const WIDTH = 480;
const HEIGHT = 120;

/** `text:` drawn in white at the top left of a black PNG, through the URL grammar and the render pipeline. */
async function drawn(text: string, extra = ":gravity=northwest"): Promise<RawImage> {
  const black = await sharp({ create: { width: WIDTH, height: HEIGHT, channels: 3, background: "#000" } })
    .png()
    .toBuffer();
  const steps = `text:text=${encodeURIComponent(text)}:size=40${extra}`;
  const request = parseMediaPath(`/${steps}/${BASE_ID}.png`);
  const rendition = await render(
    { original: black, contentType: "image/png", steps: request.steps, cacheKey: steps },
    { pixels: {} as never, faces: { detect: async () => [] }, limits: defaultMediaLimits, limitInputPixels: 1e8 },
  );
  return toRaw(sharp(rendition.data));
}

/** The coverage of `text` in one font file alone, as sharp's text input draws it. */
async function direct(text: string, family: string, fontfile: string): Promise<RawImage> {
  const { data, info } = await sharp({
    text: { text, font: `${family} 40px`, fontfile, width: WIDTH, wrap: "word-char", align: "left", dpi: 72 },
  })
    .extractChannel(0)
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height, channels: 1 as never };
}

/** The red channel of `image` over the top-left `width` x `height` (white text on black: its coverage). */
function topLeft(image: RawImage, width: number, height: number): Buffer {
  const out = Buffer.alloc(width * height);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) out[y * width + x] = image.data[(y * image.width + x) * image.channels]!;
  return out;
}

function inkBox(image: RawImage) {
  const box = { left: Infinity, top: Infinity, right: -1, bottom: -1, count: 0 };
  for (let y = 0; y < image.height; y++)
    for (let x = 0; x < image.width; x++) {
      if (image.data[(y * image.width + x) * image.channels]! < 64) continue;
      box.count++;
      box.left = Math.min(box.left, x);
      box.top = Math.min(box.top, y);
      box.right = Math.max(box.right, x);
      box.bottom = Math.max(box.bottom, y);
    }
  return box;
}

const [SC, KR] = CJK_FONTS.map((f) => ({ family: f.family, file: require.resolve(f.file) }));

describe("text: Chinese, Japanese and Korean", () => {
  const lines = [
    ["Chinese", "中文字体测试", SC!],
    ["Japanese", "日本語のテキスト", SC!],
    ["Korean", "한국어 텍스트", KR!],
  ] as const;
  // Drawn before anything here draws in a CJK font file directly: libvips keeps every font file
  // it has loaded, and fontconfig may then fall back to one without being asked.
  const drawings = new Map<string, RawImage>();
  beforeAll(async () => {
    for (const [, text] of lines) drawings.set(text, await drawn(text));
  });

  it.each(lines)(
    "draws %s in the bundled CJK font, pixel for pixel as the font itself draws it",
    async (_script, text, font) => {
      const out = drawings.get(text)!;
      const reference = await direct(text, font.family, font.file);
      expect(topLeft(out, reference.width, reference.height).equals(reference.data)).toBe(true);
      // Nothing else drawn beyond it.
      const box = inkBox(out);
      expect(box.count).toBeGreaterThan(1000);
      expect(box.right).toBeLessThan(reference.width);
      expect(box.bottom).toBeLessThan(reference.height);
    },
  );

  it("gives two different CJK strings different ink, all of a mixed line inside the image", async () => {
    const a = await drawn("中文");
    const b = await drawn("漢字");
    expect(a.data.equals(b.data)).toBe(false);
    const mixed = inkBox(await drawn("Hello 世界 こんにちは 안녕", ":gravity=center"));
    expect(mixed.count).toBeGreaterThan(1000);
    expect(mixed.left).toBeGreaterThan(0);
    expect(mixed.right).toBeLessThan(WIDTH - 1);
    expect(mixed.top).toBeGreaterThan(0);
    expect(mixed.bottom).toBeLessThan(HEIGHT - 1);
  });

  it.each([
    ["sans", "DejaVu Sans"],
    ["serif", "DejaVu Serif"],
    ["mono", "DejaVu Sans Mono"],
  ] as const)("keeps Latin text in DejaVu for font=%s", async (font, family) => {
    const reference = await direct("Hello, world", family, fontFile(font));
    const out = await drawn("Hello, world", `:font=${font}:gravity=northwest`);
    expect(topLeft(out, reference.width, reference.height).equals(reference.data)).toBe(true);
  });
});
