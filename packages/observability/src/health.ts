import type { IncomingMessage, ServerResponse } from "node:http";
import { Router } from "express";
import type { Logger } from "./logger";
import { scrubString } from "./redact";

/**
 * A readiness check: resolve when the dependency is reachable, throw/reject otherwise. The signal is
 * aborted when the check times out, so checks that support cancellation can stop early.
 */
export type HealthCheck = (signal: AbortSignal) => Promise<unknown> | unknown;

export interface DependencyStatus {
  status: "ok" | "error";
  durationMs: number;
  /** Why it failed (scrubbed of credentials, truncated), when `status` is "error". */
  error?: string;
}

export interface ReadinessReport {
  status: "ok" | "unavailable" | "draining";
  /** Names of the dependencies that failed (empty when ready). */
  failing: string[];
  checks: Record<string, DependencyStatus>;
}

export interface HealthOptions {
  /** Named checks; `undefined`/`null`/`false` entries are skipped (e.g. Redis when not configured). */
  checks: Record<string, HealthCheck | undefined | null | false>;
  /** Per-check timeout. Default 2000 ms. */
  timeoutMs?: number;
  /** Failed checks are logged at warn level. */
  logger?: Pick<Logger, "warn">;
  /** When it returns true, /readyz answers 503 `draining` without running checks (set during shutdown). */
  isDraining?: () => boolean;
  /**
   * Include the failure message in the /readyz body (scrubbed of credentials). Default false: the
   * probe is public and error text names internal hosts; the warn log always carries it.
   */
  exposeErrors?: boolean;
}

class CheckTimeout extends Error {
  constructor(ms: number) {
    super(`timed out after ${ms} ms`);
  }
}

async function runOne(check: HealthCheck, timeoutMs: number): Promise<DependencyStatus> {
  const start = performance.now();
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const err = new CheckTimeout(timeoutMs);
      controller.abort(err);
      reject(err);
    }, timeoutMs);
    timer.unref();
  });
  try {
    await Promise.race([Promise.resolve().then(() => check(controller.signal)), timeout]);
    return { status: "ok", durationMs: Math.round(performance.now() - start) };
  } catch (err) {
    const message = err instanceof Error ? err.message || err.name : String(err);
    return {
      status: "error",
      durationMs: Math.round(performance.now() - start),
      error: scrubString(message).slice(0, 200),
    };
  } finally {
    clearTimeout(timer);
  }
}

/** Runs every configured check concurrently, each bounded by `timeoutMs`. */
export async function checkReadiness(checks: HealthOptions["checks"], timeoutMs = 2000): Promise<ReadinessReport> {
  const entries = Object.entries(checks).filter((e): e is [string, HealthCheck] => typeof e[1] === "function");
  const results = await Promise.all(entries.map(([, check]) => runOne(check, timeoutMs)));
  const report: ReadinessReport = { status: "ok", failing: [], checks: {} };
  entries.forEach(([name], i) => {
    report.checks[name] = results[i];
    if (results[i].status !== "ok") report.failing.push(name);
  });
  if (report.failing.length > 0) report.status = "unavailable";
  return report;
}

/** A GET/HEAD handler usable from Express or a bare node:http server (HEAD: Node sends no body). */
export type OperationHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/** The public form of a report: each check's status and duration, no error text (a copy: the log keeps it). */
function withoutErrors(report: ReadinessReport): ReadinessReport {
  const checks = Object.fromEntries(
    Object.entries(report.checks).map(([name, { status, durationMs }]) => [name, { status, durationMs }]),
  );
  return { ...report, checks };
}

/** The probes' answer: JSON, never cached. */
function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const json = JSON.stringify(body);
  res.writeHead(status, {
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": Buffer.byteLength(json),
    "Cache-Control": "no-store",
  });
  res.end(json);
}

/**
 * `GET /healthz`: 200 while the process can answer (no dependency checks).
 * `GET /readyz`: 200 `{ status: "ok", failing: [], checks: { name: { status, durationMs } } }` when every
 * check passes within the timeout; else 503 with `failing` naming the dependencies (each check's
 * error only with `exposeErrors`; it is always logged). Both `Cache-Control: no-store`. Framework-free, so a service can answer its
 * probes before its Express app (media does: see services/media/src/server.ts).
 */
export function healthHandlers(options: HealthOptions): { healthz: OperationHandler; readyz: OperationHandler } {
  const timeoutMs = options.timeoutMs ?? 2000;
  return {
    healthz: async (_req, res) => sendJson(res, 200, { status: "ok", uptimeSeconds: Math.round(process.uptime()) }),
    readyz: async (_req, res) => {
      if (options.isDraining?.()) {
        sendJson(res, 503, { status: "draining", failing: [], checks: {} } satisfies ReadinessReport);
        return;
      }
      const report = await checkReadiness(options.checks, timeoutMs);
      if (report.failing.length > 0) {
        options.logger?.warn(
          { failing: report.failing, checks: report.checks },
          `readiness check failed: ${report.failing.join(", ")}`,
        );
      }
      sendJson(
        res,
        report.failing.length > 0 ? 503 : 200,
        options.exposeErrors === true ? report : withoutErrors(report),
      );
    },
  };
}

/** `GET /healthz` and `GET /readyz` (healthHandlers) as an Express router. */
export function healthRouter(options: HealthOptions): Router {
  const { healthz, readyz } = healthHandlers(options);
  const router = Router();
  router.get("/healthz", (req, res, next) => healthz(req, res).catch(next));
  router.get("/readyz", (req, res, next) => readyz(req, res).catch(next));
  return router;
}
