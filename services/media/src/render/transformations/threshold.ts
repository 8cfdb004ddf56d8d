import sharp from "sharp";
import { fromRaw } from "../raw";
import { sameSize, type Transformation } from "./transformation";
import type { StepContext } from "../types";

export const threshold = {
  input: "raw",
  outputSize: sameSize,
  async apply(raw, params, _ctx: StepContext) {
    const { width, height } = raw;
    // sharp's threshold(v) is libvips `grey >= v` on the luminance grey (B_W), giving 0/255,
    // with two catches: threshold(0) is a no-op in sharp (everything is >= 0, so white), and
    // it would also threshold the alpha band, so alpha is split off and joined back as is.
    const binary =
      params.value === 0
        ? Buffer.alloc(width * height, 255)
        : await fromRaw(raw).threshold(params.value, { grayscale: true }).extractChannel(0).raw().toBuffer();
    const bw = sharp(binary, { raw: { width, height, channels: 1 } });
    if (raw.channels === 3) return bw;
    const alpha = await fromRaw(raw).extractChannel(3).raw().toBuffer();
    return bw.joinChannel(alpha, { raw: { width, height, channels: 1 } });
  },
} satisfies Transformation<"threshold">;
