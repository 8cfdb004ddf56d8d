import type { Server } from "node:http";
import { constants } from "node:os";

/** Something to close after the HTTP server drained: a function, or a named one for the logs. */
export type CloseHook = (() => Promise<unknown> | unknown) | { name: string; close: () => Promise<unknown> | unknown };

export interface ShutdownLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  /** pino's flush: called before exit so buffered lines are not lost. */
  flush?(cb?: (err?: Error) => void): void;
}

export interface ShutdownOptions {
  /** How long in-flight requests may take once shutdown started; then their connections are cut. Default 10000. */
  deadlineMs?: number;
  /** Run in order after the server(s) closed (DB pools, Redis, workers). */
  hooks?: CloseHook[];
  /** Each hook gets this long before it is abandoned (logged) and the next one runs. Default 5000. */
  hookTimeoutMs?: number;
  logger?: ShutdownLogger;
  /** Signals that start shutdown (a second one forces exit). Default SIGTERM and SIGINT; `false`: none. */
  signals?: readonly NodeJS.Signals[] | false;
  /** Called with the exit code when shutdown finished (0, or 1 when a hook failed) or was forced. Default process.exit; `false`: never exit (tests). */
  exit?: ((code: number) => void) | false;
}

export interface ShutdownController {
  /** Starts shutdown (idempotent: later calls return the same promise); resolves with the exit code after calling `exit`. */
  shutdown(reason?: string): Promise<number>;
  /** True from the moment shutdown started (wire into healthRouter's `isDraining`). */
  isShuttingDown(): boolean;
  /** Removes the signal handlers (tests). */
  dispose(): void;
}

const noopLogger: ShutdownLogger = { info() {}, warn() {}, error() {} };

function hookName(hook: CloseHook, i: number): string {
  return typeof hook === "function" ? hook.name || `hook#${i + 1}` : hook.name;
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    // An error here only means "was not listening"; either way nothing is left to wait for.
    server.close(() => resolve());
  });
}

async function withTimeout(p: Promise<unknown>, ms: number, what: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      p,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
        timer.unref();
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

function flushLogs(log: ShutdownLogger): Promise<void> {
  return new Promise((resolve) => {
    if (typeof log.flush !== "function") return resolve();
    const t = setTimeout(resolve, 500);
    t.unref();
    try {
      log.flush(() => {
        clearTimeout(t);
        resolve();
      });
    } catch {
      clearTimeout(t);
      resolve();
    }
  });
}

/**
 * Graceful shutdown for one or more HTTP servers: on the first SIGTERM/SIGINT (or `shutdown()`), stop
 * accepting connections, close idle keep-alive connections (and keep closing those that become idle),
 * answer requests still arriving on open connections with `Connection: close`, let in-flight requests
 * finish until `deadlineMs`, then cut the remaining connections; then run `hooks` in order; then
 * `exit(code)`. A second signal exits at once (128 + signal number).
 */
export function gracefulShutdown(
  servers: Server | readonly Server[],
  options: ShutdownOptions = {},
): ShutdownController {
  const list: readonly Server[] = Array.isArray(servers) ? servers : [servers as Server];
  const deadlineMs = options.deadlineMs ?? 10_000;
  const hookTimeoutMs = options.hookTimeoutMs ?? 5_000;
  const hooks = options.hooks ?? [];
  const log = options.logger ?? noopLogger;
  const exit = options.exit === false ? undefined : (options.exit ?? ((code: number) => process.exit(code)));
  const signals = options.signals === false ? [] : (options.signals ?? (["SIGTERM", "SIGINT"] as const));

  let running: Promise<number> | undefined;

  const markClose = (_req: unknown, res: { setHeader(name: string, value: string): unknown; headersSent: boolean }) => {
    if (!res.headersSent) res.setHeader("Connection", "close");
  };

  async function run(reason: string): Promise<number> {
    const closed = list.map((s) => {
      s.prependListener("request", markClose);
      const p = closeServer(s);
      s.closeIdleConnections();
      return p;
    });
    // Logged after the listeners are closed: when this line is out, new connections are refused.
    log.info({ reason, deadlineMs }, "shutting down: no longer accepting connections, draining in-flight requests");
    // A keep-alive connection becomes idle when its in-flight response is done: close it then.
    const idleSweep = setInterval(() => list.forEach((s) => s.closeIdleConnections()), 50);
    idleSweep.unref();
    let cut = false;
    const deadline = setTimeout(() => {
      cut = true;
      log.warn({ deadlineMs }, "shutdown deadline reached: closing remaining connections");
      list.forEach((s) => s.closeAllConnections());
    }, deadlineMs);
    deadline.unref();
    await Promise.all(closed);
    clearInterval(idleSweep);
    clearTimeout(deadline);
    log.info(
      { cut },
      cut ? "server closed (in-flight requests cut at the deadline)" : "server closed: all in-flight requests finished",
    );

    let failed = false;
    for (const [i, hook] of hooks.entries()) {
      const name = hookName(hook, i);
      try {
        await withTimeout(
          Promise.resolve().then(() => (typeof hook === "function" ? hook() : hook.close())),
          hookTimeoutMs,
          name,
        );
        log.info({ hook: name }, `closed ${name}`);
      } catch (err) {
        failed = true;
        log.error({ hook: name, err }, `close hook ${name} failed`);
      }
    }
    const code = failed ? 1 : 0;
    log.info({ code }, "shutdown complete");
    return code;
  }

  function shutdown(reason = "shutdown() called"): Promise<number> {
    running ??= run(reason).then(async (code) => {
      if (exit) {
        await flushLogs(log);
        exit(code);
      }
      return code;
    });
    return running;
  }

  const onSignal = (signal: NodeJS.Signals): void => {
    if (running) {
      const code = 128 + (constants.signals[signal] ?? 0);
      log.error({ signal, code }, `second ${signal} during shutdown: forcing exit`);
      exit?.(code); // immediately: pino flushes its own destination synchronously on process exit
      return;
    }
    void shutdown(signal);
  };
  for (const s of signals) process.on(s, onSignal);

  return {
    shutdown,
    isShuttingDown: () => running !== undefined,
    dispose: () => {
      for (const s of signals) process.off(s, onSignal);
    },
  };
}
