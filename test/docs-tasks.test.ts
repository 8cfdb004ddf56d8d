// Each task page's "Do it" commands, run as they stand (see support/docs-commands.ts for the
// markers): the embedded `pnpm start` of getting-started.md with every page's commands against
// it, then signing and eager presets on their own starts. The only changes are the machine's:
// free ports (MANAGEMENT_PORT, MEDIA_PORT, and API/MEDIA for the commands) and a fresh DATA_DIR.
import { mkdtempSync, readFileSync, rmSync, existsSync, renameSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import sharp from "sharp";
import {
  REPO_ROOT,
  answers200,
  cleanEnv,
  docsBlocks,
  runClient,
  startServer,
  type DocsBlock,
  type RunningServer,
} from "./support/docs-commands";
import { freePort } from "./support/net";

const blocks = docsBlocks();
const ofGroup = (group: string) => blocks.filter((b) => b.group === group);
const clientOf = (group: string, page: string): DocsBlock => {
  const found = ofGroup(group).filter((b) => !b.server && b.page === page);
  if (found.length !== 1) throw new Error(`expected one "${group}" block on ${page}, found ${found.length}`);
  return found[0]!;
};
const serverOf = (group: string): DocsBlock => {
  const found = ofGroup(group).filter((b) => b.server);
  if (found.length !== 1) throw new Error(`expected one "${group}" server block, found ${found.length}`);
  return found[0]!;
};

/** Files the commands write at the repository root: removed after, and a developer's own kept aside meanwhile. */
function scratchFiles(names: string[]): { restore(): void } {
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

interface Setup {
  env: NodeJS.ProcessEnv;
  api: string;
  media: string;
  dataDir: string;
}

async function embeddedSetup(): Promise<Setup> {
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

const bothReady = (s: Setup) => async () => (await answers200(`${s.api}/readyz`)) && answers200(`${s.media}/readyz`);

/** Runs a page's block; it must exit 0 and print nothing on stderr. Returns its stdout lines. */
async function run(block: DocsBlock, env: NodeJS.ProcessEnv): Promise<string[]> {
  const result = await runClient(block, env);
  expect({ where: `${block.page}:${block.line}`, code: result.code, stderr: result.stderr }).toEqual({
    where: `${block.page}:${block.line}`,
    code: 0,
    stderr: "",
  });
  return result.stdout.trimEnd().split("\n").map((l) => l.replace(/\r$/, ""));
}

describe("docs: the embedded start (getting-started.md) and every page's commands against it", () => {
  let setup: Setup;
  let server: RunningServer | undefined;
  const scratch = scratchFiles(["thumb.png"]);

  beforeAll(async () => {
    setup = await embeddedSetup();
    server = await startServer(serverOf("embedded"), setup.env, bothReady(setup));
  }, 240_000);

  afterAll(async () => {
    await server?.interrupt(5000);
    scratch.restore();
    rmSync(setup.dataDir, { recursive: true, force: true });
  });

  it("getting-started.md: token, upload, thumbnail, HIT", async () => {
    const lines = await run(clientOf("embedded", "docs/getting-started.md"), setup.env);
    expect(lines).toEqual([expect.stringMatching(/^x-cache: HIT$/i)]);
    const thumb = await sharp(path.join(REPO_ROOT, "thumb.png")).metadata();
    expect([thumb.format, thumb.width, thumb.height]).toEqual(["png", 256, 256]);
  });

  it("the start banner names the API, its reference and the library; GET / leads to /library", async () => {
    const out = server!.output();
    expect(out).toContain(`Management API: ${setup.api}\nAPI reference:  ${setup.api}/docs\n`);
    expect(out).toContain(`Media library:  ${setup.api}/library\n`);
    const root = await fetch(`${setup.api}/`, { redirect: "manual" });
    expect([root.status, root.headers.get("location")]).toEqual([302, "/library"]);
    const library = await fetch(`${setup.api}/`);
    expect([library.status, library.url, library.headers.get("content-type")]).toEqual([
      200,
      `${setup.api}/library`,
      expect.stringMatching(/^text\/html/),
    ]);
  });

  // Last: Ctrl-C ends the run.
  it("Ctrl-C stops both services and `pnpm start` exits 0, with no warning printed at any point", async () => {
    const end = await server!.interrupt();
    server = undefined;
    expect({ code: end.code, signal: end.signal }).toEqual({ code: 0, signal: null });
    expect(end.output).not.toMatch(/ELIFECYCLE|Command failed|WARN|Warning|Unknown project config/);
    expect(end.output.match(/"msg":"shutdown complete"/g)).toHaveLength(2);
    expect(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")).toContain('"start": "tsx scripts/start.ts"');
  });
});
