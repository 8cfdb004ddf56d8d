import type { UploadTransport } from "./queue";

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
