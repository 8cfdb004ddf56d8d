import {
  ASSET_ATTRIBUTES_CONTENT_TYPE,
  assetAttributesSchema,
  type AssetAttributes,
  type FocalPoint,
} from "@media-platform/contracts";
import { attributesKey, type BlobStore } from "@media-platform/storage";
import type { Asset } from "../generated/prisma/client";

/**
 * The blob `attributes/<id>`: what the media service knows of an asset besides its original (it
 * never reads the database). The row is the source of truth; the blob is rewritten from it.
 */

export function focalPointOf(asset: Pick<Asset, "focalX" | "focalY">): FocalPoint | null {
  return asset.focalX === null || asset.focalY === null ? null : { x: asset.focalX, y: asset.focalY };
}

export const attributesOf = (asset: Pick<Asset, "focalX" | "focalY">): AssetAttributes => {
  const focalPoint = focalPointOf(asset);
  return focalPoint ? { focalPoint } : {};
};

/** Writes the attributes, or deletes the blob when there are none (an absent blob means none). */
export async function storeAssetAttributes(store: BlobStore, assetId: string, attributes: AssetAttributes) {
  const content = assetAttributesSchema.parse(attributes);
  if (Object.keys(content).length === 0) return store.delete(attributesKey(assetId));
  await store.put(attributesKey(assetId), Buffer.from(JSON.stringify(content)), ASSET_ATTRIBUTES_CONTENT_TYPE);
}

export const sameFocalPoint = (a: FocalPoint | null, b: FocalPoint | null): boolean =>
  a === null || b === null ? a === b : a.x === b.x && a.y === b.y;
