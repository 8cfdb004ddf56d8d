import { randomBytes } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import type { Express } from "express";
import request from "supertest";
import { createLogger } from "@media-platform/observability";
import { StorageUnavailableError, type BlobStore } from "@media-platform/storage";
import { createApp, type AppDeps } from "../src/app";
import { signToken } from "../src/auth/keys";
import { loadConfig } from "../src/config";
import { createManagementMetrics, type ManagementMetrics } from "../src/metrics";
import type { PrismaClient } from "../src/db/client";
import { startManagement } from "../src/server";
import { childDatabase, createTestApp, createTestDatabase, fixture, type TestApp } from "./helpers";
import { startManagementChild, type ManagementChild } from "./support/child";

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

/** A fresh app over the shared test database and blob store, with its own metrics and overrides. */
function appWith(overrides: Partial<AppDeps> = {}): { app: Express; metrics: ManagementMetrics } {
  const metrics = overrides.metrics ?? createManagementMetrics({ defaultMetrics: false });
  return { app: createApp({ ...t.deps, ...overrides, metrics }), metrics };
}

const bearer = (ws: string) => `Bearer ${t.token(ws)}`;

/** Value of the sample `name{labels...}` in a Prometheus text exposition (labels: a subset to match). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return undefined;
}

/** A blob store whose ping fails (or hangs) and everything else is the real one. */
function withPing(store: BlobStore, ping: () => Promise<void>): BlobStore {
  const wrapped = Object.create(store) as BlobStore;
  wrapped.ping = ping;
  return wrapped;
}

describe("GET /metrics", () => {
  it("latency histogram by route pattern (never a raw id), method and status; upload bytes after an upload", async () => {
    // A registry of the test's own, with the Node.js process metrics a service has.
    const { app } = appWith({ metrics: createManagementMetrics() });
    const ws = "ws-ops-metrics";
    const unknownId = "0b7c1f7e-1d2a-4c3b-9e8f-7a6b5c4d3e2f";
    const photo = fixture("rocket.jpg");

    const before = await request(app).get("/metrics");
    expect(before.status).toBe(200);
    expect(before.headers["content-type"]).toMatch(/^text\/plain/);
    // Registered from zero, before any upload or outage.
    expect(sample(before.text, "upload_size_bytes_count")).toBe(0);
    expect(sample(before.text, "dependency_errors_total", { dependency: "database" })).toBe(0);
    expect(sample(before.text, "dependency_errors_total", { dependency: "storage" })).toBe(0);
    // Lifecycle series live in the same registry (metrics.ts), also from zero.
    for (const outcome of ["delivered", "failed", "dead"])
      expect(sample(before.text, "webhook_deliveries_total", { outcome })).toBe(0);
    for (const target of ["media", "cdn"])
      expect(sample(before.text, "cache_purge_failures_total", { target })).toBe(0);

    const up = await request(app)
      .post("/v1/assets/upload")
      .set("Authorization", bearer(ws))
      .attach("file", photo, "rocket.jpg");
    expect(up.status).toBe(201);
    expect((await request(app).get(`/v1/assets/${up.body.id}`).set("Authorization", bearer(ws))).status).toBe(200);
    expect((await request(app).get(`/v1/assets/${up.body.id}`).set("Authorization", bearer(ws))).status).toBe(200);
    expect((await request(app).get(`/v1/assets/${unknownId}`).set("Authorization", bearer(ws))).status).toBe(404);
    expect((await request(app).get("/v1/assets")).status).toBe(401);
    expect((await request(app).get(`/no/such/${unknownId}`)).status).toBe(404);

    const res = await request(app).get("/metrics");
    const text = res.text;
    const count = (labels: Record<string, string>) =>
      sample(text, "http_request_duration_seconds_count", { service: "management", ...labels });
    expect(count({ route: "/v1/assets/:assetId", method: "GET", status_code: "200" })).toBe(2);
    expect(count({ route: "/v1/assets/:assetId", method: "GET", status_code: "404" })).toBe(1);
    expect(count({ route: "/v1/assets/upload", method: "POST", status_code: "201" })).toBe(1);
    expect(count({ route: "/metrics", method: "GET", status_code: "200" })).toBe(1);
    // Refused before routing (auth) or matching no route: a fixed label, not the URL.
    expect(count({ route: "unmatched", method: "GET", status_code: "401" })).toBe(1);
    expect(count({ route: "unmatched", method: "GET", status_code: "404" })).toBe(1);
    expect(
      sample(text, "http_request_duration_seconds_bucket", {
        route: "/v1/assets/:assetId",
        status_code: "200",
        le: "+Inf",
      }),
    ).toBe(2);
    // Failed requests keep the full pattern too (not a router-relative "/:assetId" or "/").
    expect(text).not.toMatch(/route="\/(:|")/);
    expect(text).not.toContain(up.body.id);
    expect(text).not.toContain(unknownId);
    expect(text).not.toContain("/no/such");

    expect(sample(text, "upload_size_bytes_count", { service: "management" })).toBe(1);
    expect(sample(text, "upload_size_bytes_sum")).toBe(photo.length);
    expect(sample(text, "upload_size_bytes_bucket", { le: "+Inf" })).toBe(1);
    // Node.js process metrics too.
    expect(text).toMatch(/^process_cpu_user_seconds_total/m);
    // One latency histogram, the shared one: no service-specific duplicate.
    expect(text).not.toMatch(/management_http_/);
  });

  it("a refused upload is not counted in upload bytes", async () => {
    const { app } = appWith();
    const res = await request(app)
      .post("/v1/assets/upload")
      .set("Authorization", bearer("ws-ops-refused"))
      .attach("file", Buffer.from("not an image"), "notes.txt");
    expect(res.status).toBe(415);
    expect(sample((await request(app).get("/metrics")).text, "upload_size_bytes_count")).toBe(0);
  });

  it("counts dependency errors by dependency when the service answers 503", async () => {
    const failingStore = Object.create(t.blobStore) as BlobStore;
    failingStore.put = async () => {
      throw new StorageUnavailableError("bucket unreachable");
    };
    const { app } = appWith({ blobStore: failingStore });
    const up = await request(app)
      .post("/v1/assets/upload")
      .set("Authorization", bearer("ws-ops-dep"))
      .attach("file", fixture("rocket.jpg"), "rocket.jpg");
    expect(up.status).toBe(503);

    const refused = async () => {
      throw Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });
    };
    // The database is gone for model queries and raw SQL alike (the listing is plain SQL).
    const throwing = new Proxy(t.deps.prisma, {
      get(target, prop, receiver) {
        if (prop === "$queryRaw") return refused;
        if (prop === "asset") {
          return new Proxy(Reflect.get(target, prop, receiver) as object, {
            get: () => refused,
          });
        }
        return Reflect.get(target, prop, receiver) as unknown;
      },
    }) as PrismaClient;
    const { app: dbDown, metrics } = appWith({ prisma: throwing, reads: throwing });
    expect((await request(dbDown).get("/v1/assets").set("Authorization", bearer("ws-ops-dep"))).status).toBe(503);
    expect(
      (await request(dbDown).get(`/v1/assets/${randomUuid()}`).set("Authorization", bearer("ws-ops-dep"))).status,
    ).toBe(503);

    const text = (await request(app).get("/metrics")).text;
    expect(sample(text, "dependency_errors_total", { dependency: "storage" })).toBe(1);
    expect(sample(text, "dependency_errors_total", { dependency: "database" })).toBe(0);
    const other = await metrics.registry.metrics();
    expect(sample(other, "dependency_errors_total", { dependency: "database" })).toBe(2);
    expect(sample(other, "dependency_errors_total", { dependency: "storage" })).toBe(0);
  });
});

function randomUuid(): string {
  return "0b7c1f7e-1d2a-4c3b-9e8f-" + randomBytes(6).toString("hex");
}

describe("X-Request-Id", () => {
  it("is generated (UUIDv4) when absent, echoed when valid, replaced when not", async () => {
    const { app } = appWith();
    const generated = await request(app).get("/healthz");
    expect(generated.headers["x-request-id"]).toMatch(UUID_RE);
    const other = await request(app).get("/healthz");
    expect(other.headers["x-request-id"]).not.toBe(generated.headers["x-request-id"]);

    const given = "edge-7f3a.42:trace/1";
    expect((await request(app).get("/healthz").set("X-Request-Id", given)).headers["x-request-id"]).toBe(given);
    // On every kind of response: authenticated routes, 401s, problem+json 404s, docs.
    const authed = await request(app)
      .get("/v1/assets")
      .set("Authorization", bearer("ws-rid"))
      .set("X-Request-Id", given);
    expect([authed.status, authed.headers["x-request-id"]]).toEqual([200, given]);
    const unauth = await request(app).get("/v1/assets").set("X-Request-Id", given);
    expect([unauth.status, unauth.headers["x-request-id"]]).toEqual([401, given]);
    const missing = await request(app).get("/nope").set("X-Request-Id", given);
    expect([missing.status, missing.headers["x-request-id"]]).toEqual([404, given]);

    for (const bad of ["has space", "x".repeat(129), '"quoted"', "-leading-dash", "line\tbreak"]) {
      const res = await request(app).get("/healthz").set("X-Request-Id", bad);
      expect([bad, res.headers["x-request-id"]]).toEqual([bad, expect.stringMatching(UUID_RE)]);
    }
  });
});

describe("/healthz and /readyz", () => {
  it("/healthz: 200 without touching any dependency", async () => {
    const { app } = appWith({
      blobStore: withPing(t.blobStore, () => Promise.reject(new Error("down"))),
    });
    const res = await request(app).get("/healthz");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: "ok", uptimeSeconds: expect.any(Number) });
    expect(res.headers["cache-control"]).toBe("no-store");
  });

  it("/readyz: 200 naming the database and storage checks", async () => {
    const { app } = appWith();
    const res = await request(app).get("/readyz");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      status: "ok",
      failing: [],
      checks: {
        database: { status: "ok", durationMs: expect.any(Number) },
        storage: { status: "ok", durationMs: expect.any(Number) },
      },
    });
    expect(res.headers["cache-control"]).toBe("no-store");
  });

  it("/readyz: 503 naming `database` when the database is closed", async () => {
    const closed = await createTestDatabase();
    await closed.drop(); // closes the Prisma client and the connection (pool or PGlite)
    const { app } = appWith({ prisma: closed.db.prisma, readinessTimeoutMs: 1000 });
    const res = await request(app).get("/readyz");
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({
      status: "unavailable",
      failing: ["database"],
      checks: { database: { status: "error" }, storage: { status: "ok" } },
    });
    // Only the failing dependency is named: no driver message (host, database name).
    expect(res.body.checks.database.error).toBeUndefined();
  });

  it("/readyz: 503 naming `database` when a query throws", async () => {
    const stub = new Proxy(t.deps.prisma, {
      get(target, prop, receiver) {
        if (prop === "$queryRaw") return () => Promise.reject(new Error("connection terminated unexpectedly"));
        return Reflect.get(target, prop, receiver) as unknown;
      },
    }) as PrismaClient;
    const res = await request(appWith({ prisma: stub }).app).get("/readyz");
    expect(res.status).toBe(503);
    expect(res.body.failing).toEqual(["database"]);
    expect(res.body.checks.database.error).toBeUndefined();
    expect(res.text).not.toMatch(/connection terminated/);
  });

  it("/readyz: 503 naming `storage` when the blob store's ping fails, or hangs past the timeout", async () => {
    const failing = appWith({
      blobStore: withPing(t.blobStore, () => Promise.reject(new StorageUnavailableError("bucket missing"))),
    }).app;
    const res = await request(failing).get("/readyz");
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({
      status: "unavailable",
      failing: ["storage"],
      checks: { database: { status: "ok" }, storage: { status: "error" } },
    });
    expect(res.text).not.toContain("bucket missing");

    const hanging = appWith({
      blobStore: withPing(t.blobStore, () => new Promise<void>(() => undefined)),
      readinessTimeoutMs: 150,
    }).app;
    const slow = await request(hanging).get("/readyz");
    expect(slow.status).toBe(503);
    expect(slow.body.failing).toEqual(["storage"]);
    expect(slow.body.checks.storage.error).toBeUndefined();
  });

  it("/readyz: 503 `draining` while shutting down", async () => {
    const res = await request(appWith({ isDraining: () => true }).app).get("/readyz");
    expect(res.status).toBe(503);
    expect(res.body.status).toBe("draining");
  });
});

describe("public documentation, authenticated API", () => {
  it("/v1/openapi.json and /docs without a token; every other /v1 path still needs one", async () => {
    const { app } = appWith();
    const doc = await request(app).get("/v1/openapi.json");
    expect(doc.status).toBe(200);
    expect(doc.body.openapi).toBe("3.1.0");
    // The document describes this service's media URL (MEDIA_PUBLIC_URL).
    expect(doc.body.info.description).toContain(t.deps.mediaPublicUrl);
    const page = await request(app).get("/docs");
    expect(page.status).toBe(200);
    expect(page.headers["content-type"]).toMatch(/^text\/html/);
    expect((await request(app).get("/docs/assets/init.js")).status).toBe(200);

    for (const url of ["/v1/assets", "/v1/asset-collections", "/v1/openapi.yaml", "/v1/docs", "/v1/"]) {
      const res = await request(app).get(url);
      expect([url, res.status, res.headers["www-authenticate"]]).toEqual([url, 401, expect.stringMatching(/^Bearer/)]);
    }
    expect((await request(app).post("/v1/openapi.json")).status).toBe(401);
  });
});

describe("logs", () => {
  it("access lines carry the request id and route, never the bearer token; errors log through req.log", async () => {
    const lines: string[] = [];
    const log = createLogger({
      service: "management",
      level: "debug",
      destination: { write: (s: string) => lines.push(s) },
    });
    const failingStore = Object.create(t.blobStore) as BlobStore;
    failingStore.put = async () => {
      throw new StorageUnavailableError("s3 said no");
    };
    const { app } = appWith({ log, blobStore: failingStore });
    const token = t.token("ws-ops-logs");
    const rid = "log-test-0001";

    const ok = await request(app)
      .get("/v1/assets?sort=-createdAt")
      .set("Authorization", `Bearer ${token}`)
      .set("X-Request-Id", rid);
    expect(ok.status).toBe(200);
    // A token pasted into the query string, a forged one in the header, and a 503 with an error log.
    await request(app)
      .get(`/v1/assets?token=${token}`)
      .set("Authorization", `Bearer ${token}`)
      .set("X-Request-Id", "log-test-0002");
    await request(app).get("/v1/assets").set("Authorization", `Bearer ${token}x`).set("X-Request-Id", "log-test-0003");
    const down = await request(app)
      .post("/v1/assets/upload")
      .set("Authorization", `Bearer ${token}`)
      .set("X-Request-Id", "log-test-0004")
      .attach("file", fixture("rocket.jpg"), "rocket.jpg");
    expect(down.status).toBe(503);

    const entries = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const access = entries.find((e) => e.requestId === rid && e.msg === "request completed");
    expect(access).toMatchObject({
      level: "info",
      service: "management",
      method: "GET",
      route: "/v1/assets",
      url: "/v1/assets?sort=-createdAt",
      status: 200,
      durationMs: expect.any(Number),
    });
    // The access line and the refusal's reason (the unknown query field, never its value).
    expect(entries.filter((e) => e.requestId === "log-test-0002").map((e) => e.msg)).toEqual([
      "request refused: validation-error",
      "request completed",
    ]);
    expect(entries.find((e) => e.requestId === "log-test-0003" && e.msg === "request completed")).toMatchObject({
      status: 401,
      level: "warn",
    });
    // The error handler logs through the request's child logger: the line carries the request id.
    const error = entries.find((e) => e.requestId === "log-test-0004" && e.dependency === "storage");
    expect(error).toMatchObject({ level: "error", msg: expect.stringMatching(/unavailable: storage/) });
    expect(entries.find((e) => e.requestId === "log-test-0004" && e.msg === "request completed")).toMatchObject({
      status: 503,
      route: "/v1/assets/upload",
    });

    const all = lines.join("");
    expect(all).not.toContain(token);
    for (const part of token.split(".")) expect(all).not.toContain(part);
    expect(all).not.toMatch(/authorization|bearer/i);
  });
});

describe("logs: why a request was refused", () => {
  it("logs each problem's status, type and detail at info, with the request id; never the token, a filename or a name a user wrote", async () => {
    const lines: string[] = [];
    const log = createLogger({
      service: "management",
      level: "info",
      destination: { write: (s: string) => lines.push(s) },
    });
    const { app } = appWith({ log });
    const token = t.token("ws-ops-refusals");
    const auth = `Bearer ${token}`;
    const send = (req: request.Test, rid: string) => req.set("Authorization", auth).set("X-Request-Id", rid);

    const corrupt = fixture("rocket.jpg").subarray(0, 2000);
    const refused = await send(request(app).post("/v1/assets/upload"), "refuse-422").attach("file", corrupt, {
      filename: "Jane Doe passport.jpg",
      contentType: "image/jpeg",
    });
    expect(refused.status).toBe(422);
    expect(
      (await send(request(app).post("/v1/asset-collections").send({ name: "Jane's birthday" }), "c1")).status,
    ).toBe(201);
    const twice = await send(
      request(app).post("/v1/asset-collections").send({ name: "Jane's birthday" }),
      "refuse-409",
    );
    expect(twice.status).toBe(409);
    expect((await send(request(app).get("/v1/assets?limit=0"), "refuse-400")).status).toBe(400);
    expect((await request(app).get("/v1/assets").set("X-Request-Id", "refuse-401")).status).toBe(401);

    const entries = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const refusal = (rid: string) => entries.find((e) => e.requestId === rid && e.msg !== "request completed");
    expect(refusal("refuse-422")).toEqual(
      expect.objectContaining({
        level: "info",
        msg: "request refused: undecodable-image",
        method: "POST",
        path: "/v1/assets/upload",
        problem: { status: 422, type: "undecodable-image", detail: refused.body.detail },
      }),
    );
    expect(refusal("refuse-409")).toMatchObject({
      level: "info",
      problem: {
        status: 409,
        type: "conflict",
        detail: "A collection of this name already exists in this workspace",
        errors: [{ path: "body.name", message: "must be unique within the workspace" }],
      },
    });
    expect(refusal("refuse-400")).toMatchObject({
      level: "info",
      problem: { status: 400, type: "validation-error", errors: [expect.objectContaining({ path: "query.limit" })] },
    });
    expect(refusal("refuse-401")).toMatchObject({
      level: "info",
      problem: { status: 401, type: "unauthorized", detail: expect.stringMatching(/^Missing Authorization header/) },
    });

    const all = lines.join("");
    for (const part of token.split(".")) expect(all).not.toContain(part);
    expect(all).not.toMatch(/Jane|passport/);
  });
});

// ---------------------------------------------------------------------------------------------
// Graceful shutdown of the real process

describe("graceful shutdown (the real service, SIGTERM)", () => {
  let dataDir: string;
  let child: ManagementChild | undefined;
  let dropDb: (() => Promise<void>) | undefined;
  let env: NodeJS.ProcessEnv;
  const secret = randomBytes(32).toString("hex");

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "mgmt-shutdown-"));
    // Only what this test sets: a PGlite database and filesystem blobs under DATA_DIR (or a fresh
    // Postgres database when DATABASE_URL is given), whatever the CI environment says otherwise.
    env = Object.fromEntries(
      Object.entries(process.env).filter(
        ([k]) => !/^(DATABASE_URL|PGLITE_DIR|STORAGE_|S3_|AUTH_|LOG_LEVEL$|MANAGEMENT_PORT$|HOST$)/.test(k),
      ),
    );
    Object.assign(env, {
      DATA_DIR: dataDir,
      MANAGEMENT_PORT: "0",
      HOST: "127.0.0.1",
      LOG_LEVEL: "info",
      AUTH_JWT_SECRET: secret,
      MEDIA_PUBLIC_URL: "http://media.shutdown.test",
    });
    const database = await childDatabase();
    if (database.url) env.DATABASE_URL = database.url;
    dropDb = database.drop;
  });
  afterAll(async () => {
    if (child && child.proc.exitCode === null && child.proc.signalCode === null) {
      child.proc.kill("SIGKILL");
      await child.exited;
    }
    await dropDb?.();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it("finishes an in-flight upload with its normal status, refuses new connections, closes the database, exits 0", async () => {
    child = startManagementChild(env);
    const url = (await child.waitFor(/^Management API: (http:\/\/\S+)$/m))[1]!;
    // The banner: the docs URL, and `pnpm run token` (plain `pnpm token` is pnpm's own command).
    await child.waitFor(/^Get a token: +pnpm run token --workspace <workspace-id>$/m);
    expect(child.output()).toContain(`API reference:  ${url}/docs\nMedia library:  ${url}/library\n`);
    expect((await fetch(`${url}/readyz`)).status).toBe(200);

    const token = signToken(secret, { workspaceId: "ws-shutdown", sub: "ops", ttl: "10m" });
    const boundary = `----shutdown${randomBytes(8).toString("hex")}`;
    const photo = fixture("rocket.jpg");
    const body = Buffer.concat([
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="rocket.jpg"\r\n` +
          `Content-Type: image/jpeg\r\n\r\n`,
      ),
      photo,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const { port } = new URL(url);
    // Expect: 100-continue: the server answers "100 Continue" as it hands the request to the app, so
    // the client knows the request is in flight before the signal is sent.
    const req = http.request({
      host: "127.0.0.1",
      port: Number(port),
      method: "POST",
      path: "/v1/assets/upload",
      agent: false,
      headers: {
        Authorization: `Bearer ${token}`,
        "Content-Type": `multipart/form-data; boundary=${boundary}`,
        "Content-Length": String(body.length),
        "X-Request-Id": "shutdown-inflight-1",
        Expect: "100-continue",
      },
    });
    const response = new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>(
      (resolve, reject) => {
        req.on("response", (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (c: string) => (text += c));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
          res.on("error", reject);
        });
        req.on("error", reject);
      },
    );
    await new Promise<void>((resolve) => req.once("continue", resolve));
    const half = Math.floor(body.length / 2);
    await new Promise<void>((resolve) => req.write(body.subarray(0, half), () => resolve()));

    const signalledAt = Date.now();
    child.proc.kill("SIGTERM");
    await child.waitFor(/shutting down: no longer accepting connections/);
    // The listener is closed: a new connection is refused while the upload is still in flight.
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
    expect(child.proc.exitCode).toBeNull();

    // The client keeps streaming slowly; the server waits for it.
    await new Promise((r) => setTimeout(r, 1000));
    expect(child.proc.exitCode).toBeNull();
    req.end(body.subarray(half));

    const res = await response;
    expect(res.status).toBe(201);
    expect(res.headers["x-request-id"]).toBe("shutdown-inflight-1");
    expect(res.headers.connection).toBe("close");
    const asset = JSON.parse(res.body) as { id: string; bytes: number; workspaceId: string };
    expect(asset).toMatchObject({ bytes: photo.length, workspaceId: "ws-shutdown" });

    const exit = await child.exited;
    expect(exit).toEqual({ code: 0, signal: null });
    expect(Date.now() - signalledAt).toBeLessThan(30_000);
    const out = child.output();
    expect(out).toMatch(/"requestId":"shutdown-inflight-1".*"status":201/);
    expect(out).toContain("server closed: all in-flight requests finished");
    expect(out).toContain("closed database");
    expect(out).toContain("shutdown complete");
    expect(out).not.toContain(token.split(".")[2]!);

    // The database was closed cleanly: the asset is there after a restart on the same data.
    const again = await startManagement(loadConfig(env), {
      logger: createLogger({ service: "management", level: "silent" }),
    });
    try {
      const got = await fetch(`${again.url}/v1/assets/${asset.id}`, { headers: { Authorization: `Bearer ${token}` } });
      expect(got.status).toBe(200);
    } finally {
      await again.close();
    }
  });
});
