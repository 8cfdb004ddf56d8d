/**
 * The public surface of `@media-platform/media` (the package's "." entry): the media service as
 * a library, to start it in-process and read its configuration. Code outside services/media
 * relies on these names only; everything else under src/ is internal. Importing this module
 * starts nothing (src/index.ts stays the process entry).
 */
export { mediaEnvSchema, loadMediaConfig, MediaConfigError, type MediaConfig, type MediaEnv } from "../config";
export {
  startMedia,
  createMediaServer,
  defaultMediaServerOptions,
  type MediaServer,
  type MediaServerDeps,
  type MediaServerOptions,
  type RunningMedia,
} from "../server";
export { signMediaPath, signedMediaUrl } from "../delivery/signing";
export { createMediaMetrics, type MediaMetrics } from "../metrics";
export { ROUTE_MEDIA } from "../app";
