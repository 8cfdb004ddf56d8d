import type sharp from "sharp";
import { parseColor, type Rgba } from "@media-platform/contracts";
import { pointInPadded } from "./focal-point";
import { formatHasAlpha, type Transformation } from "./transformation";
import type { OutputFormat } from "../types";

/**
 * The padding colour as sharp wants it. A translucent colour only stays translucent where
 * the output format can carry alpha; otherwise it is blended over white, the same rule the
 * avatar circle uses for its outside.
 */
export function paddingColour(colour: Rgba, format: OutputFormat): sharp.Color {
  if (formatHasAlpha(format) || colour.alpha >= 1)
    return { r: colour.r, g: colour.g, b: colour.b, alpha: colour.alpha };
  const over = (c: number) => Math.round(c * colour.alpha + 255 * (1 - colour.alpha));
  return { r: over(colour.r), g: over(colour.g), b: over(colour.b), alpha: 1 };
}

export const fit = {
  // sharp turns the background grey for a grey (1-2 band) input, so a red padding on a
  // greyscale original needs the pixels in sRGB first. Colour originals keep the encoded
  // pipeline, and with it JPEG shrink-on-load.
  input: "srgb",
  outputSize: (_input, params) => ({ width: params.width, height: params.height }),
  // Scaled (up or down) to fit inside the canvas, centred in the padding.
  mapFocalPoint: (point, input, output) =>
    pointInPadded(point, input, output, Math.min(output.width / input.width, output.height / input.height)),
  async apply(image, params, ctx) {
    // Validated by the URL parser, so a colour is always there.
    const colour = parseColor(params.background)!;
    return image.resize(params.width, params.height, {
      fit: "contain",
      position: "centre",
      background: paddingColour(colour, ctx.output.format),
    });
  },
} satisfies Transformation<"fit">;
