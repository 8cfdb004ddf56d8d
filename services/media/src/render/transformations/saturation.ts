import { sameSize, type Transformation } from "./transformation";

export const saturation = {
  input: "encoded",
  outputSize: sameSize,
  // modulate scales chroma in LCh: 0 is grey at the same lightness, 1 unchanged. Alpha kept.
  apply: async (image, params) => (params.value === 1 ? image : image.modulate({ saturation: params.value })),
} satisfies Transformation<"saturation">;
