import { generateKeyPairSync, randomUUID, type KeyObject } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import jwt from "jsonwebtoken";
import pino from "pino";
import request from "supertest";
import { createApp } from "../src/app";
import { createVerifier, signToken } from "../src/auth/keys";
import { JWKS_UNKNOWN_KIDS_PER_CLIENT } from "../src/auth/jwks-key-set";
import { createTestApp, expectProblem, fixture, type TestApp } from "./helpers";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

const ENDPOINTS: Array<[string, string]> = [
  ["get", "/v1/assets"],
  ["get", "/v1/assets/00000000-0000-4000-8000-000000000000"],
  ["patch", "/v1/assets/00000000-0000-4000-8000-000000000000"],
  ["post", "/v1/assets/upload"],
  ["get", "/v1/assets/search/full-text?q=x"],
  ["get", "/v1/asset-collections"],
  ["post", "/v1/asset-collections"],
  ["delete", "/v1/asset-collections/00000000-0000-4000-8000-000000000000"],
  ["get", "/v1/nope"],
];

function call(app: Parameters<typeof request>[0], method: string, url: string): request.Test {
  const agent = request(app) as unknown as Record<string, (u: string) => request.Test>;
  return agent[method]!(url);
}

function expect401(res: request.Response) {
  expectProblem(res, 401);
  expect(res.headers["www-authenticate"]).toMatch(/^Bearer\b/);
}

describe("HS256 (AUTH_JWT_SECRET / embedded secret)", () => {
  it.each(ENDPOINTS)("401 without a token: %s %s", async (method, url) => {
    expect401(await call(t.app, method, url));
  });

  it("401 for a malformed header, a non-JWT, expired, badly signed, alg none, missing workspace claim", async () => {
    const ok = t.token("ws-auth");
    const cases: Array<[string, string]> = [
      ["basic", `Basic ${Buffer.from("a:b").toString("base64")}`],
      ["bearer only", "Bearer"],
      ["garbage", "Bearer not.a.jwt"],
      ["two tokens", `Bearer ${ok} ${ok}`],
      ["expired", `Bearer ${jwt.sign({ workspace_id: "ws-auth", exp: Math.floor(Date.now() / 1000) - 60 }, t.secret)}`],
      ["other secret", `Bearer ${signToken("another-secret-of-enough-length", { workspaceId: "ws-auth" })}`],
      ["alg none", `Bearer ${jwt.sign({ workspace_id: "ws-auth" }, "", { algorithm: "none" })}`],
      ["no workspace", `Bearer ${jwt.sign({ sub: "u" }, t.secret, { expiresIn: "1h" })}`],
      ["empty workspace", `Bearer ${jwt.sign({ workspace_id: "" }, t.secret, { expiresIn: "1h" })}`],
      ["numeric workspace", `Bearer ${jwt.sign({ workspace_id: 5 }, t.secret, { expiresIn: "1h" })}`],
      ["not yet valid", `Bearer ${jwt.sign({ workspace_id: "ws-auth" }, t.secret, { notBefore: "1h" })}`],
    ];
    for (const [label, header] of cases) {
      const res = await request(t.app).get("/v1/assets").set("Authorization", header);
      expect([label, res.status]).toEqual([label, 401]);
      expect401(res);
    }
    const expired = await request(t.app).get("/v1/assets").set("Authorization", cases[4]![1]);
    expect(expired.body.detail).toMatch(/expired/);
  });

  it("accepts a valid token; the workspace claim name is configurable", async () => {
    expect(
      (
        await request(t.app)
          .get("/v1/assets")
          .set("Authorization", `Bearer ${t.token("ws-auth")}`)
      ).status,
    ).toBe(200);
    expect(
      (
        await request(t.app)
          .get("/v1/assets")
          .set("Authorization", `bearer ${t.token("ws-auth")}`)
      ).status,
    ).toBe(200);
    const app = createApp({
      ...t.deps,
      verifier: createVerifier({ kind: "secret", secret: t.secret, embedded: false }, { workspaceClaim: "org" }),
    });
    const tok = jwt.sign({ org: "ws-auth" }, t.secret, { expiresIn: "1h" });
    expect((await request(app).get("/v1/assets").set("Authorization", `Bearer ${tok}`)).status).toBe(200);
    expect401(
      await request(app)
        .get("/v1/assets")
        .set("Authorization", `Bearer ${t.token("ws-auth")}`),
    );
  });

  it("checks issuer and audience when configured", async () => {
    const verifier = createVerifier(
      { kind: "secret", secret: t.secret, embedded: false },
      { workspaceClaim: "workspace_id", issuer: "https://idp.test/", audience: "media-api" },
    );
    const app = createApp({ ...t.deps, verifier });
    const sign = (iss: string, aud: string) =>
      signToken(t.secret, { workspaceId: "ws-auth", issuer: iss, audience: aud });
    expect(
      (
        await request(app)
          .get("/v1/assets")
          .set("Authorization", `Bearer ${sign("https://idp.test/", "media-api")}`)
      ).status,
    ).toBe(200);
    const wrongIss = await request(app)
      .get("/v1/assets")
      .set("Authorization", `Bearer ${sign("https://evil.test/", "media-api")}`);
    expect401(wrongIss);
    expect(wrongIss.body.detail).toMatch(/issuer/);
    const wrongAud = await request(app)
      .get("/v1/assets")
      .set("Authorization", `Bearer ${sign("https://idp.test/", "other")}`);
    expect401(wrongAud);
    expect(wrongAud.body.detail).toMatch(/audience/);
    expect401(
      await request(app)
        .get("/v1/assets")
        .set("Authorization", `Bearer ${t.token("ws-auth")}`),
    );
  });

  it("never logs the token", async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, cb) {
        lines.push(String(chunk));
        cb();
      },
    });
    const app = createApp({ ...t.deps, log: pino({ level: "trace" }, sink) });
    const token = t.token("ws-auth");
    await request(app).get("/v1/assets?search=x").set("Authorization", `Bearer ${token}`);
    await request(app).get("/v1/assets").set("Authorization", `Bearer ${token}x`);
    await request(app)
      .post("/v1/assets/upload")
      .set("Authorization", `Bearer ${token}`)
      .attach("file", fixture("truncated.jpg"), "t.jpg");
    expect(lines.length).toBeGreaterThanOrEqual(3);
    const all = lines.join("\n");
    expect(all).not.toContain(token.split(".")[2]);
    expect(all).not.toMatch(/authorization/i);
  });
});

describe("asymmetric keys", () => {
  function keyPair(type: "rsa" | "ec"): { privateKey: KeyObject; publicKey: KeyObject } {
    return type === "rsa"
      ? generateKeyPairSync("rsa", { modulusLength: 2048 })
      : generateKeyPairSync("ec", { namedCurve: "P-256" });
  }

  it("AUTH_PUBLIC_KEY (PEM, ES256)", async () => {
    const { privateKey, publicKey } = keyPair("ec");
    const pem = publicKey.export({ type: "spki", format: "pem" }) as string;
    const app = createApp({
      ...t.deps,
      verifier: createVerifier({ kind: "publicKey", pem }, { workspaceClaim: "workspace_id", audience: "media-api" }),
    });
    const good = jwt.sign({ workspace_id: "ws-auth" }, privateKey, {
      algorithm: "ES256",
      expiresIn: "1h",
      audience: "media-api",
    });
    expect((await request(app).get("/v1/assets").set("Authorization", `Bearer ${good}`)).status).toBe(200);
    const other = keyPair("ec").privateKey;
    expect401(
      await request(app)
        .get("/v1/assets")
        .set("Authorization", `Bearer ${jwt.sign({ workspace_id: "ws-auth" }, other, { algorithm: "ES256" })}`),
    );
    // An HS256 token "signed" with the public key text must not pass (algorithm confusion).
    const confused = jwt.sign({ workspace_id: "ws-auth" }, "x".repeat(32), { algorithm: "HS256" });
    expect401(await request(app).get("/v1/assets").set("Authorization", `Bearer ${confused}`));
  });

  describe("AUTH_JWKS_URL served by a local identity provider", () => {
    const k1 = keyPair("rsa");
    const k2 = keyPair("rsa");
    const published: Array<Record<string, unknown>> = [];
    let fetches = 0;
    let server: http.Server;
    let url: string;
    const jwk = (k: KeyObject, kid: string) => ({
      ...(k.export({ format: "jwk" }) as object),
      kid,
      alg: "RS256",
      use: "sig",
    });

    beforeAll(async () => {
      published.push(jwk(k1.publicKey, "k1"));
      server = http.createServer((req, res) => {
        fetches++;
        if (req.url !== "/.well-known/jwks.json") {
          res.writeHead(404).end();
          return;
        }
        res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify({ keys: published }));
      });
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`;
    });
    afterAll(async () => {
      await new Promise((r) => server.close(r));
    });

    it("verifies RS256 tokens by kid, caches keys and picks up a rotated key", async () => {
      const app = createApp({
        ...t.deps,
        verifier: createVerifier(
          { kind: "jwks", url },
          { workspaceClaim: "workspace_id", issuer: "https://idp.test/", audience: "media-api" },
        ),
      });
      const sign = (k: KeyObject, kid: string, claims: Record<string, unknown> = { workspace_id: "ws-auth" }) =>
        jwt.sign(claims, k, {
          algorithm: "RS256",
          keyid: kid,
          expiresIn: "1h",
          issuer: "https://idp.test/",
          audience: "media-api",
        });
      const list = (token: string) => request(app).get("/v1/assets").set("Authorization", `Bearer ${token}`);
      expect((await list(sign(k1.privateKey, "k1"))).status).toBe(200);
      expect((await list(sign(k1.privateKey, "k1"))).status).toBe(200);
      expect(fetches).toBe(1); // cached
      // Unknown kid, and a known kid with the wrong key.
      expect401(await list(sign(k2.privateKey, "k2")));
      expect401(await list(sign(k2.privateKey, "k1")));
      // Rotation: the provider publishes k2; a token signed with it is accepted.
      published.push(jwk(k2.publicKey, "k2"));
      expect((await list(sign(k2.privateKey, "k2"))).status).toBe(200);
      expect401(await list(sign(k1.privateKey, "k1", { sub: "no-workspace" })));
    });

    it("12 requests with random kids do not lock valid tokens out: unknown kids are limited per client, without a fetch", async () => {
      const verifier = createVerifier(
        { kind: "jwks", url },
        { workspaceClaim: "workspace_id", issuer: "https://idp.test/", audience: "media-api" },
      );
      const app = createApp({ ...t.deps, verifier });
      const sign = (k: KeyObject, kid: string) =>
        jwt.sign({ workspace_id: "ws-auth" }, k, {
          algorithm: "RS256",
          keyid: kid,
          expiresIn: "1h",
          issuer: "https://idp.test/",
          audience: "media-api",
        });
      const list = (token: string) => request(app).get("/v1/assets").set("Authorization", `Bearer ${token}`);
      const stranger = keyPair("rsa");
      const before = fetches;
      // No valid signature needed: the kid alone asks for a fetch.
      const refusals: string[] = [];
      for (let i = 0; i < 12; i++) {
        const res = await list(sign(stranger.privateKey, randomUUID()));
        expect401(res);
        refusals.push(res.body.detail);
      }
      expect(refusals.at(-1)).toMatch(/^too many tokens with unknown signing keys \(kid\) from this client/);
      // One fetch of the key set at start, then at most JWKS_UNKNOWN_KIDS_PER_CLIENT for this client's unknown kids.
      expect(fetches - before).toBeLessThanOrEqual(1 + JWKS_UNKNOWN_KIDS_PER_CLIENT);
      const valid = await list(sign(k1.privateKey, "k1"));
      expect(valid.status).toBe(200);
      // Another client's unknown kid is still looked up (a key the provider has just published).
      const fetched = fetches;
      await expect(verifier.verify(sign(stranger.privateKey, "k9"), "203.0.113.7")).rejects.toThrow();
      expect(fetches).toBe(fetched + 1);
    });

    it("serves known kids from the last good key set when a refresh fails", async () => {
      let failing = false;
      const flaky = http.createServer((_req, res) => {
        if (failing) res.writeHead(503).end();
        else res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify({ keys: published }));
      });
      await new Promise<void>((r) => flaky.listen(0, "127.0.0.1", r));
      try {
        const verifier = createVerifier(
          { kind: "jwks", url: `http://127.0.0.1:${(flaky.address() as AddressInfo).port}/jwks.json` },
          { workspaceClaim: "workspace_id", audience: "media-api", jwksMaxAgeMs: 0 },
        );
        const token = jwt.sign({ workspace_id: "ws-auth" }, k1.privateKey, {
          algorithm: "RS256",
          keyid: "k1",
          expiresIn: "1h",
          audience: "media-api",
        });
        await expect(verifier.verify(token)).resolves.toMatchObject({ workspaceId: "ws-auth" });
        failing = true;
        // Every verify finds the set stale (max age 0) and refreshes it; each refresh fails.
        for (let i = 0; i < 3; i++)
          await expect(verifier.verify(token)).resolves.toMatchObject({ workspaceId: "ws-auth" });
      } finally {
        await new Promise((r) => flaky.close(r));
      }
    });

    it("401 (not 500) when the JWKS endpoint is unreachable", async () => {
      const app = createApp({
        ...t.deps,
        verifier: createVerifier(
          { kind: "jwks", url: "http://127.0.0.1:1/jwks.json" },
          { workspaceClaim: "workspace_id", audience: "media-api" },
        ),
      });
      const token = jwt.sign({ workspace_id: "ws-auth" }, k1.privateKey, { algorithm: "RS256", keyid: "k1" });
      expect401(await request(app).get("/v1/assets").set("Authorization", `Bearer ${token}`));
    });
  });
});
