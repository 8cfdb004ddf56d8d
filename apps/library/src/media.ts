import type { ListedAssetDto } from "@media-platform/client";
import { settings } from "./session";

/** The asset's media extension, as its example mediaUrl spells it. */
export const extensionOf = (asset: Pick<ListedAssetDto, "mediaUrl">): string =>
  asset.mediaUrl.slice(asset.mediaUrl.lastIndexOf(".") + 1);

/** A media URL of the asset after `steps` (already formatted step segments). */
export function mediaPath(asset: Pick<ListedAssetDto, "id" | "mediaUrl">, steps: string[]): string {
  return `/${[...steps, `${asset.id}.${extensionOf(asset)}`].join("/")}`;
}

export const mediaHref = (path: string): string => `${settings.mediaUrl}${path}`;
