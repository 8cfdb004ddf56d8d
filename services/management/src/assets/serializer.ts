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
import type { MediaLinks } from "./media-links";

/** The asset's example URL, `/thumbnail:size=256/<id>.<ext>`, signed when the server signs. */
export function mediaUrlFor(links: MediaLinks, asset: Pick<Asset, "id" | "format">): string {
  const extension = IMAGE_FORMATS[asset.format as AssetFormat].extensions[0];
  return links.url(
    formatMediaPath({ steps: [{ name: "thumbnail", params: { size: 256 } }], assetId: asset.id, extension }),
  );
}

export function serializeAsset(asset: Asset, links: MediaLinks): AssetDto {
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
    mediaUrl: mediaUrlFor(links, asset),
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
  links: MediaLinks,
  include: readonly ListIncludeField[] = [],
): ListedAssetDto {
  const { placeholderDataUrl, exif, ...rest } = serializeAsset(asset, links);
  const listed: ListedAssetDto = rest;
  if (include.includes("placeholderDataUrl")) listed.placeholderDataUrl = placeholderDataUrl;
  if (include.includes("exif")) listed.exif = exif;
  return listed;
}
