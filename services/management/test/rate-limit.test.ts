import { randomBytes } from "node:crypto";
import type { Express } from "express";
import { Redis } from "ioredis";
import request from "supertest";
import { createApp } from "../src/app";
import { createRateLimit, type RateLimit } from "../src/auth/rate-limit";
import { createTestApp, expectProblem, type TestApp } from "./helpers";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
let t: TestApp;
const limits: RateLimit[] = [];
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await Promise.all(limits.map((l) => l.close()));
  await t.close();
});

/** An app over the test database with its own limiter (a replica). */
function replica(limit: RateLimit): Express {
  limits.push(limit);
  return createApp({ ...t.deps, rateLimit: limit.middleware });
}

const get = (app: Express, token: string) =>
  request(app).get("/v1/asset-collections").set("Authorization", `Bearer ${token}`);

async function redisReachable(): Promise<boolean> {
  const probe = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 1000 });
  try {
    await probe.connect();
    await probe.ping();
    return true;
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}

describe("rate limits per credential", () => {
  it("sends the policy and what is left, then 429 with Retry-After; another credential is not affected", async () => {
    const app = replica(createRateLimit({ requestsPerMinute: 3 }));
    const alice = t.token("ws-rl", "alice");
    const bob = t.token("ws-rl", "bob");
    const first = await get(app, alice);
    expect(first.status).toBe(200);
    expect(first.headers["ratelimit-policy"]).toBe('"per-credential";q=3;w=60');
    expect(first.headers.ratelimit).toMatch(/^"per-credential";r=2;t=\d+$/);
    expect((await get(app, alice)).status).toBe(200);
    expect((await get(app, alice)).headers.ratelimit).toMatch(/;r=0;/);
    const refused = await get(app, alice);
    expectProblem(refused, 429);
    expect(refused.body.type).toMatch(/rate-limited$/);
    expect(Number(refused.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers["retry-after"])).toBeLessThanOrEqual(60);
    // Bob's share is untouched by Alice's burst, and so is an API key's of the same workspace.
    expect((await get(app, bob)).status).toBe(200);
    const key = await request(app)
      .post("/v1/api-keys")
      .set("Authorization", `Bearer ${bob}`)
      .send({ name: "k", scopes: ["read"] });
    expect(key.status).toBe(201);
    expect((await get(app, key.body.secret)).headers.ratelimit).toMatch(/;r=2;/);
  });

  it("is not applied to unauthenticated answers", async () => {
    const app = replica(createRateLimit({ requestsPerMinute: 1 }));
    for (let i = 0; i < 3; i++) {
      const res = await request(app).get("/v1/asset-collections");
      expect(res.status).toBe(401);
      expect(res.headers["ratelimit-policy"]).toBeUndefined();
    }
  });

  it("is shared by replicas through Redis", async () => {
    if (!(await redisReachable())) {
      if (process.env.REQUIRE_SERVICES === "1") throw new Error("REQUIRE_SERVICES=1 but Redis is unreachable");
      return;
    }
    const prefix = `rl-test-${randomBytes(4).toString("hex")}:`;
    const a = replica(createRateLimit({ requestsPerMinute: 4, redisUrl: REDIS_URL, redisKeyPrefix: prefix }));
    const b = replica(createRateLimit({ requestsPerMinute: 4, redisUrl: REDIS_URL, redisKeyPrefix: prefix }));
    // Let both clients connect (commands are not queued while connecting).
    await new Promise((r) => setTimeout(r, 300));
    const token = t.token("ws-rl-redis", "carol");
    const statuses = [];
    for (const app of [a, b, a, b, a, b]) statuses.push((await get(app, token)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
  });

  it("keeps serving, counted per process, while Redis is unreachable", async () => {
    const app = replica(
      createRateLimit({ requestsPerMinute: 2, redisUrl: "redis://127.0.0.1:1", redisKeyPrefix: "unreachable:" }),
    );
    const token = t.token("ws-rl-down", "dave");
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await get(app, token)).status);
    expect(statuses).toEqual([200, 200, 429]);
  });
});
