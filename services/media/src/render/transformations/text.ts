import sharp from "sharp";
import { parseColor, type ResolvedParams } from "@media-platform/contracts";
import { drawLayer, fadeLayer, layerBox, type Layer } from "./layer";
import { sameSize, type Transformation } from "./transformation";
import { TransformationInputError } from "../errors";

/**
 * The bundled typefaces (DejaVu, a free licence: see the dejavu-fonts-ttf package), by the `font`
 * parameter: the file libvips hands to fontconfig and the family Pango asks for. DejaVu covers
 * Latin, Greek, Cyrillic, Hebrew and Arabic.
 */
const FONTS = {
  sans: { file: "DejaVuSans.ttf", family: "DejaVu Sans" },
  serif: { file: "DejaVuSerif.ttf", family: "DejaVu Serif" },
  mono: { file: "DejaVuSansMono.ttf", family: "DejaVu Sans Mono" },
} as const;

export const fontFile = (font: keyof typeof FONTS): string =>
  require.resolve(`dejavu-fonts-ttf/ttf/${FONTS[font].file}`);

/**
 * The CJK fallback of every `font` (Noto Sans SC and KR, SIL Open Font License, regular weight):
 * SC draws Han characters (simplified and traditional) and Japanese kana, KR draws Hangul. Pango
 * takes each character from the first family of the list that has it.
 */
export const CJK_FONTS = [
  {
    file: "@expo-google-fonts/noto-sans-sc/400Regular/NotoSansSC_400Regular.ttf",
    family: "Noto Sans SC",
    sample: "中",
  },
  {
    file: "@expo-google-fonts/noto-sans-kr/400Regular/NotoSansKR_400Regular.ttf",
    family: "Noto Sans KR",
    sample: "한",
  },
] as const;

/**
 * libvips adds a text input's font file to the process' fontconfig once and keeps it: drawing
 * one character in each fallback font makes them known before the first text that needs them.
 */
let cjkRegistered: Promise<unknown> | undefined;
const registerCjkFonts = (): Promise<unknown> =>
  (cjkRegistered ??= Promise.all(
    CJK_FONTS.map(({ file, family, sample }) =>
      sharp({ text: { text: sample, font: `${family} 12px`, fontfile: require.resolve(file), dpi: 72 } })
        .raw()
        .toBuffer(),
    ),
  ));

/**
 * libvips reads its text input as Pango markup: the user's text is escaped to plain characters
 * (the five XML specials), so it can never open a tag or an entity. Nothing else is passed as
 * markup: colour, box and opacity are applied to the rendered coverage afterwards.
 */
const MARKUP_ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" };
const asPlainText = (text: string): string => text.replace(/[&<>"']/g, (c) => MARKUP_ESCAPES[c]!);

/** The text's coverage (one band, 0 = no ink), wrapped at `maxWidth` pixels. */
async function coverage(
  params: ResolvedParams<"text">,
  maxWidth: number,
): Promise<{ data: Buffer; width: number; height: number }> {
  const align = params.gravity.endsWith("east") ? "right" : params.gravity.endsWith("west") ? "left" : "centre";
  await registerCjkFonts();
  try {
    const { data, info } = await sharp({
      text: {
        text: asPlainText(params.text),
        font: `${[FONTS[params.font].family, ...CJK_FONTS.map((f) => f.family)].join(",")} ${params.size}px`,
        fontfile: fontFile(params.font),
        width: Math.max(1, maxWidth),
        wrap: "word-char",
        align,
        // 72 dpi: one point is one pixel.
        dpi: 72,
      },
    })
      .extractChannel(0)
      .raw()
      .toBuffer({ resolveWithObject: true });
    return { data, width: info.width, height: info.height };
  } catch (err) {
    // Text of white space only has no ink to measure.
    if (err instanceof Error && /empty|zero|bad extent/i.test(err.message)) {
      throw new TransformationInputError("text.text", "the text has nothing to draw (only white space)");
    }
    throw err;
  }
}

/** The text in its colour over its box (or over nothing), as an RGBA layer. */
export async function textLayer(params: ResolvedParams<"text">, imageWidth: number): Promise<Layer> {
  const pad = params.background === undefined ? 0 : params.padding;
  const ink = await coverage(params, imageWidth - 2 * pad);
  // Validated colours (the URL contracts).
  const fg = parseColor(params.color)!;
  const bg = params.background === undefined ? undefined : parseColor(params.background)!;
  const width = ink.width + 2 * pad;
  const height = ink.height + 2 * pad;
  const data = Buffer.alloc(width * height * 4);
  if (bg) {
    const a = Math.round(bg.alpha * 255);
    for (let i = 0; i < data.length; i += 4) {
      data[i] = bg.r;
      data[i + 1] = bg.g;
      data[i + 2] = bg.b;
      data[i + 3] = a;
    }
  }
  // Text over its box: "over" compositing of the ink (coverage x colour alpha) on the box.
  for (let y = 0; y < ink.height; y++) {
    for (let x = 0; x < ink.width; x++) {
      const ta = (ink.data[y * ink.width + x]! / 255) * fg.alpha;
      if (ta === 0) continue;
      const o = ((y + pad) * width + x + pad) * 4;
      const ba = data[o + 3]! / 255;
      const a = ta + ba * (1 - ta);
      data[o] = Math.round((fg.r * ta + data[o]! * ba * (1 - ta)) / a);
      data[o + 1] = Math.round((fg.g * ta + data[o + 1]! * ba * (1 - ta)) / a);
      data[o + 2] = Math.round((fg.b * ta + data[o + 2]! * ba * (1 - ta)) / a);
      data[o + 3] = Math.round(a * 255);
    }
  }
  return { data, width, height };
}

/**
 * Extension step: draws text with libvips' text input (Pango shapes it, right-to-left included),
 * never through an SVG or markup built from the user's string.
 */
export const text = {
  input: "raw",
  outputSize: sameSize,
  async apply(image, params) {
    const layer = fadeLayer(await textLayer(params, image.width), params.opacity);
    return drawLayer(image, layer, layerBox(image, layer, params.gravity, params.x, params.y));
  },
} satisfies Transformation<"text">;
