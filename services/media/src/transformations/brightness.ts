import { transformationSpecs } from "@media-platform/contracts";
import { defineTransformation } from "./transformation";

export const brightness = defineTransformation({
  name: "brightness",
  params: transformationSpecs.brightness.params,
  // modulate multiplies LCh lightness; hue and chroma stay, values past white clip. Alpha kept.
  apply: async (image, params) => (params.value === 1 ? image : image.modulate({ brightness: params.value })),
});
