// The README's walkthrough, run as it stands: the bash block between the walkthrough markers is
// extracted, both services start on the embedded defaults (a fresh DATA_DIR, free ports), and
// the script runs against them with bash. It must exit 0 and print what its comments promise.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import MarkdownIt from "markdown-it";
import sharp from "sharp";

const ROOT = path.resolve(__dirname, "..");
const STARTUP_MS = 90_000;

/** The fenced bash blocks between `<!-- walkthrough:start -->` and `<!-- walkthrough:end -->`. */
export function walkthroughScript(readme: string): string {
  const start = readme.indexOf("<!-- walkthrough:start -->");
  const end = readme.indexOf("<!-- walkthrough:end -->");
  if (start < 0 || end < start) throw new Error("README.md lacks the walkthrough markers");
  const blocks = new MarkdownIt()
    .parse(readme.slice(start, end), {})
    .filter((t) => t.type === "fence" && t.info.trim() === "bash")
    .map((t) => t.content);
  if (blocks.length === 0) throw new Error("README.md's walkthrough has no bash block");
  return blocks.join("\n");
}

interface Service {
  child: ChildProcess;
  url: string;
}

function startService(entry: string, env: NodeJS.ProcessEnv, ready: RegExp): Promise<Service> {
  const child = spawn(process.execPath, ["--import", "tsx", entry], {
    cwd: ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(`${entry} did not start within ${STARTUP_MS} ms`), STARTUP_MS);
    const fail = (message: string) => {
      clearTimeout(timer);
      child.kill("SIGKILL");
      reject(new Error(`${message}\n--- output ---\n${output}`));
    };
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = ready.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve({ child, url: match[1]! });
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", (code) => fail(`${entry} exited with code ${code} before it was ready`));
  });
}

async function stop(service: Service | undefined): Promise<void> {
  const child = service?.child;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const force = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(force);
}

function runBash(
  script: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn("bash", ["-c", script], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("README walkthrough", () => {
  const script = walkthroughScript(readFileSync(path.join(ROOT, "README.md"), "utf8"));
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  let media: Service | undefined;
  let management: Service | undefined;

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), "readme-walkthrough-"));
    // The embedded defaults: whatever the CI run points at Postgres, Redis or S3 is left out.
    const inherited = Object.fromEntries(
      Object.entries(process.env).filter(
        ([k]) =>
          !/^(DATABASE_URL|PGLITE_DIR|REDIS_|STORAGE_|S3_|AUTH_|MEDIA_|MANAGEMENT_PORT$|HOST$|LOG_LEVEL$)/.test(k),
      ),
    );
    env = { ...inherited, DATA_DIR: dataDir, STORAGE_DIR: path.join(dataDir, "blobs"), LOG_LEVEL: "warn" };
    media = await startService(
      "services/media/src/index.ts",
      { ...env, MEDIA_PORT: "0" },
      /media service listening on (http:\/\/\S+)/,
    );
    management = await startService(
      "services/management/src/index.ts",
      { ...env, MANAGEMENT_PORT: "0", MEDIA_PUBLIC_URL: media.url, MEDIA_PURGE_URLS: media.url },
      /Management API: (http:\/\/\S+)/,
    );
  }, 2 * STARTUP_MS);

  afterAll(async () => {
    await Promise.all([stop(media), stop(management)]);
    rmSync(path.join(ROOT, "avatar.png"), { force: true });
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it("is a bash script that stops at the first failure", () => {
    expect(script.split("\n")[0]).toBe("set -euo pipefail");
    expect(script).toContain("${API:-http://localhost:3000}");
    expect(script).toContain("${MEDIA:-http://localhost:3001}");
  });

  it("runs against both services and does what its comments say", async () => {
    const run = await runBash(script, { ...env, API: management!.url, MEDIA: media!.url });
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: "" });
    const lines = run.stdout.trim().split("\n");
    const id = /^uploaded ([0-9a-f-]{36})$/.exec(lines[0]!)?.[1];
    expect(id).toBeDefined();
    expect(lines.slice(1)).toEqual([
      "[ 'nasa', 'portrait' ]", // tags as set
      "1", // the collection's assetCount
      id, // substring search finds it
      id, // full-text search finds it despite the typo
      expect.stringMatching(/^content-type: image\/png\r?$/i),
      expect.stringMatching(/^x-cache: MISS\r?$/i),
      expect.stringMatching(/^x-cache: HIT\r?$/i),
      expect.stringMatching(/^avatar\.png: \d+ bytes$/),
    ]);
    const avatar = await sharp(path.join(ROOT, "avatar.png")).metadata();
    expect([avatar.format, avatar.width, avatar.height, avatar.hasAlpha]).toEqual(["png", 256, 256, true]);
  }, 120_000);
});
