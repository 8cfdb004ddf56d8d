/**
 * `pnpm start`: runs both services as child processes on the embedded defaults (or whatever
 * the environment configures), prefixes their logs, and stops both when either exits or on
 * Ctrl-C / SIGTERM.
 */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";

const root = path.resolve(__dirname, "..");
const services = [
  { name: "management", entry: "services/management/src/index.ts" },
  { name: "media", entry: "services/media/src/index.ts" },
];

const children: ChildProcess[] = [];
let stopping = false;

function stopAll(code: number): void {
  if (stopping) return;
  stopping = true;
  for (const child of children) if (child.exitCode === null) child.kill("SIGTERM");
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
    env: process.env,
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

process.on("SIGINT", () => stopAll(0));
process.on("SIGTERM", () => stopAll(0));
