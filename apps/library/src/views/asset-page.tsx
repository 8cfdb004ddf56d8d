import { useEffect, useRef, useState } from "preact/hooks";
import type { AssetDto, CollectionDto } from "@media-platform/client";
import type { AssetPatch } from "@media-platform/client";
import { CollectionOptions } from "../components/collection-options";
import { freshUrl, placeholderUrl, THUMBNAIL_STEP, titleOf } from "../components/thumb";
import { mediaPath, useMediaUrls } from "../media";
import { href, navigate } from "../route";
import { client, describeError } from "../session";
import { formatBytes } from "../upload/problems";

interface Version {
  version: number;
  originalFilename: string;
  width: number;
  height: number;
  bytes: number;
  replacedAt: string;
}

export function AssetPage({ id }: { id: string }) {
  const [asset, setAsset] = useState<AssetDto | null>(null);
  const [collections, setCollections] = useState<CollectionDto[]>([]);
  const [versions, setVersions] = useState<Version[]>([]);
  const [status, setStatus] = useState<string>("");
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    client.getAsset(id).then(setAsset, (err: unknown) => setError(describeError(err)));
    client.listCollections().then(
      (r) => setCollections(r.collections),
      () => undefined,
    );
    client.listAssetVersions(id).then(
      (r) => setVersions(r.versions),
      () => undefined,
    );
  }, [id]);

  async function patch(change: AssetPatch, what: string) {
    setError(null);
    try {
      setAsset(await client.updateAsset(id, change));
      setStatus(`${what} saved`);
    } catch (err) {
      setError(describeError(err));
    }
  }

  const previewPath = asset ? mediaPath(asset, ["resize:width=1200"]) : null;
  const thumbPath = asset ? mediaPath(asset, [THUMBNAIL_STEP]) : null;
  const urls = useMediaUrls(previewPath && thumbPath ? [previewPath, thumbPath] : []);
  const reloaded = useReloaded(asset, [previewPath && urls[previewPath], thumbPath && urls[thumbPath]]);

  if (!asset) {
    return error ? (
      <p class="error" role="alert">
        {error}
      </p>
    ) : (
      <p>Loading…</p>
    );
  }
  const previewUrl = urls[previewPath!];
  const thumbUrl = urls[thumbPath!];
  const preview = previewUrl ? freshUrl(previewUrl, asset) : undefined;
  const placeholder = placeholderUrl(asset.placeholder);

  function setFocus(event: MouseEvent) {
    const img = event.currentTarget as HTMLImageElement;
    const box = img.getBoundingClientRect();
    const round = (v: number) => Math.min(1, Math.max(0, Math.round(v * 1000) / 1000));
    void patch(
      {
        focalPoint: {
          x: round((event.clientX - box.left) / box.width),
          y: round((event.clientY - box.top) / box.height),
        },
      },
      "Focal point",
    );
  }

  async function replace(file: File) {
    setError(null);
    try {
      setAsset(await client.replaceOriginal(id, { file, filename: file.name }));
      setVersions((await client.listAssetVersions(id)).versions);
      setStatus("Original replaced");
    } catch (err) {
      setError(describeError(err));
    }
  }

  async function restoreVersion(version: number) {
    try {
      setAsset(await client.restoreAssetVersion(id, version));
      setVersions((await client.listAssetVersions(id)).versions);
      setStatus(`Version ${version} restored`);
    } catch (err) {
      setError(describeError(err));
    }
  }

  async function remove(permanent: boolean) {
    const question = permanent
      ? `Delete “${titleOf(asset!)}” permanently? Its versions and cached images go too; this cannot be undone.`
      : `Move “${titleOf(asset!)}” to the trash?`;
    if (!window.confirm(question)) return;
    try {
      await client.deleteAsset(id, { permanent });
      navigate(permanent ? href.library : href.trash);
    } catch (err) {
      setError(describeError(err));
    }
  }

  const exif = asset.exif;
  return (
    <article class="asset" aria-labelledby="asset-title">
      <p>
        <a href={href.library}>← Library</a> · <a href={href.studio(id)}>Open in URL studio</a>
      </p>
      <h1 id="asset-title">{titleOf(asset)}</h1>
      <div class="asset-layout">
        <figure class="preview">
          <div class="focal-frame" style={placeholder ? { backgroundImage: `url("${placeholder}")` } : undefined}>
            <img
              key={`p${reloaded}`}
              src={preview}
              alt={`${titleOf(asset)}: click to set the focal point`}
              width={asset.width}
              height={asset.height}
              onClick={setFocus}
              data-testid="focal-image"
            />
            {asset.focalPoint && (
              <span
                class="focal-marker"
                aria-hidden="true"
                style={{ left: `${asset.focalPoint.x * 100}%`, top: `${asset.focalPoint.y * 100}%` }}
              />
            )}
          </div>
          <figcaption>
            Click the image to set the focal point
            {asset.focalPoint ? ` (now ${asset.focalPoint.x}, ${asset.focalPoint.y})` : ""}.{" "}
            {asset.focalPoint && (
              <button type="button" onClick={() => patch({ focalPoint: null }, "Focal point")}>
                Clear focal point
              </button>
            )}
          </figcaption>
          {/* The same point without a pointer: fractions of the width and height. */}
          <form
            class="focal-form"
            onSubmit={(e) => {
              e.preventDefault();
              const data = new FormData(e.currentTarget);
              void patch({ focalPoint: { x: Number(data.get("x")), y: Number(data.get("y")) } }, "Focal point");
            }}
          >
            <FocalCoordinate axis="x" value={asset.focalPoint?.x ?? 0.5} />
            <FocalCoordinate axis="y" value={asset.focalPoint?.y ?? 0.5} />
            <button type="submit">Set focal point</button>
          </form>
          <div class="thumbnail-preview">
            <p>Thumbnail (centres on the focal point)</p>
            <img
              key={`t${reloaded}`}
              src={thumbUrl ? freshUrl(thumbUrl, asset) : undefined}
              alt="Thumbnail"
              width={128}
              height={128}
              data-testid="thumbnail"
            />
          </div>
        </figure>
        <div class="details">
          <p class="status" role="status" aria-live="polite">
            {status}
          </p>
          {error && (
            <p class="error" role="alert">
              {error}
            </p>
          )}
          <div class="field">
            <label for="title">Title</label>
            <input
              id="title"
              defaultValue={asset.userTitle ?? ""}
              onChange={(e) => patch({ userTitle: e.currentTarget.value }, "Title")}
            />
          </div>
          <div class="field">
            <label for="tags">Tags (comma-separated)</label>
            <input
              id="tags"
              defaultValue={asset.userTags.join(", ")}
              onChange={(e) =>
                patch(
                  {
                    userTags: e.currentTarget.value
                      .split(",")
                      .map((t) => t.trim())
                      .filter(Boolean),
                  },
                  "Tags",
                )
              }
            />
          </div>
          <ul class="tags" aria-label="Tags">
            {asset.userTags.map((t) => (
              <li key={t}>{t}</li>
            ))}
          </ul>
          <div class="field">
            <label for="caption">Caption</label>
            <textarea
              id="caption"
              rows={3}
              defaultValue={asset.userCaption ?? ""}
              onChange={(e) => patch({ userCaption: e.currentTarget.value }, "Caption")}
            />
          </div>
          <div class="field">
            <label for="asset-collection">Collection</label>
            <select
              id="asset-collection"
              value={asset.collectionId ?? ""}
              onChange={(e) => patch({ collectionId: e.currentTarget.value || null }, "Collection")}
            >
              <CollectionOptions collections={collections} none="No collection" />
            </select>
          </div>
          <h2>Facts</h2>
          <dl class="facts">
            <dt>File</dt>
            <dd>{asset.originalFilename}</dd>
            <dt>Size</dt>
            <dd>
              {asset.width} × {asset.height} px, {asset.format.toUpperCase()}, {formatBytes(asset.bytes)}
            </dd>
            <dt>Version</dt>
            <dd>{asset.version}</dd>
            {asset.dominantColor && (
              <>
                <dt>Dominant colour</dt>
                <dd>
                  <span class="swatch" style={{ backgroundColor: asset.dominantColor }} aria-hidden="true" />{" "}
                  {asset.dominantColor}
                </dd>
              </>
            )}
            <dt>Alpha</dt>
            <dd>{asset.hasAlpha === null ? "unknown" : asset.hasAlpha ? "yes" : "no"}</dd>
            <dt>Frames</dt>
            <dd>
              {asset.pages ?? "unknown"}
              {asset.animated ? " (animated)" : ""}
            </dd>
            {exif &&
              (
                [
                  ["Camera", [exif.make, exif.model].filter(Boolean).join(" ")],
                  ["Lens", exif.lens],
                  ["Taken", exif.takenAt],
                  ["Exposure", exif.exposureTime ? `1/${Math.round(1 / exif.exposureTime)} s` : null],
                  ["Aperture", exif.fNumber ? `f/${exif.fNumber}` : null],
                  ["ISO", exif.iso],
                  ["Orientation", exif.orientation],
                ] as const
              )
                .filter(([, v]) => v !== null && v !== undefined && v !== "")
                .map(([k, v]) => (
                  <>
                    <dt>{k}</dt>
                    <dd>{String(v)}</dd>
                  </>
                ))}
          </dl>
          <h2>Original</h2>
          <div class="field">
            <label for="replace">Replace the original</label>
            <input
              id="replace"
              type="file"
              accept="image/*"
              onChange={(e) => {
                const file = e.currentTarget.files?.[0];
                e.currentTarget.value = "";
                if (file) void replace(file);
              }}
            />
          </div>
          <h3>Previous versions</h3>
          {versions.length === 0 ? (
            <p>None.</p>
          ) : (
            <ul class="versions">
              {versions.map((v) => (
                <li key={v.version}>
                  v{v.version}: {v.originalFilename}, {v.width} × {v.height}, {formatBytes(v.bytes)}{" "}
                  <button type="button" onClick={() => restoreVersion(v.version)}>
                    Restore version {v.version}
                  </button>
                </li>
              ))}
            </ul>
          )}
          <h2>Delete</h2>
          <div class="danger">
            <button type="button" onClick={() => remove(false)}>
              Move to trash
            </button>
            <button type="button" class="destructive" onClick={() => remove(true)}>
              Delete permanently
            </button>
          </div>
        </div>
      </div>
    </article>
  );
}

/** One coordinate of the focal point, a fraction of the displayed image from 0 to 1. */
function FocalCoordinate({ axis, value }: { axis: "x" | "y"; value: number }) {
  return (
    <>
      <label for={`focal-${axis}`}>Focal {axis}</label>
      <input
        id={`focal-${axis}`}
        name={axis}
        type="number"
        min={0}
        max={1}
        step={0.001}
        required
        defaultValue={String(value)}
      />
    </>
  );
}

/**
 * A signed URL takes no cache-busting parameter (its signature covers the query), so when the
 * asset changes (a focal point, a replace) the browser's copies of its signed URLs are fetched
 * again (`cache: "reload"` refreshes the HTTP cache) and the images remounted. Returns a counter
 * that changes once they are.
 */
function useReloaded(asset: AssetDto | null, urls: (string | null | undefined)[]): number {
  const [count, setCount] = useState(0);
  const seen = useRef<string | null>(null);
  const updatedAt = asset?.updatedAt ?? null;
  useEffect(() => {
    const first = seen.current === null;
    seen.current = updatedAt;
    if (first || updatedAt === null) return;
    const signed = urls.filter((u): u is string => typeof u === "string" && u.includes("sig="));
    if (signed.length === 0) return;
    void Promise.all(signed.map((u) => fetch(u, { cache: "reload", mode: "cors" }).catch(() => null))).then(() =>
      setCount((n) => n + 1),
    );
  }, [updatedAt]);
  return count;
}
