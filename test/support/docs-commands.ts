// The commands of the docs' task pages, as the docs test runs them. A fenced bash block right
// after `<!-- docs-test: <group> -->` is run to its end; one after `<!-- docs-test: <group> server -->`
// is started first and kept running (a `pnpm start`, an nginx) until the group's other blocks are
// done, then stopped with SIGINT, as Ctrl-C stops it. Every block of a group runs from the
// repository root against the same servers; a group's machine-specific values (ports, a database
// name, the S3 endpoint) are swapped in by the test, each swap checked to hit.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import MarkdownIt from "markdown-it";
import { freePort } from "./net";
import { runCommand, type CommandResult } from "./run-command";

export const REPO_ROOT = path.resolve(__dirname, "..", "..");

export interface DocsBlock {
  /** The page, relative to the repository root. */
  page: string;
  group: string;
  server: boolean;
  code: string;
  /** 1-based line of the fence in the page. */
  line: number;
}

const MARKER = /^<!--\s*docs-test:\s*([a-z0-9-]+)(\s+server)?\s*-->\s*$/;

/** Every marked block of docs/*.md, in page and line order; a marker without a bash fence after it throws. */
export function docsBlocks(root = REPO_ROOT): DocsBlock[] {
  const dir = path.join(root, "docs");
  const blocks: DocsBlock[] = [];
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith(".md"))
    .sort()) {
    const page = `docs/${file}`;
    const tokens = new MarkdownIt({ html: true }).parse(readFileSync(path.join(dir, file), "utf8"), {});
    tokens.forEach((token, i) => {
      if (token.type !== "html_block" || !token.content.includes("docs-test")) return;
      const marker = MARKER.exec(token.content.trim());
      const fence = tokens[i + 1];
      if (!marker || fence?.type !== "fence" || fence.info.trim() !== "bash") {
        throw new Error(
          `${page}:${(token.map?.[0] ?? 0) + 1}: a docs-test marker must stand right before a bash block`,
        );
      }
      blocks.push({
        page,
        group: marker[1]!,
        server: marker[2] !== undefined,
        code: fence.content,
        line: (fence.map?.[0] ?? 0) + 1,
      });
    });
  }
  return blocks;
}

/** `code` with each [from, to] swapped; throws when a swap hits nothing in any of `all`. */
export function swapped(code: string, swaps: ReadonlyArray<readonly [string, string]>, all: string): string {
  for (const [from] of swaps) {
    if (!all.includes(from))
      throw new Error(`the docs no longer contain ${JSON.stringify(from)}: update the docs test`);
  }
  return swaps.reduce((text, [from, to]) => text.split(from).join(to), code);
}

/** The inherited environment without what points the services elsewhere (the CI run's Postgres, Redis, S3). */
export function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) =>
        !/^(DATABASE_URL|PGLITE_DIR|REDIS_|STORAGE_|S3_|AUTH_|MEDIA_|CDN_|WEBHOOK_|MANAGEMENT_PORT$|HOST$|LOG_LEVEL$|npm_)/.test(
          k,
        ),
    ),
  );
}

/** A client block as a script: stops at the first failing command, as a reader would. */
export function runClient(block: DocsBlock, env: NodeJS.ProcessEnv, code = block.code): Promise<CommandResult> {
  return runCommand("bash", ["-c", `set -euo pipefail\n${code}`], { cwd: REPO_ROOT, env });
}

export interface RunningServer {
  block: DocsBlock;
  child: ChildProcess;
  output(): string;
  /** SIGINT to the block's process group (what Ctrl-C sends); resolves with how it ended. */
  interrupt(timeoutMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; output: string }>;
}

/**
 * Starts a server block in its own process group and resolves once `ready()` is true (polled), or
 * rejects with the block's output when it exits first or `timeoutMs` passes.
 */
export async function startServer(
  block: DocsBlock,
  env: NodeJS.ProcessEnv,
  ready: () => Promise<boolean>,
  code = block.code,
  timeoutMs = 180_000,
): Promise<RunningServer> {
  const child = spawn("bash", ["-c", code], { cwd: REPO_ROOT, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout!.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (output += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (exitCode, signal) => resolve({ code: exitCode, signal })),
  );
  const server: RunningServer = {
    block,
    child,
    output: () => output,
    async interrupt(waitMs = 60_000) {
      if (child.exitCode === null && child.signalCode === null) {
        try {
          process.kill(-child.pid!, "SIGINT");
        } catch {
          /* already gone */
        }
      }
      const force = setTimeout(() => {
        try {
          process.kill(-child.pid!, "SIGKILL");
        } catch {
          /* gone */
        }
      }, waitMs);
      const end = await exited;
      clearTimeout(force);
      // Let the last lines through the pipes.
      await new Promise((r) => setTimeout(r, 100));
      return { ...end, output };
    },
  };
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${block.page}:${block.line}: the server block exited before it was ready:\n${output}`);
    }
    if (await ready().catch(() => false)) return server;
    if (Date.now() > deadline) {
      await server.interrupt(5000);
      throw new Error(`${block.page}:${block.line}: the server block was not ready within ${timeoutMs} ms:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** True when `url` answers 200. */
export const answers200 = async (url: string): Promise<boolean> => (await fetch(url)).status === 200;

let blocks: DocsBlock[] | undefined;
const ofGroup = (group: string) => (blocks ??= docsBlocks()).filter((b) => b.group === group);
export const clientOf = (group: string, page: string): DocsBlock => {
  const found = ofGroup(group).filter((b) => !b.server && b.page === page);
  if (found.length !== 1) throw new Error(`expected one "${group}" block on ${page}, found ${found.length}`);
  return found[0]!;
};
/** The group's server blocks, in page order; `count` of them. */
export const serversOf = (group: string, count: number): DocsBlock[] => {
  const found = ofGroup(group).filter((b) => b.server);
  if (found.length !== count) throw new Error(`expected ${count} "${group}" server block(s), found ${found.length}`);
  return found;
};
export const serverOf = (group: string): DocsBlock => serversOf(group, 1)[0]!;

/** Files the commands write at the repository root: removed after, and a developer's own kept aside meanwhile. */
export function scratchFiles(names: string[]): { restore(): void } {
  const kept: string[] = [];
  for (const name of names) {
    const file = path.join(REPO_ROOT, name);
    if (existsSync(file)) {
      renameSync(file, `${file}.docs-test-kept`);
      kept.push(file);
    }
  }
  return {
    restore() {
      for (const name of names) rmSync(path.join(REPO_ROOT, name), { force: true });
      for (const file of kept) renameSync(`${file}.docs-test-kept`, file);
    },
  };
}

export interface Setup {
  env: NodeJS.ProcessEnv;
  api: string;
  media: string;
  dataDir: string;
}

export async function embeddedSetup(): Promise<Setup> {
  const dataDir = mkdtempSync(path.join(tmpdir(), "docs-test-"));
  const [apiPort, mediaPort] = [await freePort(), await freePort()];
  const api = `http://localhost:${apiPort}`;
  const media = `http://localhost:${mediaPort}`;
  return {
    dataDir,
    api,
    media,
    env: {
      ...cleanEnv(),
      DATA_DIR: dataDir,
      STORAGE_DIR: path.join(dataDir, "blobs"),
      MANAGEMENT_PORT: String(apiPort),
      MEDIA_PORT: String(mediaPort),
      MEDIA_PUBLIC_URL: media,
      API: api,
      MEDIA: media,
    },
  };
}

export const bothReady = (s: Setup) => async () =>
  (await answers200(`${s.api}/readyz`)) && answers200(`${s.media}/readyz`);

/** Runs a page's block; it must exit 0 and print nothing on stderr. Returns its stdout lines. */
export async function run(block: DocsBlock, env: NodeJS.ProcessEnv, code = block.code): Promise<string[]> {
  const result = await runClient(block, env, code);
  expect({ where: `${block.page}:${block.line}`, code: result.code, stderr: result.stderr }).toEqual({
    where: `${block.page}:${block.line}`,
    code: 0,
    stderr: "",
  });
  return result.stdout
    .trimEnd()
    .split("\n")
    .map((l) => l.replace(/\r$/, ""));
}
