/**
 * The 16 transformations of the spec, one each, written in the spec's own notation (`1.0`,
 * `0.0`); crop takes a region of the given size.
 */
export function specSteps(crop: { width: number; height: number }): string[] {
  return [
    `crop:width=${crop.width}:height=${crop.height}`,
    "color-balance:cyan=20.0:target=midtones",
    "clahe:clipLimit=3.0:tileSize=16",
    "grayscale:lightness=0",
    "fit:width=128:height=96:background=ffffff",
    "saturation:value=1.0",
    "add-noise:type=gaussian:amount=1.0",
    "brightness:value=1.0",
    "wave:amplitude=5.0:wavelength=50.0",
    "channelManipulation:red=1.0:green=0.5:blue=0.0",
    "sharpen:value=1.0",
    "avatar:size=64:shape=circle",
    "thumbnail:size=64",
    "exposure:value=0.0",
    "solarize:threshold=128",
    "threshold:value=128",
  ];
}
