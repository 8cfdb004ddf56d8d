import { z } from "zod";

/**
 * Per-asset attributes the media service needs but cannot read from Postgres (it never does):
 * management writes them as a small JSON blob beside the original (`attributes/<assetId>` in
 * packages/storage), media reads it for the steps that use it. One schema for both sides.
 */

const fraction = (axis: "x" | "y", side: "width" | "height") =>
  z
    .number({
      error: (issue) =>
        issue.input === undefined ? "is required: a number from 0 to 1" : "must be a number from 0 to 1",
    })
    .min(0, `must be at least 0 (a fraction of the ${side}: 0 is the ${axis === "x" ? "left" : "top"} edge)`)
    .max(1, `must be at most 1 (a fraction of the ${side}: 1 is the ${axis === "x" ? "right" : "bottom"} edge)`)
    .describe(`${axis === "x" ? "Horizontal" : "Vertical"} position as a fraction of the ${side}, 0-1`);

export const focalPointSchema = z
  .object({ x: fraction("x", "width"), y: fraction("y", "height") }, { error: "must be an object {x, y} or null" })
  .strict()
  .describe(
    "The point of interest of the image, as fractions (0-1) of the image as displayed (after EXIF orientation): x from the left edge, y from the top. thumbnail, avatar and crop:gravity=focal centre on it",
  );
export type FocalPoint = z.infer<typeof focalPointSchema>;

/**
 * Content of `attributes/<assetId>`. Not strict: a media replica older than the management
 * service that wrote the blob ignores attributes it does not know instead of losing all of them.
 */
export const assetAttributesSchema = z
  .object({
    focalPoint: focalPointSchema.optional(),
  })
  .describe("Attributes of an asset stored beside its original for the media service");
export type AssetAttributes = z.infer<typeof assetAttributesSchema>;

export const ASSET_ATTRIBUTES_CONTENT_TYPE = "application/json";
