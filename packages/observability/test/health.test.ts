import express from "express";
import request from "supertest";
import { checkReadiness, healthRouter } from "../src";

function app(options: Parameters<typeof healthRouter>[0]) {
  const a = express();
  a.use(healthRouter(options));
  return a;
}

describe("/healthz and /readyz", () => {
  it("/healthz answers 200 without running any check", async () => {
    let ran = false;
    const res = await request(
      app({
        checks: {
          database: () => {
            ran = true;
          },
        },
      }),
    )
      .get("/healthz")
      .expect(200);
    expect(res.body.status).toBe("ok");
    expect(res.headers["cache-control"]).toBe("no-store");
    expect(ran).toBe(false);
  });

  it("/readyz is 200 with a per-dependency status, then 503 naming the dependency that fails", async () => {
    let storageUp = true;
    const a = app({
      checks: {
        database: async () => {},
        storage: async () => {
          if (!storageUp) throw new Error("connect ECONNREFUSED 127.0.0.1:9000");
        },
        redis: undefined, // not configured: not checked, not listed
      },
      timeoutMs: 1000,
      exposeErrors: true,
    });
    const ok = await request(a).get("/readyz").expect(200);
    expect(ok.headers["content-type"]).toMatch(/^application\/json/);
    expect(ok.headers["cache-control"]).toBe("no-store");
    expect(ok.body).toMatchObject({
      status: "ok",
      failing: [],
      checks: { database: { status: "ok" }, storage: { status: "ok" } },
    });
    expect(Object.keys(ok.body.checks).sort()).toEqual(["database", "storage"]);

    storageUp = false;
    const down = await request(a).get("/readyz").expect(503);
    expect(down.body).toMatchObject({
      status: "unavailable",
      failing: ["storage"],
      checks: {
        database: { status: "ok" },
        storage: { status: "error", error: "connect ECONNREFUSED 127.0.0.1:9000" },
      },
    });
  });

  it("a hanging check times out: 503 naming it, and its signal is aborted", async () => {
    let aborted = false;
    const res = await request(
      app({
        checks: {
          database: async () => {},
          redis: (signal) =>
            new Promise(() => {
              signal.addEventListener("abort", () => {
                aborted = true;
              });
            }),
        },
        timeoutMs: 50,
        exposeErrors: true,
      }),
    )
      .get("/readyz")
      .expect(503);
    expect(res.body.failing).toEqual(["redis"]);
    expect(res.body.checks.redis.status).toBe("error");
    expect(res.body.checks.redis.error).toBe("timed out after 50 ms");
    expect(res.body.checks.database.status).toBe("ok");
    expect(aborted).toBe(true);
  });

  it("names every failing dependency, treats sync throws as failures and scrubs credentials from errors", async () => {
    const report = await checkReadiness(
      {
        database: () => {
          throw new Error("password authentication failed for postgres://app:hunter2@db:5432/app");
        },
        redis: () => Promise.reject(new Error("redis://:topsecret@cache:6379 unreachable")),
        storage: () => "fine",
      },
      1000,
    );
    expect(report.status).toBe("unavailable");
    expect(report.failing.sort()).toEqual(["database", "redis"]);
    const text = JSON.stringify(report);
    expect(text).not.toContain("hunter2");
    expect(text).not.toContain("topsecret");
    expect(report.checks.database.error).toContain("postgres://app:[REDACTED]@db:5432/app");
  });

  it("by default the public body names the failing dependency without its error text; the log has it", async () => {
    const warnings: Array<{ obj: unknown; msg: string }> = [];
    const a = app({
      checks: {
        storage: () => {
          throw new Error("connect ECONNREFUSED 10.0.3.7:9000 (minio-internal.svc)");
        },
      },
      logger: { warn: ((obj: unknown, msg: string) => warnings.push({ obj, msg })) as never },
    });
    const res = await request(a).get("/readyz").expect(503);
    expect(res.body).toEqual({
      status: "unavailable",
      failing: ["storage"],
      checks: { storage: { status: "error", durationMs: expect.any(Number) } },
    });
    expect(res.text).not.toContain("10.0.3.7");
    expect(JSON.stringify(warnings)).toContain("connect ECONNREFUSED 10.0.3.7:9000 (minio-internal.svc)");
  });

  it("can hide error details and reports draining during shutdown", async () => {
    let draining = false;
    const a = app({
      checks: {
        database: () => {
          throw new Error("internal host db-7.internal refused");
        },
      },
      exposeErrors: false,
      isDraining: () => draining,
    });
    const res = await request(a).get("/readyz").expect(503);
    expect(res.body.failing).toEqual(["database"]);
    expect(res.text).not.toContain("db-7.internal");
    draining = true;
    const d = await request(a).get("/readyz").expect(503);
    expect(d.body.status).toBe("draining");
  });
});
