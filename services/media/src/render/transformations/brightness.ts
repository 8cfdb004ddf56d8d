import { sameSize, type Transformation } from "./transformation";

export const brightness = {
  input: "encoded",
  outputSize: sameSize,
  // modulate multiplies LCh lightness; hue and chroma stay, values past white clip. Alpha kept.
  apply: async (image, params) => (params.value === 1 ? image : image.modulate({ brightness: params.value })),
} satisfies Transformation<"brightness">;
