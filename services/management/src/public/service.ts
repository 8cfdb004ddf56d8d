/**
 * The public surface of `@media-platform/management` (the package's "." entry): the management
 * API as a library, to start it in-process and read its configuration. Code outside
 * services/management relies on these names only; everything else under src/ is internal.
 * Importing this module starts nothing (src/index.ts stays the process entry).
 */
export { loadConfig, managementEnvSchema, type ManagementConfig } from "../config";
export { startManagement, type RunningManagement } from "../server";
export { createApp, type AppDeps } from "../app";
export { createManagementMetrics, type ManagementMetrics } from "../metrics";
export { MANAGEMENT_PROBLEMS } from "../problem";
