import { useRef, useState } from "preact/hooks";
import type { AssetDto, Problem, UploadResponse } from "@media-platform/client";
import { thumbnailUrl, titleOf } from "../components/thumb";
import { href } from "../route";
import { client, settings, signOut, token } from "../session";

interface Item {
  key: number;
  name: string;
  size: number;
  loaded: number;
  state: "uploading" | "done" | "refused";
  asset?: UploadResponse;
  duplicates?: AssetDto[];
  problem?: string;
}

/**
 * One multipart POST per file through XMLHttpRequest: fetch reports no upload progress. Resolves
 * with the status and the parsed body (the asset, or the problem).
 */
function send(file: File, collectionId: string, onProgress: (fraction: number) => void) {
  return new Promise<{ status: number; body: unknown }>((resolve, reject) => {
    const form = new FormData();
    if (collectionId) form.append("collectionId", collectionId);
    form.append("warnAboutDuplicateImages", "true");
    form.append("file", file, file.name);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", `${settings.apiUrl}/v1/assets/upload`);
    xhr.setRequestHeader("Authorization", `Bearer ${token.get() ?? ""}`);
    xhr.setRequestHeader("Accept", "application/json, application/problem+json");
    // The body is the file plus the multipart framing: progress is the fraction sent.
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable && e.total > 0) onProgress(Math.min(1, e.loaded / e.total));
    };
    xhr.onload = () => {
      let body: unknown;
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        body = { title: xhr.statusText, detail: xhr.responseText.slice(0, 300) };
      }
      resolve({ status: xhr.status, body });
    };
    xhr.onerror = () => reject(new Error("network error"));
    xhr.send(form);
  });
}

let nextKey = 0;

export function Upload({ collectionId, onUploaded }: { collectionId: string; onUploaded: () => void }) {
  const [items, setItems] = useState<Item[]>([]);
  const [over, setOver] = useState(false);
  const input = useRef<HTMLInputElement>(null);
  const update = (key: number, patch: Partial<Item>) =>
    setItems((prev) => prev.map((i) => (i.key === key ? { ...i, ...patch } : i)));

  async function uploadAll(files: File[]) {
    const batch = files.map((f) => ({
      file: f,
      item: { key: nextKey++, name: f.name, size: f.size, loaded: 0, state: "uploading" as const },
    }));
    setItems((prev) => [...batch.map((b) => b.item), ...prev]);
    await Promise.all(
      batch.map(async ({ file, item }) => {
        try {
          const { status, body } = await send(file, collectionId, (fraction) =>
            update(item.key, { loaded: Math.round(fraction * item.size) }),
          );
          if (status === 401) signOut();
          if (status !== 201) {
            const problem = body as Partial<Problem>;
            update(item.key, { state: "refused", problem: problem.detail ?? problem.title ?? `HTTP ${status}` });
            return;
          }
          const asset = body as UploadResponse;
          const duplicates = await Promise.all(
            (asset.duplicates ?? []).map((d) => client.getAsset(d.assetId).catch(() => null)),
          );
          update(item.key, {
            state: "done",
            loaded: item.size,
            asset,
            duplicates: duplicates.filter((d): d is AssetDto => d !== null),
          });
        } catch (err) {
          update(item.key, { state: "refused", problem: err instanceof Error ? err.message : String(err) });
        }
      }),
    );
    onUploaded();
  }

  const totalSize = items.reduce((s, i) => s + i.size, 0);
  const totalLoaded = items.reduce((s, i) => s + (i.state === "uploading" ? i.loaded : i.size), 0);

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
          const files = [...(e.dataTransfer?.files ?? [])];
          if (files.length) void uploadAll(files);
        }}
      >
        <p>Drop images here, or</p>
        <label class="button" for="files">
          Choose files
        </label>
        <input
          ref={input}
          id="files"
          class="visually-hidden"
          type="file"
          multiple
          accept="image/*,.heic,.heif,.pdf,application/pdf,.dng,.cr2,.cr3,.nef,.arw,.raf,.rw2,.orf"
          onChange={(e) => {
            const files = [...(e.currentTarget.files ?? [])];
            e.currentTarget.value = "";
            if (files.length) void uploadAll(files);
          }}
        />
      </div>
      {items.length > 0 && (
        <div class="progress-list">
          <label for="total-progress">Total: {Math.round((100 * totalLoaded) / Math.max(totalSize, 1))}%</label>
          <progress id="total-progress" max={totalSize || 1} value={totalLoaded} />
          <ul>
            {items.map((item) => (
              <li key={item.key} class={`upload-item ${item.state}`} data-state={item.state}>
                <label for={`progress-${item.key}`}>{item.name}</label>
                <progress
                  id={`progress-${item.key}`}
                  max={item.size || 1}
                  value={item.state === "uploading" ? item.loaded : item.size}
                />
                {item.state === "done" && item.asset && (
                  <a href={href.asset(item.asset.id)}>Open {titleOf(item.asset)}</a>
                )}
                {item.state === "refused" && (
                  <p class="error" role="alert">
                    Refused: {item.problem}
                  </p>
                )}
                {item.duplicates && item.duplicates.length > 0 && (
                  <div class="duplicates" role="note">
                    <p>Possible duplicate of:</p>
                    <ul>
                      {item.duplicates.map((d) => (
                        <li key={d.id}>
                          <a href={href.asset(d.id)}>
                            <img src={thumbnailUrl(d)} alt={`Existing asset ${titleOf(d)}`} width={64} height={64} />
                          </a>
                        </li>
                      ))}
                    </ul>
                  </div>
                )}
              </li>
            ))}
          </ul>
        </div>
      )}
    </section>
  );
}
