import { execFile } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import pino from "pino";
import { ConfigError, loadConfig, managementEnvSchema } from "../src/config";
import { EMBEDDED_SECRET_FILE } from "../src/auth/keys";
import { startManagement, type RunningManagement } from "../src/server";
import { startS3rver, type RunningS3rver } from "@media-platform/storage/src/testing/s3rver";
import { childDatabase, fixture } from "./helpers";

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, "../../..");
const TSX = path.join(ROOT, "node_modules/.bin/tsx");

describe("loadConfig", () => {
  it("defaults with an empty environment", () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      port: 3000,
      host: "0.0.0.0",
      databaseUrl: undefined,
      maxUploadBytes: 52428800,
      limitInputPixels: 100000000,
      mediaPublicUrl: "http://localhost:3001",
      duplicateHammingThreshold: 10,
      logLevel: "info",
      auth: { workspaceClaim: "workspace_id" },
      storage: { STORAGE_DRIVER: "fs" },
    });
    expect(c.dataDir).toBe(path.resolve(".data"));
    expect(c.pgliteDir).toBe(path.resolve(".data/pg"));
    expect(c.storage.STORAGE_DIR).toBe(path.join(path.resolve(".data"), "blobs"));
  });

  it.each([
    ["MANAGEMENT_PORT", "http"],
    ["MANAGEMENT_PORT", "70000"],
    ["MAX_UPLOAD_BYTES", "-1"],
    ["DATABASE_URL", "mysql://x"],
    ["MEDIA_PUBLIC_URL", "not a url"],
    ["AUTH_JWKS_URL", "ftp://x"],
    ["AUTH_JWT_SECRET", "short"],
    ["AUTH_PUBLIC_KEY", "-----BEGIN PUBLIC KEY-----\\nbm90IGEga2V5\\n-----END PUBLIC KEY-----"],
    ["DUPLICATE_HAMMING_THRESHOLD", "65"],
    ["LOG_LEVEL", "loud"],
    ["STORAGE_DRIVER", "floppy"],
    ["S3_BUCKET", "X"],
  ])("a bad %s=%s throws naming the variable", (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(name);
  });

  it("AUTH_PUBLIC_KEY: a PEM public key, with real newlines or \\n escapes", () => {
    const { publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const pem = publicKey.export({ type: "spki", format: "pem" }) as string;
    for (const value of [pem, pem.replace(/\n/g, "\\n")]) {
      expect(loadConfig({ AUTH_PUBLIC_KEY: value, AUTH_AUDIENCE: "media-api" }).auth.publicKey).toBe(value);
    }
  });

  it("exposes every variable in managementEnvSchema (own + storage)", () => {
    const keys = Object.keys(managementEnvSchema.shape);
    for (const k of [
      "MANAGEMENT_PORT",
      "HOST",
      "DATA_DIR",
      "DATABASE_URL",
      "PGLITE_DIR",
      "MAX_UPLOAD_BYTES",
      "LIMIT_INPUT_PIXELS",
      "MEDIA_PUBLIC_URL",
      "AUTH_JWKS_URL",
      "AUTH_JWT_SECRET",
      "AUTH_PUBLIC_KEY",
      "AUTH_ISSUER",
      "AUTH_AUDIENCE",
      "AUTH_WORKSPACE_CLAIM",
      "DUPLICATE_HAMMING_THRESHOLD",
      "LOG_LEVEL",
      "STORAGE_DRIVER",
      "S3_BUCKET",
    ]) {
      expect(keys).toContain(k);
    }
  });

  it("refuses two verification key sources at once", () => {
    expect(() => loadConfig({ AUTH_JWT_SECRET: "x".repeat(32), AUTH_JWKS_URL: "https://idp/jwks" })).toThrow(
      /exclusive/,
    );
  });
});

describe("startManagement (embedded defaults) + pnpm run token", () => {
  let dataDir: string;
  let running: RunningManagement | undefined;
  let dropDb: (() => Promise<void>) | undefined;
  let env: Record<string, string>;
  let s3rver: RunningS3rver | undefined;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "mgmt-server-"));
    env = { DATA_DIR: dataDir, MANAGEMENT_PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "silent" };
    // A bucket of its own even when S3_ENDPOINT names a shared one: the start-up orphan sweep walks
    // the whole store and would delete other test files' trash/ blobs (their rows are not in ours).
    if (process.env.STORAGE_DRIVER === "s3") {
      s3rver = await startS3rver({ bucket: "mgmt-server-test" });
      Object.assign(env, s3rver.env);
    }
    const database = await childDatabase();
    if (database.url) env.DATABASE_URL = database.url;
    dropDb = database.drop;
  });
  afterAll(async () => {
    await running?.close();
    await dropDb?.();
    await s3rver?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it("starts, creates a 0600 secret, accepts a `pnpm run token` token, survives a restart", async () => {
    running = await startManagement(loadConfig(env), { logger: pino({ level: "silent" }) });
    expect(running.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const secretFile = path.join(dataDir, EMBEDDED_SECRET_FILE);
    expect(fs.statSync(secretFile).mode & 0o777).toBe(0o600);

    const health = await fetch(`${running.url}/healthz`);
    expect(health.status).toBe(200);
    expect((await fetch(`${running.url}/readyz`)).status).toBe(200);
    const unauth = await fetch(`${running.url}/v1/assets`);
    expect(unauth.status).toBe(401);
    expect(unauth.headers.get("www-authenticate")).toMatch(/^Bearer/);
    const unknown = await fetch(`${running.url}/nope`);
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get("content-type")).toMatch(/application\/problem\+json/);

    const { stdout } = await run(
      TSX,
      ["services/management/src/cli/token.ts", "--workspace", "ws-cli", "--sub", "alice", "--ttl", "10m"],
      {
        cwd: ROOT,
        env: { ...process.env, ...env },
      },
    );
    const token = stdout.trim();
    expect(token.split(".")).toHaveLength(3);
    const claims = JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString());
    expect(claims).toMatchObject({ workspace_id: "ws-cli", sub: "alice" });
    expect(claims.exp - claims.iat).toBe(600);

    const form = new FormData();
    form.append("file", new Blob([fixture("rocket.jpg")]), "rocket.jpg");
    const up = await fetch(`${running.url}/v1/assets/upload`, {
      method: "POST",
      body: form,
      headers: { Authorization: `Bearer ${token}` },
    });
    expect(up.status).toBe(201);
    const asset = (await up.json()) as { id: string; workspaceId: string };
    expect(asset.workspaceId).toBe("ws-cli");
    if (!env.DATABASE_URL) expect(fs.existsSync(path.join(dataDir, "pg"))).toBe(true);
    if (!s3rver && process.env.STORAGE_DRIVER !== "s3") expect(fs.existsSync(path.join(dataDir, "blobs"))).toBe(true);

    await running.close();
    running = await startManagement(loadConfig(env), { logger: pino({ level: "silent" }) });
    const again = await fetch(`${running.url}/v1/assets/${asset.id}`, {
      headers: { Authorization: `Bearer ${token}` },
    });
    expect(again.status).toBe(200);
  });

  it("`pnpm run token` rejects bad arguments", async () => {
    await expect(
      run(TSX, ["services/management/src/cli/token.ts"], { cwd: ROOT, env: { ...process.env, ...env } }),
    ).rejects.toMatchObject({ code: 2 });
    await expect(
      run(TSX, ["services/management/src/cli/token.ts", "--workspace", "w", "--ttl", "soon"], {
        cwd: ROOT,
        env: { ...process.env, ...env },
      }),
    ).rejects.toMatchObject({ code: 2 });
  });

  it("`pnpm db:migrate` reports an up-to-date database", async () => {
    await running?.close();
    running = undefined;
    const { stdout } = await run(TSX, ["services/management/src/cli/migrate.ts"], {
      cwd: ROOT,
      env: { ...process.env, ...env },
    });
    expect(stdout).toMatch(/up to date/);
  });

  it("a bad variable stops start-up with a message naming it", async () => {
    await expect(
      run(TSX, ["services/management/src/index.ts"], {
        cwd: ROOT,
        env: { ...process.env, ...env, MAX_UPLOAD_BYTES: "lots" },
      }),
    ).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining("MAX_UPLOAD_BYTES") });
  });
});
