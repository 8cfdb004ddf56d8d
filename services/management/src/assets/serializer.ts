import {
  formatMediaPath,
  IMAGE_FORMATS,
  type AssetDto,
  type AssetExif,
  type AssetFormat,
  type ListedAssetDto,
  type ListIncludeField,
} from "@media-platform/contracts";
import type { Asset } from "../generated/prisma/client";
import { focalPointOf } from "./attributes";

export function mediaUrlFor(mediaPublicUrl: string, asset: Pick<Asset, "id" | "format">): string {
  const extension = IMAGE_FORMATS[asset.format as AssetFormat].extensions[0];
  return (
    mediaPublicUrl +
    formatMediaPath({ steps: [{ name: "thumbnail", params: { size: 256 } }], assetId: asset.id, extension })
  );
}

export function serializeAsset(asset: Asset, mediaPublicUrl: string): AssetDto {
  return {
    id: asset.id,
    workspaceId: asset.workspaceId,
    collectionId: asset.collectionId,
    userTitle: asset.userTitle,
    userTags: asset.userTags,
    userCaption: asset.userCaption,
    userDescription: asset.userDescription,
    originalFilename: asset.originalFilename,
    mimeType: asset.mimeType,
    format: asset.format as AssetFormat,
    width: asset.width,
    height: asset.height,
    bytes: Number(asset.bytes),
    sha256: asset.sha256,
    createdAt: asset.createdAt.toISOString(),
    updatedAt: asset.updatedAt.toISOString(),
    version: asset.version,
    deletedAt: asset.deletedAt?.toISOString() ?? null,
    mediaUrl: mediaUrlFor(mediaPublicUrl, asset),
    placeholder: asset.placeholder,
    placeholderDataUrl: asset.placeholderDataUrl,
    dominantColor: asset.dominantColor,
    hasAlpha: asset.hasAlpha,
    animated: asset.animated,
    pages: asset.pages,
    durationMs: asset.durationMs,
    exif: (asset.exif as AssetExif | null) ?? null,
    focalPoint: focalPointOf(asset),
  };
}

/** An asset as lists show it: the heavy fields only when `include` names them. */
export function serializeListedAsset(
  asset: Asset,
  mediaPublicUrl: string,
  include: readonly ListIncludeField[] = [],
): ListedAssetDto {
  const { placeholderDataUrl, exif, ...rest } = serializeAsset(asset, mediaPublicUrl);
  const listed: ListedAssetDto = rest;
  if (include.includes("placeholderDataUrl")) listed.placeholderDataUrl = placeholderDataUrl;
  if (include.includes("exif")) listed.exif = exif;
  return listed;
}
