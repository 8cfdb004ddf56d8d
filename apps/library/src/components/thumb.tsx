import { useMemo, useState } from "preact/hooks";
import { thumbHashToDataURL } from "thumbhash";
import type { ListedAssetDto } from "@media-platform/client";

/** The ThumbHash (base64) as a data URL; lists no longer carry the decoded one. */
export function placeholderUrl(thumbHash: string | null): string | undefined {
  if (!thumbHash) return undefined;
  try {
    const bytes = Uint8Array.from(atob(thumbHash), (c) => c.charCodeAt(0));
    return thumbHashToDataURL(bytes);
  } catch {
    return undefined;
  }
}

/**
 * The asset's thumbnail URL, changing whenever the asset does: a focal point or a replace gives
 * new pixels under the same media path, which the browser would otherwise keep showing.
 */
export function thumbnailUrl(asset: Pick<ListedAssetDto, "mediaUrl" | "updatedAt">): string {
  return `${asset.mediaUrl}?v=${Date.parse(asset.updatedAt)}`;
}

export function Thumb({ asset, alt }: { asset: ListedAssetDto; alt: string }) {
  const placeholder = useMemo(() => placeholderUrl(asset.placeholder), [asset.placeholder]);
  const [loaded, setLoaded] = useState(false);
  const src = thumbnailUrl(asset);
  return (
    <div class="thumb" style={{ aspectRatio: `${asset.width} / ${asset.height}` }}>
      {placeholder && !loaded && <img class="placeholder" src={placeholder} alt="" aria-hidden="true" />}
      <img
        class={loaded ? "image loaded" : "image"}
        src={src}
        alt={alt}
        loading="lazy"
        decoding="async"
        data-src={src}
        onLoad={() => setLoaded(true)}
      />
    </div>
  );
}

export const titleOf = (asset: Pick<ListedAssetDto, "userTitle" | "originalFilename">): string =>
  asset.userTitle ?? asset.originalFilename;
