import { Prisma } from "../generated/prisma/client";

/**
 * Is this error the database being unreachable (a 503 the client may retry) rather than a bad
 * query? Every connection-class failure counts: refused, terminated by the server or an admin,
 * the database refusing connections, too many connections, timeouts, an exhausted pool, a
 * closed PGlite. Measured shapes (Prisma 7 + @prisma/adapter-pg / pglite adapter):
 *  - `PrismaClientKnownRequestError` P1001 with `meta.driverAdapterError.cause.kind` "DatabaseNotReachable";
 *  - P2010 / P2039 with `cause.kind` "postgres" and `cause.code` 57P01, 55000 (ALLOW_CONNECTIONS false);
 *  - P2010 with `cause.kind` "TooManyConnections" (53300);
 *  - plain pg / pg-pool / PGlite errors ("timeout exceeded when trying to connect", "Connection
 *    terminated unexpectedly", "PGlite is closed") that the adapter passes through.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (err instanceof Prisma.PrismaClientInitializationError) return true;
  if (err instanceof Prisma.PrismaClientRustPanicError) return false;
  if (err instanceof Prisma.PrismaClientKnownRequestError) {
    if (PRISMA_CONNECTION_CODES.has(err.code)) return true;
    // "Transaction API error: Unable to start a transaction in the given time" (pool exhausted).
    if (err.code === "P2028" && /unable to start a transaction/i.test(err.message)) return true;
    return isAdapterCauseUnavailable(
      (err.meta as { driverAdapterError?: { cause?: unknown } } | undefined)?.driverAdapterError?.cause,
    );
  }
  return isRawConnectionError(err, 0);
}

/** Prisma's own connection-class codes (https://www.prisma.io/docs/orm/reference/error-reference). */
const PRISMA_CONNECTION_CODES = new Set(["P1001", "P1002", "P1008", "P1011", "P1017", "P2024", "P2037"]);

/** Driver-adapter error kinds that mean "no usable connection". */
const ADAPTER_KINDS = new Set([
  "DatabaseNotReachable",
  "DatabaseDoesNotExist",
  "ConnectionClosed",
  "SocketTimeout",
  "TooManyConnections",
  "TransactionAlreadyClosed",
]);

/**
 * SQLSTATEs of connection failures: class 08 (connection exception), 53300 too_many_connections,
 * 57P01-57P03 (admin/crash shutdown, cannot connect now), 3D000 (database dropped). 55000 is a
 * generic "object not in prerequisite state": only its "not currently accepting connections" form.
 */
function isUnavailableSqlState(code: string, message: string): boolean {
  if (code.startsWith("08")) return true;
  if (code === "53300" || code === "57P01" || code === "57P02" || code === "57P03" || code === "3D000") return true;
  return code === "55000" && /accepting connections/i.test(message);
}

function isAdapterCauseUnavailable(cause: unknown): boolean {
  if (typeof cause !== "object" || cause === null) return false;
  const c = cause as {
    kind?: unknown;
    code?: unknown;
    originalCode?: unknown;
    message?: unknown;
    originalMessage?: unknown;
  };
  if (typeof c.kind === "string" && ADAPTER_KINDS.has(c.kind)) return true;
  const code = typeof c.code === "string" ? c.code : typeof c.originalCode === "string" ? c.originalCode : "";
  const message = String(c.message ?? c.originalMessage ?? "");
  if (code && isUnavailableSqlState(code, message)) return true;
  return CONNECTION_MESSAGES.test(message);
}

const SOCKET_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
]);

/** Messages of pg, pg-pool and PGlite for a connection that is gone or could not be had. */
const CONNECTION_MESSAGES =
  /timeout exceeded when trying to connect|connection terminated|connection timeout|not queryable|after calling end on the pool|PGlite is closed|terminating connection|not currently accepting connections|too many (clients|connections)|the database system is (starting up|shutting down|in recovery mode)/i;

/** Raw driver errors (the blob stores wrap theirs in StorageUnavailableError, so these are the database's). */
function isRawConnectionError(err: unknown, depth: number): boolean {
  if (typeof err !== "object" || err === null || depth > 3) return false;
  const e = err as { code?: unknown; message?: unknown; cause?: unknown };
  const code = typeof e.code === "string" ? e.code : "";
  const message = typeof e.message === "string" ? e.message : "";
  if (SOCKET_CODES.has(code)) return true;
  if (/^[0-9A-Z]{5}$/.test(code) && isUnavailableSqlState(code, message)) return true;
  if (CONNECTION_MESSAGES.test(message)) return true;
  return isRawConnectionError(e.cause, depth + 1);
}
