import type { TransformationStep } from "@media-platform/contracts";
import { sameSize, type Transformation } from "./transformation";
import { TransformationInputError } from "../errors";

/**
 * Extension step: one frame of an animation, as a still (a poster). The runner decodes only the
 * chosen frame (sharp's `page`), so the step itself changes no pixel. Every other step applies
 * frame by frame, so the frame is the same wherever the step stands in the chain.
 */
export const frame = {
  input: "encoded",
  outputSize: sameSize,
  apply: async (image) => image,
} satisfies Transformation<"frame">;

/**
 * The frame a request's `frame` steps select from an original of `pages` frames, or undefined
 * when it has none. The first selects from the original; after it the image is a still, so a
 * later one can only be index 0. Throws a 400 naming frame.index, before any decoding.
 */
export function selectedFrame(steps: readonly TransformationStep[], pages: number): number | undefined {
  let selected: number | undefined;
  for (const step of steps) {
    if (step.name !== "frame") continue;
    const index = step.params.index ?? 0;
    const count = selected === undefined ? pages : 1;
    if (index >= count) {
      throw new TransformationInputError(
        "frame.index",
        `frame ${index} does not exist: the image has ${count} frame${count === 1 ? "" : "s"} (index 0 to ${count - 1})`,
      );
    }
    selected ??= index;
  }
  return selected;
}
