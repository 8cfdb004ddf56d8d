import { transformationSpecs } from "@media-platform/contracts";
import { defineTransformation } from "./transformation";

export const saturation = defineTransformation({
  name: "saturation",
  params: transformationSpecs.saturation.params,
  // modulate scales chroma in LCh: 0 is grey at the same lightness, 1 unchanged. Alpha kept.
  apply: async (image, params) => (params.value === 1 ? image : image.modulate({ saturation: params.value })),
});
