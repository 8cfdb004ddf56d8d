// The README's walkthrough, run as it stands: the bash block between the walkthrough markers is
// extracted, both services start on the embedded defaults (a fresh DATA_DIR, free ports), and
// the script runs against them with bash. It must exit 0 and print what its comments promise.
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import MarkdownIt from "markdown-it";
import sharp from "sharp";
import {
  startServiceProcess as startService,
  stopServiceProcess as stop,
  type ServiceProcess as Service,
} from "../services/media/test/support/service-process";
import { runCommand } from "./support/run-command";

const ROOT = path.resolve(__dirname, "..");

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

const runBash = (script: string, env: NodeJS.ProcessEnv) => runCommand("bash", ["-c", script], { cwd: ROOT, env });

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
  }, 180_000);

  afterAll(async () => {
    await Promise.all([stop(media), stop(management)]);
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
      expect.stringMatching(/^avatar\.png: \d+ bytes in \S+$/),
    ]);
    // Written to a temporary folder, never into the repository.
    const out = /in (\S+)$/.exec(lines[lines.length - 1]!)![1]!;
    expect(path.resolve(out).startsWith(path.resolve(tmpdir()))).toBe(true);
    expect(existsSync(path.join(ROOT, "avatar.png"))).toBe(false);
    const avatar = await sharp(path.join(out, "avatar.png")).metadata();
    expect([avatar.format, avatar.width, avatar.height, avatar.hasAlpha]).toEqual(["png", 256, 256, true]);
    rmSync(out, { recursive: true, force: true });
    // The asset is in the workspace the library's development sign-in opens by default.
    const token = (await runBash("pnpm -s run token --workspace default", { ...env })).stdout.trim();
    const listed = await fetch(`${management!.url}/v1/assets`, { headers: { Authorization: `Bearer ${token}` } });
    expect(((await listed.json()) as { assets: { id: string }[] }).assets.map((a) => a.id)).toContain(id);
  }, 120_000);
});
