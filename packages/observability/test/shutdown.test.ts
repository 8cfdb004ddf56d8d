import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import http from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { gracefulShutdown, type ShutdownLogger } from "../src";

function deferred<T = void>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

function get(port: number, urlPath: string, agent: http.Agent | false = false) {
  return new Promise<{ status: number; body: string; connection?: string }>((resolve, reject) => {
    http
      .get({ host: "127.0.0.1", port, path: urlPath, agent }, (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c) => (body += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body, connection: res.headers.connection }));
        res.on("error", reject);
      })
      .on("error", reject);
  });
}

function connect(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, "127.0.0.1", () => {
      s.destroy();
      resolve();
    });
    s.on("error", reject);
  });
}

function recordingLogger() {
  const lines: { level: string; obj: Record<string, unknown>; msg?: string }[] = [];
  const at =
    (level: string) =>
    (obj: object, msg?: string): void => {
      lines.push({ level, obj: obj as Record<string, unknown>, msg });
    };
  const logger: ShutdownLogger = { info: at("info"), warn: at("warn"), error: at("error") };
  return { logger, lines };
}

async function listen(handler: http.RequestListener): Promise<{ server: http.Server; port: number }> {
  const server = http.createServer(handler);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { server, port: (server.address() as AddressInfo).port };
}

/** A server whose /slow request waits for `release` after signalling `started`; every answer is `body`. */
async function listenWithSlowPath(body: string) {
  const started = deferred();
  const release = deferred();
  const listening = await listen(async (req, res) => {
    if (req.url === "/slow") {
      started.resolve();
      await release.promise;
    }
    res.end(body);
  });
  return { ...listening, started, release };
}

describe("gracefulShutdown (in process)", () => {
  it("lets the in-flight request finish, refuses new connections, then runs hooks in order", async () => {
    const { server, port, started, release } = await listenWithSlowPath("done");
    const order: string[] = [];
    const exit = jest.fn();
    const { logger, lines } = recordingLogger();
    const controller = gracefulShutdown(server, {
      deadlineMs: 60_000,
      signals: false,
      exit,
      logger,
      hooks: [
        async () => {
          order.push("database");
        },
        { name: "redis", close: async () => void order.push("redis") },
        () => void order.push("workers"),
      ],
    });

    const inflight = get(port, "/slow");
    await started.promise;
    expect(controller.isShuttingDown()).toBe(false);
    const done = controller.shutdown("test");
    expect(controller.shutdown("again")).toBe(done); // idempotent
    expect(controller.isShuttingDown()).toBe(true);

    await expect(connect(port)).rejects.toMatchObject({ code: "ECONNREFUSED" });
    expect(order).toEqual([]); // nothing closed while a request is in flight

    release.resolve();
    await expect(inflight).resolves.toMatchObject({ status: 200, body: "done" });
    await expect(done).resolves.toBe(0);
    expect(order).toEqual(["database", "redis", "workers"]);
    expect(exit).toHaveBeenCalledTimes(1);
    expect(exit).toHaveBeenCalledWith(0);
    expect(lines.find((l) => l.obj.cut !== undefined)?.obj.cut).toBe(false);
  });

  it("closes idle keep-alive connections and those whose request finishes during shutdown", async () => {
    const { server, port, started, release } = await listenWithSlowPath("ok");
    const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
    // One connection left idle, one busy with a slow request.
    await expect(get(port, "/fast", agent)).resolves.toMatchObject({ status: 200 });
    const slow = get(port, "/slow", agent);
    await started.promise;
    const { logger, lines } = recordingLogger();
    const done = gracefulShutdown(server, { deadlineMs: 60_000, signals: false, exit: false, logger }).shutdown();
    release.resolve();
    await expect(slow).resolves.toMatchObject({ status: 200, body: "ok" });
    await expect(done).resolves.toBe(0);
    expect(lines.find((l) => l.obj.cut !== undefined)?.obj.cut).toBe(false);
    agent.destroy();
  });

  it("cuts a request that exceeds the deadline and still completes shutdown", async () => {
    const started = deferred();
    let handlerFinished = false;
    const { server, port } = await listen(async (_req, res) => {
      started.resolve();
      await new Promise(() => {}); // never answers
      handlerFinished = true;
      res.end();
    });
    const order: string[] = [];
    const { logger, lines } = recordingLogger();
    const controller = gracefulShutdown(server, {
      deadlineMs: 100,
      signals: false,
      exit: false,
      logger,
      hooks: [async () => void order.push("database")],
    });
    const inflight = get(port, "/hang");
    await started.promise;
    await expect(controller.shutdown()).resolves.toBe(0);
    await expect(inflight).rejects.toMatchObject({ code: "ECONNRESET" });
    expect(handlerFinished).toBe(false);
    expect(order).toEqual(["database"]);
    expect(lines.some((l) => l.level === "warn" && /deadline/.test(l.msg ?? ""))).toBe(true);
    expect(lines.find((l) => l.obj.cut !== undefined)?.obj.cut).toBe(true);
  });

  it("runs the remaining hooks when one fails or hangs, and reports exit code 1", async () => {
    const { server } = await listen((_req, res) => res.end());
    const order: string[] = [];
    const exit = jest.fn();
    const { logger, lines } = recordingLogger();
    const code = await gracefulShutdown(server, {
      signals: false,
      exit,
      logger,
      hookTimeoutMs: 50,
      hooks: [
        { name: "database", close: async () => Promise.reject(new Error("pool already closed")) },
        { name: "redis", close: () => new Promise(() => order.push("redis started")) },
        { name: "workers", close: async () => void order.push("workers") },
      ],
    }).shutdown();
    expect(code).toBe(1);
    expect(exit).toHaveBeenCalledWith(1);
    expect(order).toEqual(["redis started", "workers"]);
    expect(lines.filter((l) => l.level === "error").map((l) => l.obj.hook)).toEqual(["database", "redis"]);
  });

  it("starts on a signal, and a second signal forces exit", async () => {
    const release = deferred();
    const started = deferred();
    const { server, port } = await listen(async (_req, res) => {
      started.resolve();
      await release.promise;
      res.end("late");
    });
    const exit = jest.fn();
    const controller = gracefulShutdown(server, { signals: ["SIGUSR2"], exit, deadlineMs: 60_000 });
    try {
      const inflight = get(port, "/slow").catch((e: unknown) => e);
      await started.promise;
      process.emit("SIGUSR2", "SIGUSR2");
      expect(controller.isShuttingDown()).toBe(true);
      expect(exit).not.toHaveBeenCalled();
      process.emit("SIGUSR2", "SIGUSR2");
      expect(exit).toHaveBeenCalledWith(128 + 12); // SIGUSR2 = 12 on Linux
      release.resolve();
      await inflight;
    } finally {
      controller.dispose();
    }
    expect(process.listeners("SIGUSR2")).toHaveLength(0);
  });
});

describe("gracefulShutdown (real process, real signals)", () => {
  const fixture = path.join(__dirname, "fixtures", "server.ts");
  const tsx = pathToFileURL(require.resolve("tsx")).href;

  function start(env: Record<string, string> = {}) {
    const child = spawn(process.execPath, ["--import", tsx, fixture], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    }) as unknown as ChildProcessWithoutNullStreams;
    const lines: Record<string, unknown>[] = [];
    const waiters: { test: (l: Record<string, unknown>) => boolean; resolve: (l: Record<string, unknown>) => void }[] =
      [];
    let buf = "";
    let stderr = "";
    child.stderr.on("data", (c) => (stderr += c));
    child.stdout.on("data", (chunk) => {
      buf += chunk;
      let nl: number;
      while ((nl = buf.indexOf("\n")) !== -1) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (!line.trim()) continue;
        const parsed = JSON.parse(line) as Record<string, unknown>;
        lines.push(parsed);
        for (const w of [...waiters]) {
          if (!w.test(parsed)) continue;
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(parsed);
        }
      }
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.on("exit", (code, signal) => resolve({ code, signal })),
    );
    const waitFor = (test: (l: Record<string, unknown>) => boolean) =>
      new Promise<Record<string, unknown>>((resolve) => {
        const hit = lines.find(test);
        if (hit) resolve(hit);
        else waiters.push({ test, resolve });
      });
    return { child, lines, exited, waitFor, stderr: () => stderr };
  }

  it("SIGTERM during a slow request: the request completes with 200, then hooks run in order and the process exits 0", async () => {
    const proc = start({ SLOW_MS: "500" });
    const { port } = (await proc.waitFor((l) => l.msg === "listening")) as { port: number };
    const inflight = get(port, "/slow");
    await proc.waitFor((l) => l.msg === "slow request started");
    proc.child.kill("SIGTERM");
    await proc.waitFor((l) => typeof l.msg === "string" && l.msg.startsWith("shutting down"));
    await expect(connect(port)).rejects.toMatchObject({ code: "ECONNREFUSED" });
    await expect(inflight).resolves.toMatchObject({ status: 200, body: "slow done" });
    await expect(proc.exited).resolves.toEqual({ code: 0, signal: null });

    // Hooks ran in order, each after the in-flight response had finished.
    const hooks = proc.lines.filter((l) => l.hookRan !== undefined);
    expect(hooks.map((l) => [l.hookRan, l.slowFinished])).toEqual([
      ["database", 1],
      ["redis", 1],
      ["workers", 1],
    ]);
    expect(proc.lines.find((l) => l.msg === "request completed")).toMatchObject({ route: "/slow", status: 200 });
    expect(proc.lines.find((l) => l.msg === "shutdown complete")).toMatchObject({ code: 0 });
    expect(proc.stderr()).toBe("");
  });

  it("a second signal forces exit while a request hangs", async () => {
    const proc = start({ DEADLINE_MS: "60000" });
    const { port } = (await proc.waitFor((l) => l.msg === "listening")) as { port: number };
    const inflight = get(port, "/hang").catch((e: unknown) => e);
    await proc.waitFor((l) => l.msg === "hanging request started");
    proc.child.kill("SIGTERM");
    await proc.waitFor((l) => typeof l.msg === "string" && l.msg.startsWith("shutting down"));
    proc.child.kill("SIGINT");
    await expect(proc.exited).resolves.toEqual({ code: 130, signal: null });
    await expect(inflight).resolves.toMatchObject({ code: "ECONNRESET" });
    expect(proc.lines.some((l) => l.hookRan !== undefined)).toBe(false);
  });
});
