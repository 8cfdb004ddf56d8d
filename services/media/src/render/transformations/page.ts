import type { TransformationStep } from "@media-platform/contracts";
import { sameSize, type Transformation } from "./transformation";
import { TransformationInputError } from "../errors";

/**
 * Extension step: one page of a PDF original. The runner draws only the chosen page
 * (pipeline/pdf-page.ts), so the step itself changes no pixel, wherever it stands in the chain.
 */
export const page = {
  input: "encoded",
  outputSize: sameSize,
  apply: async (image) => image,
} satisfies Transformation<"page">;

/**
 * The 1-based page a request's `page` steps select from an original of `pages` pages (1 for any
 * image but a PDF): the first selects; after it the image is one page, so a later one can only be
 * page 1. Throws a 400 naming page.index, before anything is read past the header.
 */
export function selectedPage(steps: readonly TransformationStep[], pages: number): number {
  let selected: number | undefined;
  for (const step of steps) {
    if (step.name !== "page") continue;
    const index = step.params.index ?? 1;
    const count = selected === undefined ? pages : 1;
    if (index > count) {
      throw new TransformationInputError(
        "page.index",
        `page ${index} does not exist: the ${count === 1 && selected === undefined ? "image" : "document"} has ${count} page${count === 1 ? "" : "s"} (index 1 to ${count})`,
      );
    }
    selected ??= index;
  }
  return selected ?? 1;
}
