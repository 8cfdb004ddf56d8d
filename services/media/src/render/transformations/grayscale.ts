import { sameSize, type Transformation } from "./transformation";

export const grayscale = {
  input: "encoded",
  outputSize: sameSize,
  // libvips converts sRGB to B_W through linear light (Y = 0.2126 R + 0.7152 G + 0.0722 B on
  // linear values, then sRGB-encoded), so every grey has the luminance of its colour: pure
  // red becomes 127, not 54. sharp runs greyscale before modulate, and modulate's lightness
  // is an offset on LCh's L, i.e. the shift is in L* units. Alpha passes through both.
  apply: async (image, params) => {
    const grey = image.grayscale();
    return params.lightness === 0 ? grey : grey.modulate({ lightness: params.lightness });
  },
} satisfies Transformation<"grayscale">;
