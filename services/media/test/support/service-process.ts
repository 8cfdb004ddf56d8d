import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import path from "node:path";
import sharp from "sharp";
import { originalHeaderMetadata, originalHeaderOf } from "@media-platform/contracts";
import { originalKey, type BlobStore } from "@media-platform/storage";

/** The repository root, where services are started from. */
export const REPO_ROOT = path.resolve(__dirname, "..", "..", "..", "..");
const STARTUP_MS = 90_000;

/**
 * The two ways the product starts: the README's `pnpm start` (tsx on the sources) and the
 * container's production bundle (`pnpm build` first), with each one's token CLI.
 */
export const START_MODES = [
  {
    name: "pnpm start (tsx)",
    media: "services/media/src/index.ts",
    management: "services/management/src/index.ts",
    token: ["--import", "tsx", "services/management/src/cli/token.ts"],
    build: false,
  },
  {
    name: "the production bundle",
    media: "services/media/dist/index.js",
    management: "services/management/dist/index.js",
    token: ["services/management/dist/cli/token.js"],
    build: true,
  },
] as const;

/** A bearer token for `workspace` from the token CLI of a start mode (its node arguments). */
export function issueToken(tokenArgs: readonly string[], env: NodeJS.ProcessEnv, workspace: string): string {
  const issued = spawnSync(process.execPath, [...tokenArgs, "--workspace", workspace], {
    cwd: REPO_ROOT,
    env,
    encoding: "utf8",
  });
  if (issued.status !== 0) throw new Error(`token: ${issued.stderr}`);
  return issued.stdout.trim();
}

export interface ServiceProcess {
  child: ChildProcess;
  /** The URL the service printed in its start-up banner. */
  url: string;
  output: () => string;
}

/**
 * Starts `node [...nodeArgs] entry` from the repository root and resolves once its output
 * matches `ready`, whose first group is the service's URL. A `.ts` entry runs through tsx.
 */
export function startServiceProcess(entry: string, env: NodeJS.ProcessEnv, ready: RegExp): Promise<ServiceProcess> {
  const args = entry.endsWith(".ts") ? ["--import", "tsx", entry] : [entry];
  const child = spawn(process.execPath, args, { cwd: REPO_ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  return new Promise<ServiceProcess>((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`${entry} did not start within ${STARTUP_MS} ms`)), STARTUP_MS);
    const fail = (err: Error) => {
      clearTimeout(timer);
      child.kill("SIGKILL");
      reject(new Error(`${err.message}\n--- output ---\n${output}`));
    };
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = ready.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve({ child, url: match[1]!, output: () => output });
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", (code) => fail(new Error(`${entry} exited with code ${code} before it was ready`)));
  });
}

/** SIGTERM, then SIGKILL after 10 s; resolves when the process has exited. */
export async function stopServiceProcess(service: ServiceProcess | undefined): Promise<void> {
  const child = service?.child;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const force = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(force);
}

/** The banners each service prints once it listens. */
export const MEDIA_READY = /media service listening on (http:\/\/\S+)/;
export const MANAGEMENT_READY = /Management API: (http:\/\/\S+)/;

/** Stores an original as management does (its bytes with their header facts) under a new asset id. */
export async function storeOriginal(store: BlobStore, bytes: Buffer, contentType: string): Promise<string> {
  const id = randomUUID();
  await store.put(
    originalKey(id),
    bytes,
    contentType,
    originalHeaderMetadata(originalHeaderOf(await sharp(bytes).metadata())),
  );
  return id;
}

/**
 * The media service (tsx) as a child process over `dataDir`'s filesystem blobs, in-process cache
 * only, on a free port, `env` on top: whatever drivers the test run itself was given (S3, Redis).
 */
export function startMediaProcess(dataDir: string, env: NodeJS.ProcessEnv): Promise<ServiceProcess> {
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^(STORAGE_|S3_|REDIS_|DATABASE_URL$)/.test(name)),
  );
  return startServiceProcess(
    "services/media/src/index.ts",
    { ...inherited, DATA_DIR: dataDir, HOST: "127.0.0.1", MEDIA_PORT: "0", LOG_LEVEL: "warn", ...env },
    MEDIA_READY,
  );
}
