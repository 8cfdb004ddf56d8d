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

/** The grid's rendition of an asset: a 256 px square, the asset's example URL. */
export const THUMBNAIL_STEP = "thumbnail:size=256";

/**
 * The URL as shown, changing whenever the asset does: a focal point or a replace gives new pixels
 * under the same media path, which the browser would otherwise keep showing. A signed URL takes
 * no extra parameter (its signature covers the query): the asset page reloads it instead.
 */
export function freshUrl(url: string, asset: Pick<ListedAssetDto, "updatedAt">): string {
  return url.includes("sig=") ? url : `${url}${url.includes("?") ? "&" : "?"}v=${Date.parse(asset.updatedAt)}`;
}

/** An asset's picture: the ThumbHash at once, the image over it once loaded (`src` undefined: not yet signed). */
export function Thumb({ asset, alt, src }: { asset: ListedAssetDto; alt: string; src: string | undefined }) {
  const placeholder = useMemo(() => placeholderUrl(asset.placeholder), [asset.placeholder]);
  const [loaded, setLoaded] = useState<string | null>(null);
  const shown = loaded !== null && loaded === src;
  return (
    <div class="thumb" style={{ aspectRatio: `${asset.width} / ${asset.height}` }}>
      {placeholder && !shown && <img class="placeholder" src={placeholder} alt="" aria-hidden="true" />}
      {src && (
        <img
          class={shown ? "image loaded" : "image"}
          src={src}
          alt={alt}
          loading="lazy"
          decoding="async"
          data-src={src}
          onLoad={() => setLoaded(src)}
        />
      )}
    </div>
  );
}

export const titleOf = (asset: Pick<ListedAssetDto, "userTitle" | "originalFilename">): string =>
  asset.userTitle ?? asset.originalFilename;
