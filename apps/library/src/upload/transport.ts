import type { TransportResult, UploadTransport } from "./queue";

/**
 * The multipart transport: one POST /v1/assets/upload per file through XMLHttpRequest (fetch
 * reports no upload progress). The queue knows nothing else of how a file travels, so a resumable
 * transport replaces this one function.
 */
export function multipartTransport(apiUrl: string, token: () => string): UploadTransport {
  return ({ file, collectionId, onProgress, signal }) =>
    new Promise((resolve) => {
      const form = new FormData();
      if (collectionId) form.append("collectionId", collectionId);
      form.append("warnAboutDuplicateImages", "true");
      form.append("file", file, file.name);
      const xhr = new XMLHttpRequest();
      xhr.open("POST", `${apiUrl}/v1/assets/upload`);
      xhr.setRequestHeader("Authorization", `Bearer ${token()}`);
      xhr.setRequestHeader("Accept", "application/json, application/problem+json");
      // The body is the file plus the multipart framing: progress in the file's bytes.
      xhr.upload.onprogress = (e) => {
        if (e.lengthComputable && e.total > 0) onProgress(Math.round(Math.min(1, e.loaded / e.total) * file.size));
      };
      xhr.upload.onload = () => onProgress(file.size);
      xhr.onload = () => {
        let body: unknown = null;
        try {
          body = JSON.parse(xhr.responseText);
        } catch {
          // A proxy's HTML page: the status alone says what happened.
        }
        const retryAfter = Number(xhr.getResponseHeader("Retry-After"));
        resolve({
          status: xhr.status,
          body,
          retryAfterSeconds: Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : undefined,
        });
      };
      xhr.onerror = () => resolve({ status: 0, body: null });
      xhr.onabort = () => resolve({ status: 0, body: null });
      signal.addEventListener("abort", () => xhr.abort(), { once: true });
      xhr.send(form);
    });
}

/** Bytes per PATCH: a dropped connection costs at most this much sent again. */
const TUS_CHUNK_BYTES = 5 * 1024 * 1024;

/**
 * The resumable transport: tus at /v1/assets/tus through tus-js-client, in chunks. A dropped
 * connection resumes from the offset the service holds; an upload stopped by a reload (or an
 * abort, the queue's pause) is found again by the file's fingerprint in localStorage and
 * continues where it stopped. The finished upload's `Asset-Id` is read back as the asset.
 */
export function tusTransport(apiUrl: string, token: () => string): UploadTransport {
  return ({ file, collectionId, onProgress, signal }) =>
    new Promise((resolve) => {
      void import("tus-js-client").then(
        ({ Upload }) => {
          const metadata: Record<string, string> = { filename: file.name, filetype: file.type || "" };
          if (collectionId) metadata.collectionId = collectionId;
          let settled = false;
          const finish = (result: TransportResult) => {
            if (settled) return;
            settled = true;
            resolve(result);
          };
          const upload = new Upload(file, {
            endpoint: `${apiUrl}/v1/assets/tus`,
            chunkSize: TUS_CHUNK_BYTES,
            // Short: a 503's Retry-After is the queue's to wait.
            retryDelays: [0, 1000, 3000],
            headers: { Authorization: `Bearer ${token()}` },
            metadata,
            storeFingerprintForResuming: true,
            removeFingerprintOnSuccess: true,
            onProgress: (sent) => onProgress(sent),
            onSuccess: ({ lastResponse }) => {
              const assetId = lastResponse.getHeader("Asset-Id");
              if (!assetId) {
                finish({ status: 0, body: null });
                return;
              }
              void fetch(`${apiUrl}/v1/assets/${encodeURIComponent(assetId)}`, {
                headers: { Authorization: `Bearer ${token()}`, Accept: "application/json" },
              }).then(
                async (res) => finish({ status: res.ok ? 201 : res.status, body: await res.json().catch(() => null) }),
                () => finish({ status: 0, body: null }),
              );
            },
            onError: (err) => {
              const response = (
                err as {
                  originalResponse?: {
                    getStatus(): number;
                    getBody(): string;
                    getHeader(name: string): string | undefined;
                  } | null;
                }
              ).originalResponse;
              if (!response) {
                finish({ status: 0, body: null });
                return;
              }
              let body: unknown = null;
              try {
                body = JSON.parse(response.getBody());
              } catch {
                // Not a problem document: the status says what happened.
              }
              const retryAfter = Number(response.getHeader("Retry-After"));
              finish({
                status: response.getStatus(),
                body,
                retryAfterSeconds: Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : undefined,
              });
            },
          });
          signal.addEventListener(
            "abort",
            // Abort keeps the upload on the server: the next start of this file resumes it.
            () => void upload.abort().then(() => finish({ status: 0, body: null })),
            { once: true },
          );
          void upload.findPreviousUploads().then((previous) => {
            if (previous[0]) upload.resumeFromPreviousUpload(previous[0]);
            upload.start();
          });
        },
        () => resolve({ status: 0, body: null }),
      );
    });
}

/**
 * Small files go as one multipart request (which also reports duplicates); files larger than one
 * tus chunk go resumable, where a dropped connection or a reload costs at most a chunk.
 */
export function libraryTransport(apiUrl: string, token: () => string): UploadTransport {
  const multipart = multipartTransport(apiUrl, token);
  const resumable = tusTransport(apiUrl, token);
  return (job) => (job.file.size > TUS_CHUNK_BYTES ? resumable(job) : multipart(job));
}
