import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";

export const REQUEST_ID_HEADER = "X-Request-Id";
const REQUEST_ID_HEADER_LC = "x-request-id";

/** Longest accepted incoming request id (a UUID is 36, a W3C traceparent 55). */
export const MAX_REQUEST_ID_LENGTH = 128;
// Letters, digits and `-_.:/+=@` only: no whitespace, quotes or control characters, so an id can be
// logged, echoed in a header and forwarded without escaping or log injection.
const REQUEST_ID_RE = /^[A-Za-z0-9][A-Za-z0-9\-_.:/+=@]*$/;

export function isValidRequestId(value: unknown): value is string {
  return (
    typeof value === "string" && value.length > 0 && value.length <= MAX_REQUEST_ID_LENGTH && REQUEST_ID_RE.test(value)
  );
}

export function generateRequestId(): string {
  return randomUUID();
}

/** The incoming `X-Request-Id` when sane, else a fresh UUIDv4. */
export function resolveRequestId(incoming: string | string[] | undefined): string {
  return isValidRequestId(incoming) ? incoming : randomUUID();
}

/**
 * Request id for a bare `node:http` handler: reuses an id already set on the response (so a hot-path
 * handler and the Express fallback agree), else accepts the incoming header when sane, else
 * generates one; sets `X-Request-Id` on the response and returns it. No logger, no allocation beyond
 * the header itself (and the UUID when one is generated).
 */
export function applyRequestId(req: IncomingMessage, res: ServerResponse): string {
  const existing = res.getHeader(REQUEST_ID_HEADER_LC);
  if (typeof existing === "string" && isValidRequestId(existing)) return existing;
  const id = resolveRequestId(req.headers[REQUEST_ID_HEADER_LC]);
  res.setHeader(REQUEST_ID_HEADER, id);
  return id;
}

/** Headers to forward on outgoing calls made on behalf of a request. */
export function propagationHeaders(requestId: string): { "x-request-id": string } {
  return { "x-request-id": requestId };
}
