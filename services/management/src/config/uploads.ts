import os from "node:os";
import path from "node:path";

/** Spool files are named `<prefix><uuid>` so a start-up sweep can recognise them. */
export const SPOOL_PREFIX = "upload-";

/** How uploads are received: UPLOAD_SPOOL_DIR, UPLOAD_IDLE_TIMEOUT_MS, MAX_CONCURRENT_UPLOADS(_PER_WORKSPACE). */
export interface UploadSettings {
  /** Folder upload bodies are streamed to while they are checked (one file per upload, removed after). */
  spoolDir: string;
  /** An upload body that sends nothing for this long is answered 408 and its connection closed. */
  bodyIdleTimeoutMs: number;
  /** Uploads received or processed at once by this process; beyond it 503 + Retry-After. */
  maxConcurrentUploads: number;
  /**
   * Of those, the most one workspace may hold at once (default: half, at least 1), so one
   * workspace cannot take every slot; beyond it that workspace gets 503 + Retry-After.
   */
  maxConcurrentUploadsPerWorkspace?: number;
}

/** The settings when the environment sets none (tests, embedded use of createApp). */
export const defaultUploadSettings = (): UploadSettings => ({
  spoolDir: path.join(os.tmpdir(), "media-platform-uploads"),
  bodyIdleTimeoutMs: 30_000,
  maxConcurrentUploads: 8,
});

/**
 * How many uploads one workspace may have in flight on this process: MAX_CONCURRENT_UPLOADS_PER_WORKSPACE,
 * else half of MAX_CONCURRENT_UPLOADS (at least 1), never more than the process's cap. The
 * library's upload queue is sized to it (a <meta> tag), so a batch never meets the 503.
 */
export const uploadsPerWorkspace = (
  settings: Pick<UploadSettings, "maxConcurrentUploads" | "maxConcurrentUploadsPerWorkspace">,
): number =>
  Math.min(
    settings.maxConcurrentUploads,
    settings.maxConcurrentUploadsPerWorkspace ?? Math.max(1, Math.floor(settings.maxConcurrentUploads / 2)),
  );
