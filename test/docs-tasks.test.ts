// Each task page's "Do it" commands, run as they stand (see support/docs-commands.ts for the
// markers): the embedded `pnpm start` of getting-started.md, with every page's commands against
// it. The only changes are the machine's: free ports (MANAGEMENT_PORT, MEDIA_PORT, and API/MEDIA
// for the commands) and a fresh DATA_DIR. Presets and signing: docs-delivery.test.ts; production
// mode with a CDN: docs-production.test.ts.
import { existsSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import sharp from "sharp";
import {
  REPO_ROOT,
  bothReady,
  clientOf,
  embeddedSetup,
  run,
  scratchFiles,
  serverOf,
  startServer,
  type RunningServer,
  type Setup,
} from "./support/docs-commands";

describe("docs: the embedded start (getting-started.md) and every page's commands against it", () => {
  let setup: Setup;
  let server: RunningServer | undefined;
  const scratch = scratchFiles(["thumb.png", "grey.jpg"]);

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
    expect(lines).toEqual([
      expect.stringMatching(/^x-cache: HIT$/i),
      expect.stringMatching(/^thumb\.png: \d+ bytes in \S+$/),
    ]);
    // Written to a temporary folder, never into the repository.
    const out = /in (\S+)$/.exec(lines[1]!)![1]!;
    expect(path.resolve(out).startsWith(path.resolve(tmpdir()))).toBe(true);
    expect(existsSync(path.join(REPO_ROOT, "thumb.png"))).toBe(false);
    const thumb = await sharp(path.join(out, "thumb.png")).metadata();
    expect([thumb.format, thumb.width, thumb.height]).toEqual(["png", 256, 256]);
    rmSync(out, { recursive: true, force: true });
  });

  it("management-api.md: upload, describe, filter; each refusal prints its status, type and detail, and the log has it", async () => {
    const lines = await run(clientOf("embedded", "docs/management-api.md"), setup.env);
    expect(lines).toEqual([
      "[ 'space' ]",
      "1",
      "422 undecodable-image: The image could not be decoded (truncated or corrupt)",
      expect.stringMatching(/^415 unsupported-media-type: The file is not a supported image \(accepted: /),
      "400 validation-error: Invalid query",
    ]);
    const refusals = server!
      .output()
      .split("\n")
      .filter((l) => l.includes('"msg":"request refused: undecodable-image"'))
      .map((l) => JSON.parse(l) as { level: string; problem: { type: string; detail: string } });
    expect(refusals).toContainEqual(
      expect.objectContaining({
        level: "info",
        problem: expect.objectContaining({ type: "undecodable-image", detail: expect.stringContaining("truncated") }),
      }),
    );
    expect(server!.output()).not.toMatch(/cut\.jpg|Bearer ey/);
  });

  it("media-urls.md: a chain, rendition info, the canonical link, a refusal naming the parameter", async () => {
    const lines = await run(clientOf("embedded", "docs/media-urls.md"), setup.env);
    expect(lines).toEqual([
      "128x128 webp",
      expect.stringMatching(/^link: <\/saturation:value=1\/[0-9a-f-]{36}\.jpg>; rel="canonical"$/i),
      expect.stringMatching(/^400 thumbnail\.size: /),
    ]);
    const grey = await sharp(path.join(REPO_ROOT, "grey.jpg")).stats();
    expect([grey.channels.length, grey.isOpaque]).toEqual([3, true]);
    const { width, height } = await sharp(path.join(REPO_ROOT, "grey.jpg")).metadata();
    expect([width, height]).toEqual([400, 300]);
  });

  it("search.md: ranked full-text, a corrected typo, the substring filter, facets", async () => {
    const lines = await run(clientOf("embedded", "docs/search.md"), setup.env);
    expect(lines[0]).toBe("Mountain lake at dawn");
    expect(lines[1]!.split(", ").sort()).toEqual(["Mountain lake at dawn", "Mountain road"]);
    expect(lines.slice(2)).toEqual(["City at night", '{"format":[{"value":"png","count":2}]}']);
  });

  it("upload-transports.md: a resumable upload in two PATCHes, its offset between them, then its asset", async () => {
    const lines = await run(clientOf("embedded", "docs/upload-transports.md"), setup.env);
    const size = readFileSync(path.join(REPO_ROOT, "fixtures/images/coffee.png")).length;
    expect(lines).toEqual([`upload-offset: ${Math.floor(size / 2)}`, "coffee.png"]);
  });

  it("lifecycle-and-webhooks.md: trash purges at once, restore, replace keeps a version, permanent delete", async () => {
    const lines = await run(clientOf("embedded", "docs/lifecycle-and-webhooks.md"), setup.env);
    expect(lines).toEqual(["200", "204", "404", "200", "2", "[ 1 ]", "204"]);
  });

  it("operations.md: readiness of both services and their metrics", async () => {
    const lines = await run(clientOf("embedded", "docs/operations.md"), setup.env);
    expect(JSON.parse(lines[0]!)).toMatchObject({ status: "ok" });
    expect(JSON.parse(lines[1]!)).toMatchObject({ status: "ok" });
    expect(Number(lines[2])).toBeGreaterThan(0);
    expect(lines.slice(3)).toEqual(expect.arrayContaining([expect.stringMatching(/^cache_purge_failures_total\{/)]));
  });

  it("security.md: a limit refused naming the parameter; another workspace's asset is a 404", async () => {
    const lines = await run(clientOf("embedded", "docs/security.md"), setup.env);
    expect(lines).toEqual([expect.stringMatching(/^400 resize\.width: .*8192/), "404"]);
  });

  it("decisions.md: a respelled URL names its canonical form; a defaulted parameter may be left out", async () => {
    const lines = await run(clientOf("embedded", "docs/decisions.md"), setup.env);
    expect(lines).toEqual([
      expect.stringMatching(/^link: <\/saturation:value=1\/[0-9a-f-]{36}\.jpg>; rel="canonical"$/i),
      "200",
    ]);
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
