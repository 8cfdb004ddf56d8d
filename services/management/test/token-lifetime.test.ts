import { spawnSync } from "node:child_process";
import path from "node:path";
import jwt from "jsonwebtoken";
import request from "supertest";
import { createApp } from "../src/app";
import { createVerifier } from "../src/auth/keys";
import { loadConfig } from "../src/config";
import { createTestApp, type TestApp } from "./helpers";
import { childEnv } from "./support/child";

/** Issue 8: tokens without `exp` are refused by default; a maximum lifetime is enforced. */
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

const now = () => Math.floor(Date.now() / 1000);
const get = (app: typeof t.app, token: string) =>
  request(app).get("/v1/assets").set("Authorization", `Bearer ${token}`);

describe("token lifetime", () => {
  it("a token without exp is a 401 by default (it would be valid forever)", async () => {
    const res = await get(t.app, jwt.sign({ workspace_id: "ws-life" }, t.secret));
    expect(res.status).toBe(401);
    expect(res.headers["www-authenticate"]).toMatch(/error="invalid_token"/);
    expect(res.body.detail).toBe("token has no exp claim");
  });

  it("a token living longer than the default maximum (24 h) is a 401; 24 h exactly is accepted", async () => {
    const long = await get(t.app, jwt.sign({ workspace_id: "ws-life" }, t.secret, { expiresIn: "25h" }));
    expect(long.status).toBe(401);
    expect(long.body.detail).toBe("token lifetime exceeds the maximum of 86400 seconds");
    // Without iat the lifetime cannot be measured: refused while a cap applies.
    const noIat = await get(
      t.app,
      jwt.sign({ workspace_id: "ws-life", exp: now() + 90_000 }, t.secret, { noTimestamp: true }),
    );
    expect(noIat.status).toBe(401);
    expect(noIat.body.detail).toBe("token has no iat claim");
    expect((await get(t.app, jwt.sign({ workspace_id: "ws-life" }, t.secret, { expiresIn: 86_400 }))).status).toBe(200);
  });

  it("configurable: AUTH_REQUIRE_EXP=false accepts tokens without exp; the maximum is AUTH_MAX_TOKEN_LIFETIME_SECONDS (0 = none)", async () => {
    const config = loadConfig({ AUTH_REQUIRE_EXP: "false", AUTH_MAX_TOKEN_LIFETIME_SECONDS: "0", DATA_DIR: "/tmp/x" });
    expect(config.auth).toMatchObject({ requireExpiry: false, maxTokenLifetimeSeconds: 0 });
    expect(loadConfig({ DATA_DIR: "/tmp/x" }).auth).toMatchObject({
      requireExpiry: true,
      maxTokenLifetimeSeconds: 86_400,
    });
    expect(() => loadConfig({ AUTH_MAX_TOKEN_LIFETIME_SECONDS: "-1" })).toThrow(/AUTH_MAX_TOKEN_LIFETIME_SECONDS/);
    const lenient = createApp({
      ...t.deps,
      verifier: createVerifier(
        { kind: "secret", secret: t.secret, embedded: false },
        { workspaceClaim: "workspace_id", requireExpiry: config.auth.requireExpiry, maxLifetimeSeconds: 0 },
      ),
    });
    expect((await get(lenient, jwt.sign({ workspace_id: "ws-life" }, t.secret))).status).toBe(200);
    expect((await get(lenient, jwt.sign({ workspace_id: "ws-life" }, t.secret, { expiresIn: "365d" }))).status).toBe(
      200,
    );
    const strict = createApp({
      ...t.deps,
      verifier: createVerifier(
        { kind: "secret", secret: t.secret, embedded: false },
        { workspaceClaim: "workspace_id", maxLifetimeSeconds: 600 },
      ),
    });
    expect((await get(strict, jwt.sign({ workspace_id: "ws-life" }, t.secret, { expiresIn: 601 }))).status).toBe(401);
    expect((await get(strict, jwt.sign({ workspace_id: "ws-life" }, t.secret, { expiresIn: 600 }))).status).toBe(200);
  });

  it("pnpm run token refuses a --ttl the service would refuse", () => {
    const root = path.resolve(__dirname, "../../..");
    const run = (ttl: string) =>
      spawnSync(
        process.execPath,
        ["--import", "tsx", "services/management/src/cli/token.ts", "--workspace", "w", "--ttl", ttl],
        {
          cwd: root,
          env: childEnv({ AUTH_JWT_SECRET: "a-test-secret-of-enough-length-0123456789" }),
          encoding: "utf8",
        },
      );
    const refused = run("2d");
    expect(refused.status).toBe(2);
    expect(refused.stderr).toMatch(/AUTH_MAX_TOKEN_LIFETIME_SECONDS/);
    const ok = run("12h");
    expect(ok.status).toBe(0);
    const claims = jwt.decode(ok.stdout.trim()) as { exp: number; iat: number };
    expect(claims.exp - claims.iat).toBe(12 * 3600);
  });
});
