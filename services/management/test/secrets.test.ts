import { createHmac } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import request from "supertest";
import { ConfigError } from "@media-platform/runtime";
import { createApp } from "../src/app";
import { createVerifier, EMBEDDED_SECRET_FILE, resolveKeySource } from "../src/auth/keys";
import { loadConfig } from "../src/config";
import { createTestApp, type TestApp } from "./helpers";

/** An HS256 token signed by hand, so that any key (even an empty one) can sign it. */
function hs256(claims: object, key: string): string {
  const enc = (o: object) => Buffer.from(JSON.stringify(o)).toString("base64url");
  const body = `${enc({ alg: "HS256", typ: "JWT" })}.${enc(claims)}`;
  return `${body}.${createHmac("sha256", key).update(body).digest("base64url")}`;
}

let t: TestApp;
let dataDir: string;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});
beforeEach(() => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "mgmt-secrets-"));
});
afterEach(() => fs.rmSync(dataDir, { recursive: true, force: true }));

describe("secrets cannot be empty or short", () => {
  it("an empty <DATA_DIR>/auth-secret is replaced: a token HMAC-signed with an empty key is a 401", async () => {
    fs.writeFileSync(path.join(dataDir, EMBEDDED_SECRET_FILE), "");
    const config = loadConfig({ DATA_DIR: dataDir });
    const source = resolveKeySource(config);
    expect(source.kind).toBe("secret");
    const app = createApp({ ...t.deps, verifier: createVerifier(source, { workspaceClaim: "workspace_id" }) });
    const now = Math.floor(Date.now() / 1000);
    const claims = { workspace_id: "ws-any", iat: now, exp: now + 600 };
    const res = await request(app)
      .get("/v1/assets")
      .set("Authorization", `Bearer ${hs256(claims, "")}`);
    expect(res.status).toBe(401);
    const secret = fs.readFileSync(path.join(dataDir, EMBEDDED_SECRET_FILE), "utf8").trim();
    expect(Buffer.byteLength(secret)).toBeGreaterThanOrEqual(32);
    const good = await request(app)
      .get("/v1/assets")
      .set("Authorization", `Bearer ${hs256(claims, secret)}`);
    expect(good.status).toBe(200);
  });

  it("a short <DATA_DIR>/auth-secret stops the start with a ConfigError naming the file", () => {
    const file = path.join(dataDir, EMBEDDED_SECRET_FILE);
    fs.writeFileSync(file, "short-secret\n");
    const config = loadConfig({ DATA_DIR: dataDir });
    expect(() => resolveKeySource(config)).toThrow(ConfigError);
    expect(() => resolveKeySource(config)).toThrow(file);
  });

  it("AUTH_JWT_SECRET must be at least 32 bytes; a verifier refuses a shorter key however it is given", () => {
    expect(() => loadConfig({ AUTH_JWT_SECRET: "x".repeat(31) })).toThrow(/AUTH_JWT_SECRET: must be at least 32 bytes/);
    expect(loadConfig({ AUTH_JWT_SECRET: "x".repeat(32) }).auth.jwtSecret).toBe("x".repeat(32));
    expect(() =>
      createVerifier({ kind: "secret", secret: "", embedded: false }, { workspaceClaim: "workspace_id" }),
    ).toThrow(/shorter than 32 bytes/);
  });
});

describe("the media purge call (it carries the purge secret) never goes to a public host by default", () => {
  it.each([
    ["https://cdn.example.com", []],
    ["https://media.example.com:8443", []],
    ["http://10.0.0.5:3001", []],
    ["http://localhost:3001", ["http://localhost:3001"]],
    ["http://127.0.0.1:3001", ["http://127.0.0.1:3001"]],
    ["http://[::1]:3001", ["http://[::1]:3001"]],
  ])("MEDIA_PUBLIC_URL=%s, MEDIA_PURGE_URLS unset -> %j", (publicUrl, expected) => {
    expect(loadConfig({ MEDIA_PUBLIC_URL: publicUrl }).lifecycle.mediaPurgeUrls).toEqual(expected);
  });

  it("the embedded default (no MEDIA_PUBLIC_URL) purges the local media service; MEDIA_PURGE_URLS wins", () => {
    expect(loadConfig({}).lifecycle.mediaPurgeUrls).toEqual(["http://localhost:3001"]);
    expect(
      loadConfig({ MEDIA_PUBLIC_URL: "https://cdn.example.com", MEDIA_PURGE_URLS: "http://media:3001" }).lifecycle
        .mediaPurgeUrls,
    ).toEqual(["http://media:3001"]);
  });
});
