// A resumable (tus) upload and an import from a URL against both ways the product starts: `pnpm
// start` (tsx) and the production bundle (`node services/management/dist/index.js`). @tus/server
// and its stores are ES modules loaded through Node's require(esm), and ipaddr.js guards the
// import: jest alone would not show a package that does not load the way a started service loads it.
import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  MANAGEMENT_READY,
  REPO_ROOT,
  issueToken,
  startServiceProcess,
  stopServiceProcess,
  type ServiceProcess,
} from "../services/media/test/support/service-process";

const png = fs.readFileSync(path.join(REPO_ROOT, "fixtures", "images", "logo.png"));
// The Postgres pass covers the same code with other drivers; this runs in the embedded pass.
const run = process.env.REQUIRE_SERVICES === "1" ? describe.skip : describe;

const MODES = [
  {
    name: "pnpm start (tsx)",
    management: "services/management/src/index.ts",
    token: ["--import", "tsx", "services/management/src/cli/token.ts"],
    build: false,
  },
  {
    name: "the production bundle",
    management: "services/management/dist/index.js",
    token: ["services/management/dist/cli/token.js"],
    build: true,
  },
];

run.each(MODES)("resumable uploads and imports over HTTP: $name", (mode) => {
  let dataDir: string;
  let management: ServiceProcess | undefined;
  let source: http.Server;
  let sourcePort: number;
  let token: string;

  beforeAll(async () => {
    if (mode.build) {
      const build = spawnSync(process.execPath, ["--import", "tsx", "scripts/build.ts"], {
        cwd: REPO_ROOT,
        encoding: "utf8",
      });
      if (build.status !== 0) throw new Error(`pnpm build failed:\n${build.stdout}\n${build.stderr}`);
    }
    source = http.createServer((_req, res) => res.writeHead(200, { "Content-Type": "image/png" }).end(png));
    await new Promise<void>((resolve) => source.listen(0, "127.0.0.1", resolve));
    sourcePort = (source.address() as AddressInfo).port;
    dataDir = await mkdtemp(path.join(tmpdir(), "transports-http-"));
    const inherited = Object.fromEntries(
      Object.entries(process.env).filter(
        ([k]) =>
          !/^(DATABASE_URL|PGLITE_DIR|REDIS_|STORAGE_|S3_|AUTH_|MEDIA_|MANAGEMENT_PORT$|HOST$|LOG_LEVEL$|TUS_|IMPORT_)/.test(
            k,
          ),
      ),
    );
    const env = {
      ...inherited,
      HOST: "127.0.0.1",
      DATA_DIR: dataDir,
      AUTH_JWT_SECRET: `transports-${randomUUID()}-${randomUUID()}`,
      LOG_LEVEL: "warn",
      IMPORT_ALLOWED_HOSTS: `127.0.0.1:${sourcePort}`,
    };
    management = await startServiceProcess(mode.management, { ...env, MANAGEMENT_PORT: "0" }, MANAGEMENT_READY);
    token = issueToken(mode.token, env, "transports");
  }, 300_000);

  afterAll(async () => {
    await stopServiceProcess(management);
    source?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it("a tus upload: created with its first bytes, finished by a PATCH, answered with the asset's id", async () => {
    const headers = { Authorization: `Bearer ${token}`, "Tus-Resumable": "1.0.0" };
    const half = Math.floor(png.length / 2);
    const created = await fetch(`${management!.url}/v1/assets/tus`, {
      method: "POST",
      headers: {
        ...headers,
        "Upload-Length": String(png.length),
        "Upload-Metadata": `filename ${Buffer.from("logo.png").toString("base64")}`,
        "Content-Type": "application/offset+octet-stream",
      },
      body: png.subarray(0, half),
    });
    expect(created.status).toBe(201);
    expect(created.headers.get("upload-offset")).toBe(String(half));
    const finished = await fetch(`${management!.url}${created.headers.get("location")}`, {
      method: "PATCH",
      headers: { ...headers, "Content-Type": "application/offset+octet-stream", "Upload-Offset": String(half) },
      body: png.subarray(half),
    });
    expect(finished.status).toBe(204);
    const assetId = finished.headers.get("asset-id");
    const asset = await fetch(`${management!.url}/v1/assets/${assetId}`, { headers });
    expect(asset.status).toBe(200);
    expect(await asset.json()).toMatchObject({ id: assetId, originalFilename: "logo.png", bytes: png.length });
  });

  it("an import from the allowed host, and a refusal of loopback written in hex", async () => {
    const importUrl = (url: string) =>
      fetch(`${management!.url}/v1/assets/import`, {
        method: "POST",
        headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
        body: JSON.stringify({ url }),
      });
    const imported = await importUrl(`http://127.0.0.1:${sourcePort}/images/logo.png`);
    expect(imported.status).toBe(201);
    expect(await imported.json()).toMatchObject({ originalFilename: "logo.png", bytes: png.length });
    const refused = await importUrl(`http://0x7f000001:${sourcePort + 1}/`);
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { detail: string }).detail).toBe("127.0.0.1 is a loopback address");
  });
});
