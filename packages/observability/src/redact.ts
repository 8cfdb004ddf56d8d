// Secret scrubbing for anything that reaches a log line: keys that name credentials, token-shaped
// strings (Bearer values, JWTs), credential query parameters (the media service's `sig`, presigned
// S3 parameters) and passwords inside connection URLs (postgres://user:pass@host, redis://:pass@host).

export const REDACTED = "[REDACTED]";

/** Object keys whose values are never logged (matched case-insensitively, `-`/`_` optional). */
const SENSITIVE_KEY =
  /^(?:(?:proxy[-_]?)?authorization|cookies?|set[-_]?cookie|sig|jwt|credentials?|x[-_]amz[-_](?:signature|credential|security[-_]token)|.*(?:token|secret|password|passwd|passphrase|signature|api[-_]?key|private[-_]?key|signing[-_]?key))$/i;

/** Query parameters whose values are replaced by {@link REDACTED} in logged URLs. */
const SENSITIVE_PARAM =
  /([?&;](?:sig|signature|token|access_token|id_token|refresh_token|api_key|apikey|key|code|password|x-amz-signature|x-amz-credential|x-amz-security-token)=)[^&#;\s"']*/gi;
const BEARER = /\b(Bearer|Basic)\s+[A-Za-z0-9\-._~+/]{8,}=*/gi;
const JWT = /\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g;
const URL_PASSWORD = /(\b[a-z][a-z0-9+.-]*:\/\/[^:/?#\s@]*:)[^@/?#\s]+@/gi;
// Cheap pre-filter: a string without any of these fragments cannot match the patterns above.
const MAYBE_SECRET = /=|eyJ|bearer|basic|:\/\//i;

export function isSensitiveKey(key: string): boolean {
  return SENSITIVE_KEY.test(key);
}

/** Replaces token-like substrings (Bearer/Basic values, JWTs, credential query params, URL passwords). */
export function scrubString(s: string): string {
  if (!MAYBE_SECRET.test(s)) return s;
  return s
    .replace(BEARER, `$1 ${REDACTED}`)
    .replace(JWT, REDACTED)
    .replace(SENSITIVE_PARAM, `$1${REDACTED}`)
    .replace(URL_PASSWORD, `$1${REDACTED}@`);
}

/**
 * A URL (path + query, as in `req.originalUrl`) safe to log: values of `sig`, `token`, presigned-S3
 * and similar parameters are replaced; everything else is kept.
 */
export function redactUrl(url: string): string {
  return url.indexOf("?") === -1 && url.indexOf("://") === -1 ? url : scrubString(url);
}

function isPlainObject(v: object): v is Record<string, unknown> {
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/**
 * Deep copy-on-write scrub of plain objects/arrays (depth-limited): sensitive keys -> "[REDACTED]",
 * strings -> {@link scrubString}. Non-plain objects (Errors, streams, requests) are returned as is;
 * pino serializers handle those. Returns the same reference when nothing had to change.
 */
export function sanitize<T>(value: T, depth = 0): T {
  if (typeof value === "string") return scrubString(value) as T;
  if (value === null || typeof value !== "object" || depth > 8) return value;
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const v = sanitize(value[i], depth + 1);
      if (v !== value[i]) (out ??= value.slice())[i] = v;
    }
    return (out ?? value) as T;
  }
  if (!isPlainObject(value)) return value;
  let out: Record<string, unknown> | undefined;
  for (const key of Object.keys(value)) {
    const v = value[key];
    const next = v !== undefined && v !== null && v !== "" && isSensitiveKey(key) ? REDACTED : sanitize(v, depth + 1);
    if (next !== v) (out ??= { ...value })[key] = next;
  }
  return (out ?? value) as T;
}

/** Headers safe to log: credential headers redacted, other values scrubbed. */
export function sanitizeHeaders(headers: Record<string, unknown>): Record<string, unknown> {
  return sanitize(headers);
}
