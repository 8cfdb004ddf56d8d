import { useEffect, useMemo, useState } from "preact/hooks";
import type { AssetDto, UploadResponse } from "@media-platform/client";
import { freshUrl, THUMBNAIL_STEP, titleOf } from "../components/thumb";
import { mediaPath, useMediaUrl } from "../media";
import { href } from "../route";
import { client, settings, token } from "../session";
import { formatBytes } from "../upload/problems";
import { summarize, UploadQueue, type UploadItem } from "../upload/queue";
import { libraryTransport } from "../upload/transport";

type Item = UploadItem<UploadResponse>;

const STATE_LABEL: Record<Item["state"], string> = {
  queued: "Waiting",
  uploading: "Uploading",
  paused: "Paused",
  processing: "Processing",
  done: "Done",
  refused: "Not uploaded",
};

/** The line under the drop zone: files, not bytes, so it never says 100% while the server still works. */
function summaryText(items: readonly Item[]): string {
  const c = summarize(items);
  const parts = [`${c.done} of ${c.total} ${c.total === 1 ? "file" : "files"} uploaded`];
  if (c.refused) parts.push(`${c.refused} not uploaded`);
  if (c.uploading) parts.push(`${c.uploading} uploading`);
  if (c.processing) parts.push(`${c.processing} processing`);
  if (c.paused) parts.push(`${c.paused} paused`);
  if (c.queued) parts.push(`${c.queued} waiting`);
  return parts.join(" · ");
}

export function Upload({ collectionId, onUploaded }: { collectionId: string; onUploaded: () => void }) {
  const [items, setItems] = useState<readonly Item[]>([]);
  const [over, setOver] = useState(false);
  const [expanded, setExpanded] = useState(true);
  const queue = useMemo(
    () =>
      new UploadQueue<UploadResponse>({
        transport: libraryTransport(settings.apiUrl, () => token.get() ?? ""),
        concurrency: settings.uploadConcurrency,
        maxBytes: settings.maxUploadBytes,
        accept: (body) => body as UploadResponse,
        onChange: setItems,
      }),
    [],
  );
  useEffect(() => () => queue.abortAll(), [queue]);
  // The grid shows new assets as they land: once per settled burst, not once per file.
  const done = items.filter((i) => i.state === "done").length;
  useEffect(() => {
    if (done === 0) return;
    const timer = setTimeout(onUploaded, 300);
    return () => clearTimeout(timer);
  }, [done]);

  const add = (files: File[]) => {
    if (files.length === 0) return;
    setExpanded(true);
    queue.add(files, collectionId);
  };
  const counts = summarize(items);
  const finished = counts.done + counts.refused;

  return (
    <section class="upload" aria-labelledby="upload-title">
      <h2 id="upload-title" class="visually-hidden">
        Upload
      </h2>
      <div
        class={over ? "drop over" : "drop"}
        data-testid="drop-zone"
        onDragOver={(e) => {
          e.preventDefault();
          setOver(true);
        }}
        onDragLeave={() => setOver(false)}
        onDrop={(e) => {
          e.preventDefault();
          setOver(false);
          add([...(e.dataTransfer?.files ?? [])]);
        }}
      >
        <p>Drop images here, or</p>
        <label class="button" for="files">
          Choose files
        </label>
        <input
          id="files"
          class="visually-hidden"
          type="file"
          multiple
          accept="image/*,.heic,.heif,.pdf,application/pdf,.dng,.cr2,.cr3,.nef,.arw,.raf,.rw2,.orf"
          onChange={(e) => {
            const files = [...(e.currentTarget.files ?? [])];
            e.currentTarget.value = "";
            add(files);
          }}
        />
      </div>
      {items.length > 0 && (
        <div class="upload-panel">
          <div class="upload-summary">
            <p role="status" aria-live="polite" data-testid="upload-summary">
              {summaryText(items)}
            </p>
            <progress aria-label="Files finished" max={items.length} value={finished} data-testid="upload-total" />
            <div class="upload-actions">
              <button
                type="button"
                aria-expanded={expanded}
                aria-controls="upload-list"
                onClick={() => setExpanded(!expanded)}
              >
                {expanded ? "Hide list" : "Show list"}
              </button>
              <button type="button" onClick={() => queue.clearFinished()} disabled={finished === 0}>
                Clear finished
              </button>
            </div>
          </div>
          <ul id="upload-list" class="upload-list" hidden={!expanded} aria-label="Uploads">
            {items.map((item) => (
              <UploadRow
                key={item.key}
                item={item}
                onRetry={() => queue.retry(item.key)}
                onPause={() => queue.pause(item.key)}
                onResume={() => queue.resume(item.key)}
              />
            ))}
          </ul>
        </div>
      )}
    </section>
  );
}

function UploadRow({
  item,
  onRetry,
  onPause,
  onResume,
}: {
  item: Item;
  onRetry: () => void;
  onPause: () => void;
  onResume: () => void;
}) {
  const waiting = item.state === "queued" && item.retryAt !== undefined;
  return (
    <li class={`upload-item ${item.state}`} data-state={item.state}>
      <div class="upload-line">
        <span class="upload-name">{item.name}</span>
        <span class="upload-state">
          {waiting ? "Waiting: the server is busy" : STATE_LABEL[item.state]}
          {item.state === "uploading" && ` ${formatBytes(item.sent)} of ${formatBytes(item.size)}`}
        </span>
        {(item.state === "uploading" || item.state === "queued") && (
          <button type="button" class="upload-pause" onClick={onPause}>
            Pause <span class="visually-hidden">{item.name}</span>
          </button>
        )}
        {item.state === "paused" && (
          <button type="button" class="upload-resume" onClick={onResume}>
            Resume <span class="visually-hidden">{item.name}</span>
          </button>
        )}
        {item.state === "done" && item.asset && (
          <a href={href.asset(item.asset.id)}>
            Open <span class="visually-hidden">{titleOf(item.asset)}</span>
          </a>
        )}
      </div>
      {(item.state === "uploading" || item.state === "processing") && (
        <progress
          aria-label={`${item.name} sent`}
          max={item.size || 1}
          value={item.state === "processing" ? item.size || 1 : item.sent}
        />
      )}
      {item.state === "refused" && item.failure && (
        <div class="upload-failure" role="alert">
          <p class="failure-title">{item.failure.title}</p>
          <p>{item.failure.action}</p>
          {item.failure.detail && <p class="failure-detail">{item.failure.detail}</p>}
          {item.failure.retryable && (
            <button type="button" onClick={onRetry}>
              Try again <span class="visually-hidden">{item.name}</span>
            </button>
          )}
        </div>
      )}
      {item.asset?.duplicates && item.asset.duplicates.length > 0 && (
        <Duplicates ids={item.asset.duplicates.map((d) => d.assetId)} />
      )}
    </li>
  );
}

/** Assets the new one may duplicate: their thumbnails, linked. */
function Duplicates({ ids }: { ids: string[] }) {
  const [assets, setAssets] = useState<AssetDto[]>([]);
  useEffect(() => {
    void Promise.all(ids.map((id) => client.getAsset(id).catch(() => null))).then((found) =>
      setAssets(found.filter((a): a is AssetDto => a !== null)),
    );
  }, [ids.join()]);
  if (assets.length === 0) return null;
  return (
    <div class="duplicates" role="note">
      <p>Possible duplicate of:</p>
      <ul>
        {assets.map((d) => (
          <DuplicateThumb key={d.id} asset={d} />
        ))}
      </ul>
    </div>
  );
}

function DuplicateThumb({ asset }: { asset: AssetDto }) {
  const url = useMediaUrl(mediaPath(asset, [THUMBNAIL_STEP]));
  return (
    <li>
      <a href={href.asset(asset.id)}>
        {url ? (
          <img src={freshUrl(url, asset)} alt={`Existing asset ${titleOf(asset)}`} width={64} height={64} />
        ) : (
          <span>{titleOf(asset)}</span>
        )}
      </a>
    </li>
  );
}
