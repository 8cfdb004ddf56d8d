import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import sharp from "sharp";

const ROOT = path.resolve(__dirname, "../../../..");

/** The management service as a real child process (tsx), its output collected. */
export interface ManagementChild {
  proc: ChildProcess;
  url: Promise<string>;
  output(): string;
  /** Rejects when the output does not show `re` in time, or the process exits before it does. */
  waitFor(re: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  kill(signal: NodeJS.Signals): Promise<void>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Environment without anything the CI run sets for the in-process tests, plus `env`. */
export function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) =>
        !/^(DATABASE_URL|PGLITE_DIR|STORAGE_|S3_|AUTH_|LOG_LEVEL$|MANAGEMENT_PORT$|HOST$|ORPHAN_|UPLOAD_)/.test(k),
    ),
  );
  return { ...base, MANAGEMENT_PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "info", ...env };
}

export function startManagementChild(env: NodeJS.ProcessEnv): ManagementChild {
  const proc = spawn(process.execPath, ["--import", "tsx", "services/management/src/index.ts"], {
    cwd: ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const waiters = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    out += chunk.toString("utf8");
    for (const w of [...waiters]) w();
  };
  proc.stdout!.on("data", onData);
  proc.stderr!.on("data", onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once("exit", (code, signal) => resolve({ code, signal })),
  );
  const waitFor = (re: RegExp, timeoutMs = 30_000) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const check = () => {
        const m = re.exec(out);
        if (m) {
          cleanup();
          resolve(m);
        }
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`timed out waiting for ${re}:\n${out.slice(-3000)}`));
      }, timeoutMs);
      const onExit = () => {
        check();
        cleanup();
        reject(new Error(`the service exited before printing ${re}:\n${out.slice(-3000)}`));
      };
      const cleanup = () => {
        clearTimeout(timer);
        waiters.delete(check);
        proc.off("exit", onExit);
      };
      waiters.add(check);
      proc.once("exit", onExit);
      check();
    });
  const url = waitFor(/^Management API: (http:\/\/\S+)$/m).then((m) => m[1]!);
  // A test that stops the child before it listens never awaits the URL.
  url.catch(() => undefined);
  return {
    proc,
    url,
    output: () => out,
    waitFor,
    async kill(signal) {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      await exited;
    },
    exited,
  };
}

/** Every file under `dir` (relative paths), recursively. */
export function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return (fs.readdirSync(dir, { recursive: true }) as string[])
    .filter((f) => fs.statSync(path.join(dir, f)).isFile())
    .sort();
}

/**
 * The management service as a child process whose data and spool live in `dir`, resolved once it
 * printed its URL (a loaded machine starts tsx slowly); killed when it does not start.
 */
export async function startManagementIn(
  dir: string,
  env: Record<string, string>,
): Promise<{ child: ManagementChild; url: string }> {
  const child = startManagementChild(
    childEnv({ DATA_DIR: path.join(dir, "data"), UPLOAD_SPOOL_DIR: path.join(dir, "spool"), ...env }),
  );
  try {
    return { child, url: (await child.waitFor(/^Management API: (http:\/\/\S+)$/m, 120_000))[1]! };
  } catch (err) {
    await child.kill("SIGKILL");
    throw err;
  }
}

/** An uncompressed PNG of random RGB noise, side x side: a large upload that compresses to nothing less. */
export async function writeNoisePng(file: string, side: number): Promise<void> {
  await sharp(randomBytes(side * side * 3), { raw: { width: side, height: side, channels: 3 } })
    .png({ compressionLevel: 0 })
    .toFile(file);
}
