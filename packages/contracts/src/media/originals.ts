import { IMAGE_FORMATS, type AssetFormat } from "../image-formats";
import { MEDIA_EXTENSIONS, MediaUrlError, type MediaExtension, type MediaUrlIssue } from "./url";

/**
 * Originals on the media service (extension, issue 11):
 *   GET|HEAD /original/<assetId>.<ext>[?download=<filename>]
 * The stored bytes unchanged, with their stored Content-Type (the extension never changes the
 * format, as for renditions). `download` adds `Content-Disposition: attachment` (RFC 6266);
 * an empty value downloads as `<assetId>.<ext>`.
 */
export const ORIGINALS_PREFIX = "/original/";

/** Longest download filename, in characters (common filesystem limit). */
export const MAX_DOWNLOAD_FILENAME = 255;

export interface OriginalRequest {
  assetId: string;
  extension: MediaExtension;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isOriginalPath = (path: string): boolean => path.startsWith(ORIGINALS_PREFIX);

/** Parses `/original/<assetId>.<ext>` (query ignored); throws MediaUrlError naming each problem. */
export function parseOriginalPath(path: string): OriginalRequest {
  const pathname = path.split("?", 1)[0] ?? "";
  const file = pathname.slice(ORIGINALS_PREFIX.length);
  if (!isOriginalPath(pathname) || file.includes("/")) {
    throw new MediaUrlError([{ path: "path", message: "expected /original/<assetId>.<extension>" }]);
  }
  const dot = file.lastIndexOf(".");
  const assetId = dot < 0 ? file : file.slice(0, dot);
  const extension = (dot < 0 ? "" : file.slice(dot + 1)).toLowerCase();
  const issues: MediaUrlIssue[] = [];
  if (!UUID.test(assetId)) issues.push({ path: "assetId", message: "asset id must be a UUID" });
  if (!(MEDIA_EXTENSIONS as readonly string[]).includes(extension)) {
    issues.push({ path: "extension", message: `extension must be one of ${MEDIA_EXTENSIONS.join(", ")}` });
  }
  if (issues.length) throw new MediaUrlError(issues);
  return { assetId: assetId.toLowerCase(), extension: extension as MediaExtension };
}

/**
 * Why a download filename is refused, or undefined when it is fine: 1-255 characters, no
 * control characters, no path separators (the name is a file name, never a path), no invisible
 * format characters (a right-to-left override makes `gpj.exe` read as `exe.jpg`), none of the
 * characters Windows refuses in a file name.
 */
export function downloadFilenameProblem(name: string): string | undefined {
  if ([...name].length > MAX_DOWNLOAD_FILENAME) return `must be at most ${MAX_DOWNLOAD_FILENAME} characters`;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f]/.test(name)) return "must not contain control characters";
  if (/[/\\]/.test(name)) return "must be a file name without / or \\";
  if (name === "." || name === "..") return "must be a file name";
  if (/[\p{Cf}\p{Co}\p{Cn}\p{Cs}\p{Zl}\p{Zp}]/u.test(name))
    return "must not contain invisible, unassigned or direction-changing characters";
  if (/[<>:"|?*]/.test(name)) return 'must not contain any of < > : " | ? *';
  return undefined;
}

/**
 * The download name as sent: its extension is the served format's, so a name cannot make the
 * file open as something else (`report.exe` of a JPEG downloads as `report.exe.jpg`).
 */
export function downloadFilenameFor(name: string, format: AssetFormat): string {
  const extensions: readonly string[] = IMAGE_FORMATS[format].extensions;
  const dot = name.lastIndexOf(".");
  if (dot > 0 && extensions.includes(name.slice(dot + 1).toLowerCase())) return name;
  return `${name}.${extensions[0]}`;
}

/** `/original/<assetId>.<ext>`, with `?download=<filename>` when asked (percent-encoded). */
export function formatOriginalPath(assetId: string, extension: MediaExtension, download?: string): string {
  const path = `${ORIGINALS_PREFIX}${assetId}.${extension}`;
  if (download === undefined) return path;
  const problem = downloadFilenameProblem(download);
  if (problem) throw new MediaUrlError([{ path: "download", message: problem }]);
  return `${path}?download=${encodeURIComponent(download)}`;
}
