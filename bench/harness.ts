import { execFile, spawn, spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import http from "node:http";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { performance } from "node:perf_hooks";
import autocannon from "autocannon";

const ROOT = path.resolve(__dirname, "..");

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const start = performance.now();
  const value = await fn();
  return { ms: performance.now() - start, value };
}

/**
 * CPU time (user + system) a process used so far, in ms: all its threads, or with "main" its
 * JavaScript thread alone (the task whose id is the process id). Undefined off Linux.
 */
export function processCpuMs(pid: number | undefined, threads: "all" | "main" = "all"): number | undefined {
  if (pid === undefined) return undefined;
  try {
    return statCpu(readFileSync(threads === "main" ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, "utf8")).ms;
  } catch {
    return undefined;
  }
}

/**
 * CPU ms so far of a process by thread group, from /proc: `all` (every thread, those that have
 * ended included), `main` (the JavaScript thread), `node` (its other live threads that are not
 * libvips': libuv's pool, which runs each sharp pipeline's call into libvips and file reads, V8's
 * helpers, idle workers) and `libvips` (the rest: libvips' workers, which come and go, so they are
 * counted as what the others leave of `all`). Undefined off Linux or once the process is gone.
 */
export interface ThreadGroupCpu {
  all: number;
  main: number;
  node: number;
  libvips: number;
}

export function threadGroupCpuMs(pid: number | undefined): ThreadGroupCpu | undefined {
  if (pid === undefined) return undefined;
  try {
    const all = statCpu(readFileSync(`/proc/${pid}/stat`, "utf8")).ms;
    const tasks: { tid: number; name: string; ms: number }[] = [];
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        tasks.push({ tid: Number(tid), ...statCpu(readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8")) });
      } catch {
        // the thread ended between the listing and the read: its time is in `all`
      }
    }
    return groupThreadCpu(pid, all, tasks);
  } catch {
    return undefined;
  }
}

/** threadGroupCpuMs' grouping of a process's live tasks (exported for its test). */
export function groupThreadCpu(
  pid: number,
  all: number,
  tasks: { tid: number; name: string; ms: number }[],
): ThreadGroupCpu {
  let main = 0;
  let node = 0;
  for (const t of tasks) {
    if (t.tid === pid) main += t.ms;
    else if (!/^(lib)?vips/.test(t.name)) node += t.ms;
  }
  return { all, main, node, libvips: Math.max(0, all - main - node) };
}

/** Per request (or operation): the CPU each group used between two readings. */
export function threadGroupDelta(before: ThreadGroupCpu, after: ThreadGroupCpu, requests: number): ThreadGroupCpu {
  const per = (k: keyof ThreadGroupCpu) => (after[k] - before[k]) / requests;
  return { all: per("all"), main: per("main"), node: per("node"), libvips: per("libvips") };
}

/** A `/proc/<pid>[/task/<tid>]/stat` line: the task's name and its CPU time (user + system) so far, in ms. */
export function statCpu(stat: string): { name: string; ms: number } {
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // utime and stime are fields 14 and 15 of the line, in clock ticks (USER_HZ, 100 on Linux).
  return {
    name: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")),
    ms: (Number(fields[11]) + Number(fields[12])) * 10,
  };
}

export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/**
 * Starts a TS entry point as a child process and waits until `readyUrl` answers. `nodeArgs` go
 * before the entry (e.g. --cpu-prof); `command` replaces node altogether (nginx). `cwd`: where
 * the process runs (profilers write their files there); the repository root by default.
 */
export async function startProcess(
  entry: string,
  env: Record<string, string>,
  readyUrl: string,
  nodeArgs: string[] = [],
  command?: { file: string; args: string[] },
  cwd = ROOT,
): Promise<{ stop(): Promise<void>; pid: number | undefined }> {
  // Outside the repository "tsx" does not resolve as a bare name: its loader by path.
  const tsx = cwd === ROOT ? "tsx" : pathToFileURL(path.join(ROOT, "node_modules/tsx/dist/loader.mjs")).href;
  const child = command
    ? spawn(command.file, command.args, {
        cwd,
        env: { ...process.env, ...env },
        stdio: ["ignore", "ignore", "inherit"],
      })
    : spawn(process.execPath, [...nodeArgs, "--import", tsx, path.join(ROOT, entry)], {
        cwd,
        env: { ...process.env, ...env },
        stdio: ["ignore", "ignore", "inherit"],
      });
  // BENCH_READY_SECONDS: more time to become ready on a loaded machine.
  const deadline = Date.now() + Number(process.env.BENCH_READY_SECONDS ?? 60) * 1000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${entry} exited with ${child.exitCode}`);
    try {
      const res = await fetch(readyUrl);
      if (res.status < 500) break;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) throw new Error(`${entry} did not become ready`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    pid: child.pid,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}

/** The management service's authentication in the benches: HS256 tokens signed with `secret`. */
export const benchManagementAuthEnv = (secret: string): Record<string, string> => ({
  AUTH_JWT_SECRET: secret,
  AUTH_JWKS_URL: "",
  AUTH_PUBLIC_KEY: "",
  AUTH_ISSUER: "",
  AUTH_AUDIENCE: "",
  AUTH_WORKSPACE_CLAIM: "workspace_id",
  // The benches load one token far past any per-credential limit.
  RATE_LIMIT_REQUESTS_PER_MINUTE: "0",
});

/** The media service's production entry (scripts/build.ts), relative to the repository. */
const MEDIA_BUNDLE = "services/media/dist/index.js";

/**
 * The media service's environment in the MISS benches: originals from the filesystem store
 * under `root`/blobs (as bench/originals.ts links them), no Redis, warnings only.
 */
export const benchMediaEnv = (root: string): Record<string, string> => ({
  HOST: "127.0.0.1",
  STORAGE_DRIVER: "fs",
  STORAGE_DIR: path.join(root, "blobs"),
  LOG_LEVEL: "warn",
  REDIS_URL: "",
});
/** Checkouts whose media bundle this bench process has built. */
const mediaBuilt = new Set<string>();

/**
 * Builds the media service's production bundle of the checkout at `root` (`pnpm build media`),
 * once per bench process, and returns the path of its entry.
 */
export function buildMediaBundle(root = ROOT): string {
  if (!mediaBuilt.has(root)) {
    const build = spawnSync(process.execPath, ["--import", "tsx", path.join(root, "scripts/build.ts"), "media"], {
      cwd: root,
      stdio: ["ignore", "ignore", "inherit"],
    });
    if (build.status !== 0) throw new Error(`building the media service in ${root} failed (exit ${build.status})`);
    mediaBuilt.add(root);
  }
  return path.join(root, MEDIA_BUNDLE);
}

/**
 * The Node binary that runs the media service in the benches: `BENCH_NODE` (another major, e.g.
 * the one `.ci/run` fetches from the npm registry), else the bench's own.
 */
export function serviceNode(): string {
  return process.env.BENCH_NODE || process.execPath;
}

/** `process.version` of {@link serviceNode}. */
export function serviceNodeVersion(): string {
  const node = serviceNode();
  if (node === process.execPath) return process.version;
  return spawnSync(node, ["-p", "process.version"], { encoding: "utf8" }).stdout.trim();
}

/**
 * The media service as production runs it: the esbuild bundle of `pnpm build media`, started
 * with plain `node`, built once per bench process. Run through tsx instead, every module is its
 * own CommonJS module and every imported binding is read through export getters (megamorphic
 * keyed loads for a package's re-exports) that the bundle does not have: measured 3-12% more
 * CPU per HIT and about 5% more main-thread CPU per MISS than the bundle. `cwd`: the checkout
 * whose bundle is built and run (another checkout, to measure other code side by side).
 */
export function startMediaService(
  env: Record<string, string>,
  readyUrl: string,
  nodeArgs: string[] = [],
  cwd = ROOT,
): ReturnType<typeof startProcess> {
  // The node arguments go in the command itself (startProcess's own list is for its tsx runs).
  const command = { file: serviceNode(), args: [...nodeArgs, buildMediaBundle(cwd)] };
  return startProcess(MEDIA_BUNDLE, env, readyUrl, [], command, cwd);
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
}

export async function load(url: string, seconds: number, connections = 50): Promise<LoadResult> {
  const result = await autocannon({ url, connections, duration: seconds, pipelining: 1 });
  if (result.non2xx > 0 || result.errors > 0)
    throw new Error(`${url}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99 };
}

export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  return [line(header), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.map(line)].join("\n");
}

/** Path of the `wrk` binary, or undefined when it is not installed (Debian/Ubuntu: apt-get install wrk). */
export function findWrk(): string | undefined {
  const probe = spawnSync(process.env.WRK ?? "wrk", ["-v"], { encoding: "utf8" });
  if (probe.error) return undefined;
  return process.env.WRK ?? "wrk";
}

export interface WrkResult {
  /** Completed requests per second (wrk's "Requests/sec"). */
  rps: number;
  requests: number;
  /** Responses with a status of 400 or more (wrk: "Non-2xx or 3xx responses"). */
  failed: number;
  socketErrors: number;
  p50Ms: number;
  p99Ms: number;
  /** First error response, when the script prints one ("FIRST-ERROR <status> <body>"). */
  firstError?: string;
}

function wrkMs(text: string): number {
  const m = /^([\d.]+)(us|ms|s)$/.exec(text.trim());
  if (!m) return NaN;
  const v = Number(m[1]);
  return m[2] === "us" ? v / 1000 : m[2] === "s" ? v * 1000 : v;
}

/**
 * Closed-loop throughput from a separate `wrk -t1` process (one load thread, so it takes at most
 * one core from the servers). `script`/`scriptArgs`: a wrk Lua script and its arguments.
 */
export async function runWrk(options: {
  wrk: string;
  url: string;
  connections: number;
  seconds: number;
  headers?: Record<string, string>;
  script?: string;
  scriptArgs?: string[];
  /**
   * Opens every connection first (bench/open-connections.lua): the first request on each waits
   * this many ms, and `seconds` of load follow it. Req/s counts the load's seconds only.
   */
  openFirstMs?: number;
}): Promise<WrkResult> {
  const open = options.openFirstMs ?? 0;
  // wrk takes whole seconds.
  const duration = Math.ceil(options.seconds + open / 1000);
  const args = ["-t1", `-c${options.connections}`, `-d${duration}s`, "--latency", "--timeout", "30s"];
  for (const [k, v] of Object.entries(options.headers ?? {})) args.push("-H", `${k}: ${v}`);
  if (open > 0 && options.script) throw new Error("runWrk: openFirstMs uses its own script");
  const script = open > 0 ? path.join(__dirname, "open-connections.lua") : options.script;
  const scriptArgs = open > 0 ? [String(options.connections), String(open)] : options.scriptArgs;
  if (script) args.push("-s", script);
  args.push(options.url);
  if (scriptArgs) args.push("--", ...scriptArgs);
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile(options.wrk, args, { maxBuffer: 1 << 20 }, (err, out, errOut) => {
      if (err) reject(new Error(`wrk ${args.join(" ")} failed: ${errOut || err.message}`));
      else resolve(out);
    });
  });
  const num = (re: RegExp) => {
    const m = re.exec(stdout);
    return m ? Number(m[1]) : 0;
  };
  const requests = num(/(\d+) requests in/);
  // With connections opened first, wrk's own rate divides by the wait too: the load's seconds only.
  const rps = open > 0 ? requests / (duration - open / 1000) : num(/Requests\/sec:\s+([\d.]+)/);
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(stdout);
  return {
    rps,
    requests,
    failed: num(/Non-2xx or 3xx responses: (\d+)/),
    socketErrors: sock ? sock.slice(1).reduce((a, b) => a + Number(b), 0) : 0,
    p50Ms: wrkMs(/\s50%\s+(\S+)/.exec(stdout)?.[1] ?? ""),
    p99Ms: wrkMs(/\s99%\s+(\S+)/.exec(stdout)?.[1] ?? ""),
    firstError: /^FIRST-ERROR (.*)$/m.exec(stdout)?.[1],
  };
}

/** `a / b` as "0.93x" (or "n/a"). */
export function ratio(a: number, b: number): string {
  return b > 0 && Number.isFinite(a) ? `${(a / b).toFixed(2)}x` : "n/a";
}

const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 16 });

/**
 * GET `url` on a kept-alive connection and its JSON body: what a pooled HTTP/1.1 client (a CDN, a
 * REST client) sends, without the WHATWG fetch layer, whose own cost (about 0.1 ms a request)
 * would count as the server's. Throws on any status but 200.
 */
export function getJson<T>(url: string, headers: Record<string, string> = {}): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    http
      .get(url, { agent: keepAlive, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("error", reject);
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          if (res.statusCode !== 200) reject(new Error(`${url}: ${res.statusCode} ${text}`));
          else resolve(JSON.parse(text) as T);
        });
      })
      .on("error", reject);
  });
}
