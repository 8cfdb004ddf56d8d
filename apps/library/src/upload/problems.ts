/**
 * What a person reads when a file is refused: a title saying what happened, the server's detail
 * when it adds something, and what to do. Keyed by the problem type the management API answers
 * (https://media-platform.dev/problems/<slug>), so a reworded detail never changes the advice.
 */

export interface UploadFailure {
  /** What happened, e.g. "Format not supported: HEIC". */
  title: string;
  /** What to do about it. */
  action: string;
  /** The server's own explanation, when it has one. */
  detail?: string;
  /** Trying again later may work (busy, connection lost). */
  retryable: boolean;
}

export interface FailedFile {
  name: string;
  size: number;
  maxBytes: number;
}

const ACCEPTED = "JPEG, PNG, WebP, AVIF, GIF, TIFF or SVG";

export const formatBytes = (n: number): string =>
  n < 1024
    ? `${n} B`
    : n < 1024 * 1024
      ? `${(n / 1024).toFixed(1)} KB`
      : `${(n / 1024 / 1024).toFixed(n >= 10 * 1024 * 1024 ? 0 : 1)} MB`;

/** The file's kind as people name it: its extension in capitals ("HEIC"), else "this file". */
function kindOf(name: string): string {
  const dot = name.lastIndexOf(".");
  const ext = dot > 0 ? name.slice(dot + 1) : "";
  return /^[A-Za-z0-9]{1,8}$/.test(ext) ? ext.toUpperCase() : "this file";
}

/** The slug of a problem type URI (or a bare slug). */
function slugOf(type: unknown): string {
  return typeof type === "string" ? type.slice(type.lastIndexOf("/") + 1) : "";
}

export function describeUploadFailure(result: { status: number; body: unknown }, file: FailedFile): UploadFailure {
  const problem = (typeof result.body === "object" && result.body !== null ? result.body : {}) as {
    type?: unknown;
    detail?: unknown;
  };
  const detail = typeof problem.detail === "string" ? problem.detail : undefined;
  const slug = slugOf(problem.type);
  if (result.status === 0) {
    return {
      title: "Connection lost",
      action: "Check your network connection, then choose “Try again”.",
      retryable: true,
    };
  }
  switch (slug || String(result.status)) {
    case "unsupported-media-type":
    case "415":
      return {
        title: `Format not supported: ${kindOf(file.name)}`,
        action: `Save or export it as ${ACCEPTED}, then upload it again.`,
        detail,
        retryable: false,
      };
    case "payload-too-large":
    case "413":
      return {
        title: `File too large: ${formatBytes(file.size)}`,
        action: `Files can be up to ${formatBytes(file.maxBytes)}. Export a smaller version and upload that.`,
        retryable: false,
      };
    case "undecodable-image":
      return {
        title: "Image is damaged or incomplete",
        action: "Open it in an image editor and save it again, or upload the original file.",
        detail,
        retryable: false,
      };
    case "image-too-large":
      return {
        title: "Image has too many pixels",
        action: "Reduce its width and height in an image editor, then upload it again.",
        detail,
        retryable: false,
      };
    case "metadata-removal-failed":
      return {
        title: "Could not remove location data",
        action:
          "The photo's location could not be taken out, so it was not stored. Export it without location data (or save it again in an editor) and upload that.",
        retryable: false,
      };
    case "service-unavailable":
    case "503":
    case "429":
      return {
        title: "The server is busy",
        action: "It was tried several times. Choose “Try again” in a minute.",
        retryable: true,
      };
    case "request-timeout":
    case "408":
      return {
        title: "The upload stalled",
        action: "The connection stopped sending. Check your network, then choose “Try again”.",
        retryable: true,
      };
    case "unauthorized":
    case "401":
      return { title: "You were signed out", action: "Sign in again, then upload the file again.", retryable: false };
    default:
      return {
        title: result.status >= 500 ? "The server could not store the file" : "The file was refused",
        action: result.status >= 500 ? "Choose “Try again” in a minute." : "Check the file, then upload it again.",
        detail,
        retryable: result.status >= 500,
      };
  }
}
