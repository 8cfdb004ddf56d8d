import fs from "node:fs";
import net, { type AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import sharp from "sharp";
import { MediaPlatformClient } from "@media-platform/client";
import { main, progressLine, runImport, type ImportSummary } from "../src/cli/import";
import { startTestManagement, type RunningTestManagement } from "../../../packages/client/test/support";
import { runCommand } from "../../../test/support/run-command";
import { FIXTURES } from "./helpers";

const ROOT = path.resolve(__dirname, "../../..");
const TSX = path.join(ROOT, "node_modules/.bin/tsx");
const CLI = path.join(ROOT, "services/management/src/cli/import.ts");

/**
 * a-original.png   astronaut
 * b-copy.png       the same bytes                 -> exact duplicate of a
 * c-resized.jpg    astronaut at half size, JPEG    -> similar to a and b
 * d-rocket.jpg     another photo
 * e-notes.txt      text                            -> 415
 * truncated.jpg    a JPEG cut short                -> 422
 * .DS_Store, sub/  ignored (hidden file, folder)
 */
async function makeFolder(): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "import-"));
  const astronaut = fs.readFileSync(path.join(FIXTURES, "astronaut.png"));
  fs.writeFileSync(path.join(dir, "a-original.png"), astronaut);
  fs.writeFileSync(path.join(dir, "b-copy.png"), astronaut);
  const meta = await sharp(astronaut).metadata();
  fs.writeFileSync(
    path.join(dir, "c-resized.jpg"),
    await sharp(astronaut)
      .resize(Math.round(meta.width! / 2))
      .jpeg({ quality: 85 })
      .toBuffer(),
  );
  fs.copyFileSync(path.join(FIXTURES, "rocket.jpg"), path.join(dir, "d-rocket.jpg"));
  fs.writeFileSync(path.join(dir, "e-notes.txt"), "shopping list: film, batteries\n");
  fs.copyFileSync(path.join(FIXTURES, "truncated.jpg"), path.join(dir, "truncated.jpg"));
  fs.writeFileSync(path.join(dir, ".DS_Store"), "junk");
  fs.mkdirSync(path.join(dir, "sub"));
  fs.copyFileSync(path.join(FIXTURES, "coffee.png"), path.join(dir, "sub", "coffee.png"));
  return dir;
}

class Capture extends Writable {
  text = "";
  isTTY: boolean;
  constructor(isTTY = false) {
    super();
    this.isTTY = isTTY;
  }
  override _write(chunk: Buffer | string, _enc: BufferEncoding, cb: () => void): void {
    this.text += chunk.toString();
    cb();
  }
}

/** Environment of a shell with nothing but the service's DATA_DIR: the CLI finds the embedded secret there, as `pnpm run token` does. */
function cliEnv(server: RunningTestManagement): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = { ...process.env, DATA_DIR: server.dataDir };
  // Only DATA_DIR matters to the CLI; drop whatever else the test run carries (CI's Postgres/S3 settings, AUTH_*).
  for (const key of Object.keys(env)) {
    if (/^(AUTH_|S3_|STORAGE_|DATABASE_URL$|PGLITE_DIR$|MEDIA_PLATFORM_TOKEN$|MANAGEMENT_PORT$)/.test(key))
      delete env[key];
  }
  return env;
}

const files = (list: { file: string }[]) => list.map((x) => x.file);

describe("pnpm run import", () => {
  let server: RunningTestManagement;
  let folder: string;

  beforeAll(async () => {
    server = await startTestManagement({ embeddedSecret: true });
    folder = await makeFolder();
  });
  afterAll(async () => {
    await server.close();
    fs.rmSync(folder, { recursive: true, force: true });
  });

  it("uploads every file into a new collection and reports uploaded, duplicates and rejected files", async () => {
    const client = new MediaPlatformClient({ baseUrl: server.url, token: server.token("ws-import") });
    const progress: string[] = [];
    const summary = await runImport({
      folder,
      client,
      collection: "Trip 2026",
      onProgress: (d, t, f) => progress.push(`${d}/${t} ${f}`),
    });

    expect(summary.total).toBe(6);
    expect(summary.collection).toMatchObject({ name: "Trip 2026", created: true });
    expect(files(summary.uploaded)).toEqual(["a-original.png", "b-copy.png", "c-resized.jpg", "d-rocket.jpg"]);
    expect(files(summary.duplicates.exact)).toEqual(["b-copy.png"]);
    expect(files(summary.duplicates.similar)).toEqual(["c-resized.jpg"]);
    const original = summary.uploaded[0]!;
    expect(summary.duplicates.exact[0]!.duplicates).toContainEqual({
      assetId: original.assetId,
      match: "exact",
      distance: 0,
    });
    expect(summary.duplicates.similar[0]!.duplicates.map((d) => d.match)).toEqual(["similar", "similar"]);
    expect(summary.rejected).toEqual([
      { file: "e-notes.txt", status: 415, title: expect.any(String), reason: expect.any(String) },
      { file: "truncated.jpg", status: 422, title: expect.any(String), reason: expect.any(String) },
    ]);
    expect(progress).toEqual([
      "1/6 a-original.png",
      "2/6 b-copy.png",
      "3/6 c-resized.jpg",
      "4/6 d-rocket.jpg",
      "5/6 e-notes.txt",
      "6/6 truncated.jpg",
    ]);

    // What the API now holds: the four images, in the collection; nothing of the rejected files.
    const all = await client.listAssets({ limit: 100, sort: "createdAt" });
    expect(all.count).toBe(4);
    expect(all.assets.map((a) => [a.originalFilename, a.collectionId])).toEqual([
      ["a-original.png", summary.collection!.id],
      ["b-copy.png", summary.collection!.id],
      ["c-resized.jpg", summary.collection!.id],
      ["d-rocket.jpg", summary.collection!.id],
    ]);
    expect(all.assets.map((a) => a.id)).toEqual(summary.uploaded.map((u) => u.assetId));
    expect(all.assets[3]!.format).toBe("jpeg");
    const { collections } = await client.listCollections();
    expect(collections).toEqual([
      expect.objectContaining({ id: summary.collection!.id, name: "Trip 2026", assetCount: 4 }),
    ]);
  });

  it("reuses an existing collection (409 -> lookup) and reports re-imported files as exact duplicates", async () => {
    const client = new MediaPlatformClient({ baseUrl: server.url, token: server.token("ws-import") });
    const before = (await client.listCollections()).collections[0]!;
    const summary = await runImport({ folder, client, collection: "Trip 2026" });
    expect(summary.collection).toEqual({ id: before.id, name: "Trip 2026", created: false });
    expect(summary.uploaded).toHaveLength(4);
    expect(files(summary.duplicates.exact)).toEqual(["a-original.png", "b-copy.png", "c-resized.jpg", "d-rocket.jpg"]);
    expect(summary.duplicates.similar).toEqual([]);
    expect(summary.rejected.map((r) => r.status)).toEqual([415, 422]);
    const { collections } = await client.listCollections();
    expect(collections).toEqual([expect.objectContaining({ id: before.id, assetCount: 8 })]);
  });

  it("uploads without a collection and with parallel uploads", async () => {
    const client = new MediaPlatformClient({ baseUrl: server.url, token: server.token("ws-parallel") });
    const summary = await runImport({ folder, client, concurrency: 3 });
    expect(summary.collection).toBeNull();
    expect(files(summary.uploaded)).toEqual(["a-original.png", "b-copy.png", "c-resized.jpg", "d-rocket.jpg"]);
    expect(files(summary.rejected)).toEqual(["e-notes.txt", "truncated.jpg"]);
    const listed = await client.listAssets();
    expect(listed.count).toBe(4);
    expect(listed.assets.every((a) => a.collectionId === null)).toBe(true);
  });

  it("runs as `pnpm run import` (tsx): signs the token from DATA_DIR like pnpm run token, prints the summary, exits 1 when files were rejected", async () => {
    const result = await runCommand(
      TSX,
      [CLI, folder, "--workspace", "ws-cli", "--collection", "From CLI", "--url", server.url],
      { cwd: ROOT, env: cliEnv(server) },
    );
    expect(result.stderr).not.toContain("\r"); // not a TTY: no progress line
    expect(result.code).toBe(1);
    const lines = result.stdout.split("\n");
    expect(lines[0]).toMatch(/^Imported .*import-.*into collection "From CLI" \([0-9a-f-]{36}, created\): 6 files$/);
    expect(lines).toContain("  uploaded:   4");
    expect(lines).toContain("  duplicates: 2 (exact 1, similar 1)");
    expect(lines).toContain("  rejected:   2");
    expect(lines.find((l) => l.startsWith("    b-copy.png: exact duplicate of "))).toBeDefined();
    expect(lines.find((l) => l.startsWith("    c-resized.jpg: similar duplicate of "))).toMatch(/distance \d+/);
    expect(lines.find((l) => l.startsWith("    e-notes.txt: 415 "))).toBeDefined();
    expect(lines.find((l) => l.startsWith("    truncated.jpg: 422 "))).toBeDefined();

    const client = new MediaPlatformClient({ baseUrl: server.url, token: server.token("ws-cli") });
    const { collections } = await client.listCollections();
    expect(collections).toEqual([expect.objectContaining({ name: "From CLI", assetCount: 4 })]);
  });

  it("draws a single progress line on a TTY and can print the summary as JSON", async () => {
    const stdout = new Capture();
    const stderr = new Capture(true);
    const code = await main({
      argv: [folder, "-w", "ws-tty", "--url", server.url],
      env: cliEnv(server),
      stdout,
      stderr,
    });
    expect(code).toBe(1);
    expect(stderr.text).toContain(`\r\x1b[2K${progressLine(6, 6, "truncated.jpg")}`);
    expect(stderr.text.split("\n")).toHaveLength(1); // redrawn in place, never scrolls
    expect(stdout.text).toContain("  uploaded:   4");

    const jsonOut = new Capture();
    const jsonErr = new Capture(true);
    expect(
      await main({
        argv: [folder, "-w", "ws-json", "--url", server.url, "--json"],
        env: cliEnv(server),
        stdout: jsonOut,
        stderr: jsonErr,
      }),
    ).toBe(1);
    const summary = JSON.parse(jsonOut.text) as ImportSummary;
    expect(summary.uploaded).toHaveLength(4);
    expect(summary.rejected.map((r) => r.status)).toEqual([415, 422]);
    expect(jsonErr.text).toBe(""); // --json: no progress line
  });

  it("exits 0 when every file was uploaded", async () => {
    const clean = fs.mkdtempSync(path.join(os.tmpdir(), "import-clean-"));
    try {
      fs.copyFileSync(path.join(FIXTURES, "coffee.png"), path.join(clean, "coffee.png"));
      const stdout = new Capture();
      const code = await main({
        argv: [clean, "-w", "ws-clean", "-u", server.url],
        env: cliEnv(server),
        stdout,
        stderr: new Capture(),
      });
      expect(code).toBe(0);
      expect(stdout.text).toContain("  uploaded:   1");
      expect(stdout.text).toContain("  rejected:   0");
    } finally {
      fs.rmSync(clean, { recursive: true, force: true });
    }
  });

  it("stops at the first 401 instead of rejecting every file, and at an unreachable server", async () => {
    const stderr = new Capture();
    const stdout = new Capture();
    const code = await main({
      argv: [folder, "--token", "not-a-valid-token", "--url", server.url],
      env: cliEnv(server),
      stdout,
      stderr,
    });
    expect(code).toBe(1);
    expect(stderr.text).toMatch(/^import: 401 Unauthorized/);
    expect(stdout.text).toBe("");

    // a port nothing listens on: bind one, then free it
    const probe = net.createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const down = new Capture();
    expect(
      await main({
        argv: [folder, "-w", "ws", "--url", `http://127.0.0.1:${port}`],
        env: cliEnv(server),
        stdout: new Capture(),
        stderr: down,
      }),
    ).toBe(1);
    expect(down.text).toBe(
      `import: upload of a-original.png failed: fetch failed (connect ECONNREFUSED 127.0.0.1:${port})\n`,
    );
  });

  it("refuses bad usage with exit code 2", async () => {
    const run = async (argv: string[]) => {
      const stderr = new Capture();
      const code = await main({ argv, env: cliEnv(server), stdout: new Capture(), stderr });
      return { code, stderr: stderr.text };
    };
    expect(await run([])).toEqual({ code: 2, stderr: expect.stringContaining("expected exactly one folder") });
    expect(await run([folder])).toEqual({ code: 2, stderr: expect.stringContaining("--workspace is required") });
    expect(await run([folder, "-w", "x", "--bogus"])).toEqual({
      code: 2,
      stderr: expect.stringContaining("Unknown option '--bogus'"),
    });
    expect(await run([folder, "-w", "x", "--concurrency", "0"])).toEqual({
      code: 2,
      stderr: expect.stringContaining("--concurrency"),
    });
    expect(await run([folder, "-w", "x", "--url", "localhost:3000"])).toEqual({
      code: 2,
      stderr: expect.stringContaining("http(s) URL"),
    });
    expect((await run([path.join(folder, "nope"), "-w", "x", "--url", server.url])).stderr).toMatch(
      /^import: folder not found/,
    );
    const help = new Capture();
    expect(await main({ argv: ["--help"], env: {}, stdout: help, stderr: new Capture() })).toBe(0);
    expect(help.text).toContain("usage: pnpm run import <folder> --workspace <id>");
  });

  it("draws a proportional progress bar", () => {
    expect(progressLine(0, 4, "a.jpg", 8)).toBe("[........] 0/4 a.jpg");
    expect(progressLine(2, 4, "b.jpg", 8)).toBe("[####....] 2/4 b.jpg");
    expect(progressLine(4, 4, "c.jpg", 8)).toBe("[########] 4/4 c.jpg");
    expect(progressLine(1, 1, `${"x".repeat(60)}.png`, 4)).toMatch(/^\[####\] 1\/1 …x+\.png$/);
  });
});

describe("pnpm run import --from-urls", () => {
  let server: RunningTestManagement;
  let source: import("node:http").Server;
  let dir: string;

  beforeAll(async () => {
    const http = await import("node:http");
    const rocket = fs.readFileSync(path.join(FIXTURES, "rocket.jpg"));
    const logo = fs.readFileSync(path.join(FIXTURES, "logo.png"));
    source = http.createServer((req, res) => {
      if (req.url === "/rocket.jpg") res.writeHead(200, { "Content-Type": "image/jpeg" }).end(rocket);
      else if (req.url === "/logo.png") res.writeHead(200, { "Content-Type": "image/png" }).end(logo);
      else res.writeHead(200, { "Content-Type": "text/html" }).end("<html></html>");
    });
    await new Promise<void>((resolve) => source.listen(0, "127.0.0.1", resolve));
    const port = (source.address() as AddressInfo).port;
    server = await startTestManagement({ embeddedSecret: true, env: { IMPORT_ALLOWED_HOSTS: `127.0.0.1:${port}` } });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "import-urls-"));
    fs.writeFileSync(
      path.join(dir, "urls.txt"),
      `# from the old system\nhttp://127.0.0.1:${port}/rocket.jpg\n\nhttp://127.0.0.1:${port}/logo.png\nhttp://127.0.0.1:${port}/page\n`,
    );
  });
  afterAll(async () => {
    await server.close();
    source.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("imports every URL of the file, each fetched by the service, and reports the refused ones", async () => {
    const stdout = new Capture();
    const stderr = new Capture();
    const code = await main({
      argv: ["--from-urls", path.join(dir, "urls.txt"), "--workspace", "ws-urls", "--url", server.url, "--json"],
      env: cliEnv(server),
      stdout,
      stderr,
    });
    expect(stderr.text).toBe("");
    expect(code).toBe(1);
    const summary = JSON.parse(stdout.text) as ImportSummary;
    expect(summary.total).toBe(3);
    expect(files(summary.uploaded)).toEqual([
      expect.stringMatching(/rocket\.jpg$/),
      expect.stringMatching(/logo\.png$/),
    ]);
    expect(summary.rejected).toEqual([
      expect.objectContaining({ file: expect.stringMatching(/\/page$/), status: 415 }),
    ]);
    const client = new MediaPlatformClient({ baseUrl: server.url, token: server.token("ws-urls") });
    expect((await client.listAssets()).count).toBe(2);
  });

  it("takes no folder with --from-urls (exit 2)", async () => {
    const stderr = new Capture();
    const code = await main({
      argv: ["--from-urls", path.join(dir, "urls.txt"), "some-folder", "--workspace", "w"],
      env: cliEnv(server),
      stdout: new Capture(),
      stderr,
    });
    expect(code).toBe(2);
    expect(stderr.text).toMatch(/--from-urls takes no folder/);
  });
});
