import { createLogger as createServiceLogger, type Logger } from "@media-platform/observability";

/**
 * The management service's JSON logger (pino via the shared observability package): ISO time,
 * level labels, `service: "management"`, and credentials scrubbed from every line (tokens,
 * Authorization headers, signatures). Nothing here logs request headers.
 */
export function createLogger(level: string): Logger {
  return createServiceLogger({ service: "management", level });
}
