import pino, { type Logger } from "pino";

export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: "management" },
    // Defence in depth: nothing should log headers, but if it does, no token leaks.
    redact: {
      paths: ["req.headers.authorization", "headers.authorization", "authorization", "token"],
      censor: "[redacted]",
    },
  });
}
