import type { Express } from "express";
import pg from "pg";
import request from "supertest";
import type { Metrics } from "@media-platform/observability";
import { createApp } from "../src/app";
import { isDatabaseUnavailable } from "../src/db/availability";
import { openDatabase } from "../src/db/client";
import { createManagementMetrics } from "../src/metrics";
import { Prisma } from "../src/generated/prisma/client";
import { createTestApp, createTestDatabase, fixture, upload, type TestApp } from "./helpers";

/** Error shapes measured from Prisma 7 + @prisma/adapter-pg against a real Postgres (see availability.ts). */
const known = (code: string, cause: Record<string, unknown>) =>
  new Prisma.PrismaClientKnownRequestError("x", {
    code,
    clientVersion: "7",
    meta: { driverAdapterError: { name: "DriverAdapterError", cause } },
  });

describe("isDatabaseUnavailable", () => {
  it.each([
    ["refused (P1001)", known("P1001", { kind: "DatabaseNotReachable", host: "127.0.0.1", port: 1 })],
    [
      "terminated 57P01",
      known("P2010", {
        kind: "postgres",
        code: "57P01",
        message: "terminating connection due to administrator command",
      }),
    ],
    [
      "ALLOW_CONNECTIONS false (P2039 / 55000)",
      known("P2039", {
        kind: "postgres",
        code: "55000",
        message: 'database "x" is not currently accepting connections',
      }),
    ],
    [
      "too many connections 53300",
      known("P2010", { kind: "TooManyConnections", originalCode: "53300", cause: "too many" }),
    ],
    ["socket timeout", known("P2010", { kind: "SocketTimeout" })],
    ["connection class 08006", known("P2010", { kind: "postgres", code: "08006", message: "connection failure" })],
    ["pool exhausted", new Error("timeout exceeded when trying to connect")],
    ["connection terminated", new Error("Connection terminated unexpectedly")],
    ["PGlite closed", new Error("PGlite is closed")],
    ["socket refused", Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" })],
    ["P2024 pool timeout", known("P2024", {})],
  ])("%s -> unavailable", (_label, err) => {
    expect(isDatabaseUnavailable(err)).toBe(true);
  });

  it.each([
    ["unique violation", known("P2002", { kind: "UniqueConstraintViolation" })],
    ["other 55000", known("P2010", { kind: "postgres", code: "55000", message: "cannot do that now" })],
    ["syntax error", known("P2010", { kind: "postgres", code: "42601", message: "syntax error" })],
    ["plain bug", new TypeError("x is undefined")],
    ["null", null],
  ])("%s -> not unavailable", (_label, err) => {
    expect(isDatabaseUnavailable(err)).toBe(false);
  });
});

function databaseErrors(metrics: Metrics): Promise<number> {
  return metrics.registry.getSingleMetricAsString("dependency_errors_total").then((text) => {
    const m = /dependency_errors_total\{[^}]*dependency="database"[^}]*\} (\d+)/.exec(text);
    return m ? Number(m[1]) : NaN;
  });
}

/** Every route that reads or writes the database, answered 503 + Retry-After (never 500). */
async function expectEveryRoute503(app: Express, t: TestApp, assetId: string, ws: string): Promise<void> {
  const auth = `Bearer ${t.token(ws)}`;
  const responses = await Promise.all([
    request(app).get("/v1/assets").set("Authorization", auth),
    request(app).get("/v1/assets/search/full-text?q=rocket").set("Authorization", auth),
    request(app).get(`/v1/assets/${assetId}`).set("Authorization", auth),
    request(app).patch(`/v1/assets/${assetId}`).set("Authorization", auth).send({ userTitle: "x" }),
    request(app).get("/v1/asset-collections").set("Authorization", auth),
    request(app).post("/v1/asset-collections").set("Authorization", auth).send({ name: "n" }),
    request(app)
      .post("/v1/assets/upload")
      .set("Authorization", auth)
      .attach("file", fixture("rocket.jpg"), { filename: "r.jpg", contentType: "image/jpeg" }),
  ]);
  for (const [i, res] of responses.entries()) {
    expect([i, res.status, res.headers["retry-after"]]).toEqual([i, 503, expect.stringMatching(/^\d+$/)]);
    expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect(JSON.stringify(res.body)).not.toMatch(/mgmt_|prisma|127\.0\.0\.1/i);
  }
}

const postgres = process.env.DATABASE_URL ? describe : describe.skip;
const embedded = process.env.DATABASE_URL ? describe.skip : describe;

postgres("Postgres refusing connections (pg_terminate_backend, ALLOW_CONNECTIONS false)", () => {
  let t: TestApp;
  let admin: pg.Client;
  let dbName: string;
  beforeAll(async () => {
    t = await createTestApp();
    dbName = new URL(t.databaseUrl!).pathname.slice(1);
    admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
  });
  afterAll(async () => {
    await admin.query(`ALTER DATABASE "${dbName}" ALLOW_CONNECTIONS true`).catch(() => undefined);
    await admin.end();
    await t.close();
  });
  const terminate = () =>
    admin.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
      [dbName],
    );

  it("503 + Retry-After on every route, counted as dependency=database, never 500; 200 again afterwards", async () => {
    const metrics = createManagementMetrics({ defaultMetrics: false });
    const app = createApp({ ...t.deps, metrics });
    const ws = "ws-db-down";
    const created = await upload(t.as(ws), fixture("rocket.jpg"), "rocket.jpg");
    expect(created.status).toBe(201);

    // Terminated backends mid-load: each request either succeeds (the pool reconnects) or is a 503.
    const statuses: number[] = [];
    for (let round = 0; round < 5; round++) {
      const inflight = Array.from({ length: 4 }, () =>
        request(app)
          .get("/v1/assets")
          .set("Authorization", `Bearer ${t.token(ws)}`),
      );
      await terminate();
      for (const res of await Promise.all(inflight)) statuses.push(res.status);
    }
    expect(statuses.filter((s) => s !== 200 && s !== 503)).toEqual([]);

    const before = await databaseErrors(metrics);
    await admin.query(`ALTER DATABASE "${dbName}" ALLOW_CONNECTIONS false`);
    await terminate();
    await expectEveryRoute503(app, t, created.body.id, ws);
    expect(await databaseErrors(metrics)).toBeGreaterThanOrEqual(before + 7);

    const ready = await request(app).get("/readyz");
    expect(ready.status).toBe(503);
    expect(ready.body).toEqual({
      status: "unavailable",
      failing: ["database"],
      checks: {
        database: { status: "error", durationMs: expect.any(Number) },
        storage: expect.objectContaining({ status: "ok" }),
      },
    });
    expect(ready.text).not.toContain(dbName);

    await admin.query(`ALTER DATABASE "${dbName}" ALLOW_CONNECTIONS true`);
    const back = await request(app)
      .get("/v1/assets")
      .set("Authorization", `Bearer ${t.token(ws)}`);
    expect(back.status).toBe(200);
    expect(back.body.count).toBe(1);
  });

  it("too many connections (53300) is a 503", async () => {
    const role = "mgmt_rel_nolimit_test";
    await admin.query(`DROP ROLE IF EXISTS ${role}`);
    await admin.query(`CREATE ROLE ${role} LOGIN CONNECTION LIMIT 0`);
    try {
      const url = new URL(t.databaseUrl!);
      url.username = role;
      const limited = await openDatabase({ databaseUrl: url.toString() });
      try {
        const app = createApp({ ...t.deps, prisma: limited.prisma, reads: limited.reads });
        const res = await request(app)
          .get("/v1/asset-collections")
          .set("Authorization", `Bearer ${t.token("ws-x")}`);
        expect([res.status, res.headers["retry-after"]]).toEqual([503, expect.any(String)]);
      } finally {
        await limited.close();
      }
    } finally {
      await admin.query(`DROP ROLE IF EXISTS ${role}`);
    }
  });
});

embedded("PGlite closed", () => {
  // Two embedded databases created and migrated here: minutes on a loaded machine (the time is a
  // guard against a hang, not a measure of speed).
  it("503 + Retry-After on every route, counted as dependency=database", async () => {
    const t = await createTestApp();
    try {
      const created = await upload(t.as("ws-closed"), fixture("rocket.jpg"), "rocket.jpg");
      expect(created.status).toBe(201);
      const closed = await createTestDatabase();
      await closed.drop();
      const metrics = createManagementMetrics({ defaultMetrics: false });
      const app = createApp({ ...t.deps, prisma: closed.db.prisma, reads: closed.db.reads, metrics });
      await expectEveryRoute503(app, t, created.body.id, "ws-closed");
      expect(await databaseErrors(metrics)).toBe(7);
      const ready = await request(app).get("/readyz");
      expect(ready.body.failing).toEqual(["database"]);
      expect(ready.body.checks.database.error).toBeUndefined();
    } finally {
      await t.close();
    }
  }, 600_000);
});
