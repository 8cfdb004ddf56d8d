import type { TransformationName } from "@media-platform/contracts";
import type { Transformation } from "./transformation";
import { addNoise } from "./add-noise";
import { avatar } from "./avatar";
import { brightness } from "./brightness";
import { channelManipulation } from "./channel-manipulation";
import { clahe } from "./clahe";
import { colorBalance } from "./color-balance";
import { crop } from "./crop";
import { exposure } from "./exposure";
import { fit } from "./fit";
import { format } from "./format";
import { frame } from "./frame";
import { grayscale } from "./grayscale";
import { maxBytes } from "./max-bytes";
import { overlay } from "./overlay";
import { page } from "./page";
import { redact } from "./redact";
import { resize } from "./resize";
import { saturation } from "./saturation";
import { sharpen } from "./sharpen";
import { solarize } from "./solarize";
import { text } from "./text";
import { threshold } from "./threshold";
import { thumbnail } from "./thumbnail";
import { wave } from "./wave";

/** Every transformation, by its URL name. Adding one: a new file and one line here. */
export const transformations: { [N in TransformationName]: Transformation<N> } = {
  crop,
  "color-balance": colorBalance,
  clahe,
  grayscale,
  fit,
  saturation,
  "add-noise": addNoise,
  brightness,
  wave,
  channelManipulation,
  sharpen,
  avatar,
  thumbnail,
  exposure,
  solarize,
  threshold,
  resize,
  format,
  frame,
  page,
  "max-bytes": maxBytes,
  overlay,
  text,
  redact,
};

export * from "./transformation";
