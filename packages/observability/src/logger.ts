import { hostname } from "node:os";
import pino from "pino";
import type { IncomingMessage, ServerResponse } from "node:http";
import { logTraceFields, tracingActive } from "./tracing";
import { REDACTED, redactUrl, sanitize, sanitizeHeaders, scrubString } from "./redact";

export type Logger = pino.Logger;
export type LogLevel = pino.LevelWithSilent;

export interface LoggerOptions {
  /** Service name, added to every line as `service`. */
  service: string;
  /** Default: `LOG_LEVEL` from the environment, else "info". */
  level?: LogLevel | string;
  /** Where lines go (tests pass a stream). Default: stdout. */
  destination?: pino.DestinationStream;
  /** Extra fields on every line. */
  base?: Record<string, unknown>;
}

/**
 * Fixed-path redaction (fast-redact), the first layer. The second layer, applied to every logged
 * object and message, scrubs sensitive keys at any depth and token-shaped strings (see redact.ts).
 */
export const REDACT_PATHS = [
  "req.headers.authorization",
  "req.headers.cookie",
  'req.headers["proxy-authorization"]',
  'req.headers["x-api-key"]',
  'res.headers["set-cookie"]',
  "headers.authorization",
  "headers.cookie",
  "*.authorization",
  "*.password",
  "*.token",
  "*.secret",
  "*.sig",
];

function serializeReq(req: IncomingMessage & { originalUrl?: string }): Record<string, unknown> {
  return {
    method: req.method,
    url: redactUrl(req.originalUrl ?? req.url ?? ""),
    headers: sanitizeHeaders(req.headers as Record<string, unknown>),
    remoteAddress: req.socket?.remoteAddress,
  };
}

function serializeRes(res: ServerResponse): Record<string, unknown> {
  return { statusCode: res.statusCode, headers: sanitizeHeaders(res.getHeaders() as Record<string, unknown>) };
}

function serializeErr(err: unknown): unknown {
  if (!(err instanceof Error)) return sanitize(err);
  // The std serializer returns an object with a custom prototype; copy it so sanitize() walks it
  // (message, stack, cause, and any extra fields the error carries).
  return sanitize({ ...pino.stdSerializers.err(err) });
}

const SERIALIZERS = { req: serializeReq, res: serializeRes, err: serializeErr, error: serializeErr };

/** A pino logger emitting JSON lines with ISO timestamps, level labels, `service`, and secrets scrubbed. */
export function createLogger(options: LoggerOptions): Logger {
  const opts: pino.LoggerOptions = {
    level: options.level ?? process.env.LOG_LEVEL ?? "info",
    base: { service: options.service, pid: process.pid, hostname: hostname(), ...options.base },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: REDACT_PATHS, censor: REDACTED },
    serializers: SERIALIZERS,
    formatters: {
      level: (label) => ({ level: label }),
      bindings: (bindings) => sanitize(bindings),
      log: (obj) => sanitize(obj),
    },
    // trace_id / span_id of the active span on every line, only when tracing is on.
    ...(tracingActive() && { mixin: logTraceFields }),
    hooks: {
      logMethod(args, method) {
        for (let i = 0; i < args.length; i++) {
          const a: unknown = args[i];
          if (typeof a === "string") (args as unknown[])[i] = scrubString(a);
        }
        return method.apply(this, args);
      },
    },
  };
  const logger = options.destination ? pino(opts, options.destination) : pino(opts);
  // pino applies formatters.bindings to the root's base only, not to child() bindings; children are
  // created with Object.create(parent), so this override also covers grandchildren.
  type ChildFn = (this: unknown, bindings: pino.Bindings, options?: pino.ChildLoggerOptions) => Logger;
  const child = logger.child as unknown as ChildFn;
  const scrubbedChild: ChildFn = function (this: unknown, bindings, childOptions) {
    return child.call(this, sanitize(bindings), childOptions);
  };
  (logger as unknown as { child: ChildFn }).child = scrubbedChild;
  return logger;
}
