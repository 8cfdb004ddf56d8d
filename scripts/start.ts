/**
 * `pnpm start`: runs both services as child processes on the embedded defaults (or whatever
 * the environment configures), prefixes their logs, and stops both when either exits or on
 * Ctrl-C / SIGTERM.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { buildLibrary } from "./library-build";

const root = path.resolve(__dirname, "..");
const services = [
  { name: "management", entry: "services/management/src/index.ts" },
  { name: "media", entry: "services/media/src/index.ts" },
];

/**
 * jemalloc, when the system has it (Debian/Ubuntu `libjemalloc2`, Fedora `jemalloc`, Arch
 * `jemalloc`): glibc malloc fragments around libvips, so the media process's RSS grows far past
 * its live memory (see bench/results/media-soak.md). A preload the environment already sets
 * is kept; elsewhere (macOS, musl) the services run on the system allocator.
 */
const JEMALLOC_PATHS = [
  "/usr/local/lib/libjemalloc.so.2",
  "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
  "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2",
  "/usr/lib64/libjemalloc.so.2",
  "/usr/lib/libjemalloc.so.2",
];
const jemalloc = process.platform === "linux" ? JEMALLOC_PATHS.find((p) => existsSync(p)) : undefined;
const env = process.env.LD_PRELOAD || !jemalloc ? process.env : { ...process.env, LD_PRELOAD: jemalloc };
console.error(
  env.LD_PRELOAD
    ? `[start] preloading ${env.LD_PRELOAD}`
    : "[start] jemalloc not found: using the system allocator (install libjemalloc2 for lower media memory)",
);

// The media library app at /library: built from source on every start (under a second), so a
// fresh clone and every edit serve the current app. A failed build leaves /library answering 503.
try {
  buildLibrary({ quiet: true });
  console.error("[start] built the media library app (apps/library/dist)");
} catch (error) {
  console.error(`[start] ${error instanceof Error ? error.message : String(error)}`);
}

const children: ChildProcess[] = [];
let stopping = false;

/**
 * Ctrl-C in a terminal sends SIGINT to the whole process group, the services included, which
 * start their own graceful shutdown: a second signal would force theirs to end at once (before
 * media writes its last usage report, say). So after SIGINT they get this long to exit on their
 * own before the SIGTERM that a SIGINT sent to this process alone still needs.
 */
const SIGINT_GRACE_MS = 5000;

function stopAll(code: number, graceMs = 0): void {
  if (stopping) return;
  stopping = true;
  const term = setTimeout(() => {
    for (const child of children) if (child.exitCode === null) child.kill("SIGTERM");
  }, graceMs);
  term.unref();
  const force = setTimeout(() => {
    for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
  }, 15_000);
  force.unref();
  Promise.all(children.map((c) => (c.exitCode !== null ? null : new Promise((r) => c.once("exit", r))))).then(() =>
    process.exit(code),
  );
}

for (const service of services) {
  const child = spawn(process.execPath, ["--import", "tsx", path.join(root, service.entry)], {
    cwd: root,
    env,
    stdio: ["ignore", "inherit", "inherit"],
  });
  child.on("exit", (code, signal) => {
    if (!stopping) {
      console.error(`[start] ${service.name} exited (${signal ?? code}); stopping the other service`);
      stopAll(code ?? 1);
    }
  });
  children.push(child);
}

process.on("SIGINT", () => stopAll(0, SIGINT_GRACE_MS));
process.on("SIGTERM", () => stopAll(0));
