import request from "supertest";
import { managementRoutes } from "@media-platform/contracts/src/openapi";
import { ApiKeyAuthenticator } from "../src/auth/api-keys";
import { scopeResolver, scopesOfClaim } from "../src/auth/scopes";
import { signToken } from "../src/auth/keys";
import { createTestApp, expectProblem, fixture, upload, type TestApp } from "./helpers";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

const withKey = (key: string) => ({
  get: (url: string) => request(t.app).get(url).set("Authorization", `Bearer ${key}`),
  post: (url: string) => request(t.app).post(url).set("Authorization", `Bearer ${key}`),
  delete: (url: string) => request(t.app).delete(url).set("Authorization", `Bearer ${key}`),
  put: (url: string) => request(t.app).put(url).set("Authorization", `Bearer ${key}`),
  patch: (url: string) => request(t.app).patch(url).set("Authorization", `Bearer ${key}`),
  head: (url: string) => request(t.app).head(url).set("Authorization", `Bearer ${key}`),
});

async function createKey(ws: string, body: Record<string, unknown>) {
  const res = await t.as(ws).post("/v1/api-keys").send(body);
  expect(res.status).toBe(201);
  return res.body as { id: string; secret: string; prefix: string; scopes: string[] };
}

describe("the route table", () => {
  it("names the scope of every authenticated operation", () => {
    const missing = managementRoutes.filter((r) => r.auth && !r.scope).map((r) => `${r.method} ${r.path}`);
    expect(missing).toEqual([]);
  });

  it("resolves literal paths before parameters and defaults unknown paths by method", () => {
    const scopeOf = scopeResolver();
    expect(scopeOf("POST", "/v1/assets/batch")).toBe("write");
    expect(scopeOf("GET", "/v1/assets/search/full-text")).toBe("read");
    expect(scopeOf("DELETE", "/v1/api-keys/abc")).toBe("admin");
    expect(scopeOf("POST", "/v1/media-urls/sign")).toBe("read");
    expect(scopeOf("GET", "/v1/not-a-route")).toBe("read");
    expect(scopeOf("POST", "/v1/not-a-route")).toBe("write");
  });

  it("reads a token's scope claim only when it names one of the API's scopes", () => {
    expect(scopesOfClaim("openid profile read")).toEqual(["read"]);
    expect(scopesOfClaim(["write", "admin"])).toEqual(["write", "admin"]);
    expect(scopesOfClaim("openid profile email")).toBeUndefined();
    expect(scopesOfClaim(undefined)).toBeUndefined();
  });
});

describe("API keys", () => {
  it("creates a key whose secret is shown once, prefixed, with 32 random bytes, stored as a hash", async () => {
    const key = await createKey("ws-keys", { name: "CI", scopes: ["read"] });
    expect(key.secret).toMatch(/^mpk_[0-9a-f]{32}_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(key.secret.slice(-43), "base64url")).toHaveLength(32);
    expect(key.secret.startsWith(key.prefix)).toBe(true);
    const list = await t.as("ws-keys").get("/v1/api-keys");
    expect(list.status).toBe(200);
    const listed = list.body.keys.find((k: { id: string }) => k.id === key.id);
    expect(listed).toMatchObject({ name: "CI", scopes: ["read"], lastUsedAt: null, createdBy: "user-1" });
    expect(listed.secret).toBeUndefined();
    expect(JSON.stringify(list.body)).not.toContain(key.secret.slice(-43));
    const rows = await t.db.prisma.$queryRaw<
      Array<Record<string, unknown>>
    >`SELECT * FROM api_keys WHERE id = ${key.id}::uuid`;
    expect(JSON.stringify(rows)).not.toContain(key.secret.slice(-43));
    expect(rows[0]!.secret_hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it("lets a read key list assets but answers 403 insufficient-scope, naming write, to an upload", async () => {
    const key = await createKey("ws-read", { name: "reader", scopes: ["read"] });
    const k = withKey(key.secret);
    expect((await k.get("/v1/assets")).status).toBe(200);
    const refused = await k.post("/v1/asset-collections").send({ name: "x" });
    expectProblem(refused, 403);
    expect(refused.body).toMatchObject({ type: expect.stringMatching(/insufficient-scope$/), requiredScope: "write" });
    expect(refused.headers["www-authenticate"]).toContain('error="insufficient_scope"');
    const up = await upload(k, fixture("rocket.jpg"), "r.jpg");
    expectProblem(up, 403);
    expect(up.body.requiredScope).toBe("write");
    // Managing keys needs admin.
    const keys = await k.get("/v1/api-keys");
    expectProblem(keys, 403);
    expect(keys.body.requiredScope).toBe("admin");
  });

  it("lets a write key upload into its own workspace only", async () => {
    const key = await createKey("ws-write", { name: "uploader", scopes: ["read", "write"] });
    const k = withKey(key.secret);
    const up = await upload(k, fixture("rocket.jpg"), "r.jpg");
    expect(up.status).toBe(201);
    expect(up.body.workspaceId).toBe("ws-write");
    // Another workspace's asset is not found with this key, and this asset not with the other's token.
    expect((await t.as("ws-other").get(`/v1/assets/${up.body.id}`)).status).toBe(404);
    const other = await t.as("ws-other").post("/v1/assets/upload").attach("file", fixture("rocket.jpg"), "o.jpg");
    expect((await k.get(`/v1/assets/${other.body.id}`)).status).toBe(404);
  });

  it("keeps keys to their workspace: another workspace neither lists nor revokes them", async () => {
    const key = await createKey("ws-a", { name: "a", scopes: ["read"] });
    const listB = await t.as("ws-b").get("/v1/api-keys");
    expect(listB.body.keys.map((k: { id: string }) => k.id)).not.toContain(key.id);
    expectProblem(await t.as("ws-b").delete(`/v1/api-keys/${key.id}`), 404);
    expect((await withKey(key.secret).get("/v1/assets")).status).toBe(200);
  });

  it("answers 401 once a key is revoked", async () => {
    const key = await createKey("ws-revoke", { name: "gone", scopes: ["read"] });
    const k = withKey(key.secret);
    expect((await k.get("/v1/assets")).status).toBe(200);
    expect((await t.as("ws-revoke").delete(`/v1/api-keys/${key.id}`)).status).toBe(204);
    const after = await k.get("/v1/assets");
    expectProblem(after, 401);
    expect(after.body.detail).toBe("unknown or revoked API key");
    expect((await t.as("ws-revoke").get("/v1/api-keys")).body.keys).toEqual([]);
    expectProblem(await t.as("ws-revoke").delete(`/v1/api-keys/${key.id}`), 404);
  });

  it("is refused by another replica once its cache bound has passed", async () => {
    const key = await createKey("ws-replica", { name: "r", scopes: ["read"] });
    let now = Date.now();
    const replica = new ApiKeyAuthenticator(t.db.prisma, { cacheMs: 10_000, now: () => now });
    await expect(replica.verify(key.secret)).resolves.toMatchObject({ workspaceId: "ws-replica" });
    await t.as("ws-replica").delete(`/v1/api-keys/${key.id}`);
    // Within the bound the other replica still trusts its cached check...
    await expect(replica.verify(key.secret)).resolves.toMatchObject({ apiKeyId: key.id });
    now += 10_001;
    // ...and after it reads the row again.
    await expect(replica.verify(key.secret)).rejects.toThrow("unknown or revoked API key");
  });

  it("answers 401 to an expired key", async () => {
    const key = await createKey("ws-exp", {
      name: "soon",
      scopes: ["read"],
      expiresAt: new Date(Date.now() + 60_000).toISOString(),
    });
    let now = Date.now();
    const authenticator = new ApiKeyAuthenticator(t.db.prisma, { cacheMs: 10_000, now: () => now });
    await expect(authenticator.verify(key.secret)).resolves.toBeDefined();
    now += 61_000;
    await expect(authenticator.verify(key.secret)).rejects.toThrow("API key expired");
    await t.db.prisma.apiKey.update({ where: { id: key.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    const res = await withKey(key.secret).get("/v1/assets");
    expectProblem(res, 401);
  });

  it("answers 401 to a forged, altered or malformed key", async () => {
    const key = await createKey("ws-forge", { name: "f", scopes: ["read"] });
    const last = key.secret.at(-1) === "A" ? "B" : "A";
    for (const bad of [
      key.secret.slice(0, -1) + last,
      "mpk_00000000000000000000000000000000_" + "A".repeat(43),
      "mpk_short",
    ]) {
      const res = await withKey(bad).get("/v1/assets");
      expectProblem(res, 401);
    }
  });

  it("records lastUsedAt at most once a minute, and the first use in the audit log", async () => {
    const key = await createKey("ws-used", { name: "u", scopes: ["read"] });
    const k = withKey(key.secret);
    await k.get("/v1/assets");
    let row = null;
    for (let i = 0; i < 50 && !row?.lastUsedAt; i++) {
      row = await t.db.prisma.apiKey.findUnique({ where: { id: key.id } });
      if (!row?.lastUsedAt) await new Promise((r) => setTimeout(r, 20));
    }
    const first = row!.lastUsedAt!;
    await k.get("/v1/assets");
    await new Promise((r) => setTimeout(r, 100));
    row = await t.db.prisma.apiKey.findUnique({ where: { id: key.id } });
    expect(row!.lastUsedAt!.getTime()).toBe(first.getTime());
    const audit = await t.as("ws-used").get("/v1/audit-events");
    const keyEvents = audit.body.events.filter((e: { target: string }) => e.target === key.id);
    expect(keyEvents.map((e: { action: string }) => e.action)).toEqual(["api-key.used", "api-key.created"]);
  });

  it("validates the body", async () => {
    for (const body of [
      { name: "", scopes: ["read"] },
      { name: "x", scopes: [] },
      { name: "x", scopes: ["root"] },
      { name: "x", scopes: ["read", "read"] },
      { name: "x", scopes: ["read"], expiresAt: "2001-01-01T00:00:00Z" },
      { name: "x", scopes: ["read"], extra: 1 },
    ]) {
      expectProblem(await t.as("ws-valid").post("/v1/api-keys").send(body), 400);
    }
  });
});

describe("a token's scope claim", () => {
  it("limits a session token the same way", async () => {
    const token = signToken(t.secret, { workspaceId: "ws-claim", sub: "u" });
    const readOnly = (await import("jsonwebtoken")).default.sign(
      { workspace_id: "ws-claim", scope: "openid read" },
      t.secret,
      { algorithm: "HS256", expiresIn: 600, subject: "u" },
    );
    expect((await request(t.app).get("/v1/assets").set("Authorization", `Bearer ${readOnly}`)).status).toBe(200);
    const refused = await request(t.app)
      .post("/v1/asset-collections")
      .set("Authorization", `Bearer ${readOnly}`)
      .send({ name: "n" });
    expectProblem(refused, 403);
    expect(refused.body.requiredScope).toBe("write");
    const full = await request(t.app)
      .post("/v1/asset-collections")
      .set("Authorization", `Bearer ${token}`)
      .send({ name: "n" });
    expect(full.status).toBe(201);
  });
});

describe("sign-ins", () => {
  it("records one sign-in per subject and auth_time, not one per renewed token", async () => {
    const jwt = (await import("jsonwebtoken")).default;
    const authTime = Math.floor(Date.now() / 1000) - 30;
    const tokenAt = (iat: number) =>
      jwt.sign({ workspace_id: "ws-signin", auth_time: authTime, iat }, t.secret, {
        algorithm: "HS256",
        expiresIn: 600,
        subject: "erin",
      });
    const now = Math.floor(Date.now() / 1000);
    // A token and its silent renewal: the same sign-in.
    for (const token of [tokenAt(now - 20), tokenAt(now - 10), tokenAt(now - 10)])
      expect((await request(t.app).get("/v1/assets").set("Authorization", `Bearer ${token}`)).status).toBe(200);
    let signIns: Array<{ actor: string; details: { signedInAt: string } }> = [];
    for (let i = 0; i < 50 && signIns.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
      const rows = await t.db.prisma.auditEvent.findMany({ where: { workspaceId: "ws-signin", action: "sign-in" } });
      signIns = rows.map((r) => ({ actor: r.actor!, details: r.details as { signedInAt: string } }));
    }
    await new Promise((r) => setTimeout(r, 100));
    const rows = await t.db.prisma.auditEvent.findMany({ where: { workspaceId: "ws-signin", action: "sign-in" } });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      actor: "erin",
      details: { signedInAt: new Date(authTime * 1000).toISOString() },
    });
  });
});
