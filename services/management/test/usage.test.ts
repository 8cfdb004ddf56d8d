import pino from "pino";
import request from "supertest";
import { USAGE_REPORT_PREFIX, type UsageReport, type UsageResponse } from "@media-platform/contracts";
import { ingestUsageReports } from "../src/usage/ingest";
import { createTestApp, expectProblem, fixture, upload, type TestApp } from "./helpers";

let t: TestApp;
beforeAll(async () => {
  // A bucket of its own: the quota tests count every original in the store.
  t = await createTestApp({ quotas: { assets: 3 }, ownBlobStore: true });
});
afterAll(async () => {
  await t.close();
});

const today = () => new Date().toISOString().slice(0, 10);
const todayOf = (body: UsageResponse) => body.days.at(-1)!;

async function blobCount(prefix: string): Promise<number> {
  let n = 0;
  for await (const _ of t.blobStore.list!(prefix)) n++;
  return n;
}

describe("GET /v1/usage", () => {
  it("counts originals, versions and the trash, and uploads per day for 90 days", async () => {
    const ws = t.as("ws-usage");
    const empty = await ws.get("/v1/usage");
    expect(empty.status).toBe(200);
    expect(empty.body).toMatchObject({ workspaceId: "ws-usage", storageBytes: 0, assets: 0 });
    expect(empty.body.days).toHaveLength(90);
    expect(todayOf(empty.body)).toEqual({ date: today(), uploads: 0, renders: 0, egressBytes: 0 });
    expect(empty.body.quotas).toEqual({
      storageBytes: { limit: null, source: "none" },
      assets: { limit: 3, source: "default" },
    });

    const a = await upload(ws, fixture("rocket.jpg"), "a.jpg");
    const b = await upload(ws, fixture("coffee.png"), "b.png");
    expect([a.status, b.status]).toEqual([201, 201]);
    let usage = (await ws.get("/v1/usage")).body;
    expect(usage.storageBytes).toBe(a.body.bytes + b.body.bytes);
    expect(usage.assets).toBe(2);
    expect(todayOf(usage).uploads).toBe(2);

    // The trash counts until purged; a replaced original stays as a version.
    expect((await ws.delete(`/v1/assets/${b.body.id}`)).status).toBe(204);
    const replaced = await ws.put(`/v1/assets/${a.body.id}/original`).attach("file", fixture("chelsea.png"), "c.png");
    expect(replaced.status).toBe(200);
    usage = (await ws.get("/v1/usage")).body;
    expect(usage.storageBytes).toBe(a.body.bytes + b.body.bytes + replaced.body.bytes);
    expect(usage.assets).toBe(2);
    expect(todayOf(usage).uploads).toBe(3);

    // A permanent delete frees it, and is in the audit log.
    expect((await ws.delete(`/v1/assets/${b.body.id}?permanent=true`)).status).toBe(204);
    usage = (await ws.get("/v1/usage")).body;
    expect(usage.storageBytes).toBe(a.body.bytes + replaced.body.bytes);
    expect(usage.assets).toBe(1);
    const audit = await ws.get("/v1/audit-events");
    expect(audit.body.events.find((e: { action: string }) => e.action !== "sign-in")).toMatchObject({
      action: "asset.deleted-permanently",
      target: b.body.id,
      actor: "user-1",
    });
    // Another workspace sees none of it.
    expect((await t.as("ws-usage-other").get("/v1/usage")).body).toMatchObject({ storageBytes: 0, assets: 0 });
  });
});

describe("quotas", () => {
  it("refuses an upload past the asset quota before storing it, naming quota, usage and limit", async () => {
    const ws = t.as("ws-assets-quota");
    for (const name of ["rocket.jpg", "coffee.png", "chelsea.png"])
      expect((await upload(ws, fixture(name), name)).status).toBe(201);
    const originals = await blobCount("originals");
    const refused = await upload(ws, fixture("camera.png"), "camera.png");
    expectProblem(refused, 413);
    expect(refused.body).toMatchObject({
      type: expect.stringMatching(/quota-exceeded$/),
      quota: "assets",
      usage: 3,
      limit: 3,
    });
    expect(await blobCount("originals")).toBe(originals);
    expect((await ws.get("/v1/usage")).body.assets).toBe(3);
  });

  it("lets an admin set a workspace's own storage quota, audited, and refuses what would pass it", async () => {
    const ws = t.as("ws-bytes-quota");
    const first = await upload(ws, fixture("rocket.jpg"), "r.jpg");
    const set = await ws.put("/v1/usage/quotas").send({ storageBytes: first.body.bytes + 10, assets: 100 });
    expect(set.status).toBe(200);
    expect(set.body.quotas).toEqual({
      storageBytes: { limit: first.body.bytes + 10, source: "workspace" },
      assets: { limit: 100, source: "workspace" },
    });
    const originals = await blobCount("originals");
    const refused = await upload(ws, fixture("coffee.png"), "c.png");
    expectProblem(refused, 413);
    expect(refused.body).toMatchObject({
      quota: "storageBytes",
      usage: first.body.bytes,
      limit: first.body.bytes + 10,
    });
    expect(await blobCount("originals")).toBe(originals);
    // Back to the defaults.
    const reset = await ws.put("/v1/usage/quotas").send({ storageBytes: null, assets: null });
    expect(reset.body.quotas.storageBytes).toEqual({ limit: null, source: "none" });
    expect((await upload(ws, fixture("coffee.png"), "c.png")).status).toBe(201);
    const events = (await ws.get("/v1/audit-events?format=ndjson")).text
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(events.filter((e) => e.action === "quota.changed")).toHaveLength(2);
  });

  it("needs the admin scope to change quotas", async () => {
    const key = await t
      .as("ws-q-scope")
      .post("/v1/api-keys")
      .send({ name: "w", scopes: ["read", "write"] });
    const res = await request(t.app)
      .put("/v1/usage/quotas")
      .set("Authorization", `Bearer ${key.body.secret}`)
      .send({ assets: 1 });
    expectProblem(res, 403);
    expect(res.body.requiredScope).toBe("admin");
    expectProblem(await t.as("ws-q-scope").put("/v1/usage/quotas").send({ assets: -1 }), 400);
  });
});

describe("media usage reports", () => {
  it("counts renders and egress per workspace exactly once, with two media replicas and two ingesting replicas", async () => {
    const mine = await upload(t.as("ws-media"), fixture("rocket.jpg"), "r.jpg");
    const theirs = await upload(t.as("ws-media-b"), fixture("coffee.png"), "c.png");
    const log = pino({ level: "silent" });
    // Two media replicas, each buffering and writing reports as services/media's UsageReporter does.
    const replicas = ["a", "b"].map((name) => {
      let seq = 0;
      let counts = new Map<string, [number, number]>();
      const at = (id: string) => counts.get(id) ?? (counts.set(id, [0, 0]), counts.get(id)!);
      return {
        rendered: (id: string) => void (at(id)[0] += 1),
        sent: (id: string, bytes: number) => void (at(id)[1] += bytes),
        async flush() {
          const report: UsageReport = { version: 1, days: { [today()]: Object.fromEntries(counts) } };
          counts = new Map();
          await t.blobStore.put(
            `${USAGE_REPORT_PREFIX}/${name}-${seq++}.json`,
            Buffer.from(JSON.stringify(report)),
            "application/json",
          );
        },
      };
    });
    let expectedRenders = 0;
    let expectedBytes = 0;
    for (let i = 0; i < 1000; i++) {
      const r = replicas[i % 2]!;
      if (i % 10 === 0) {
        r.rendered(mine.body.id);
        expectedRenders++;
      }
      r.sent(mine.body.id, 1000 + i);
      expectedBytes += 1000 + i;
      r.sent(theirs.body.id, 7);
      // Flushed now and then: many reports.
      if (i % 250 === 249) await r.flush();
    }
    await Promise.all(replicas.map((r) => r.flush()));
    const counted = await Promise.all([
      ingestUsageReports({ prisma: t.db.prisma, blobStore: t.blobStore, log }),
      ingestUsageReports({ prisma: t.db.prisma, blobStore: t.blobStore, log }),
    ]);
    expect(counted[0]! + counted[1]!).toBeGreaterThan(0);
    expect(await blobCount(USAGE_REPORT_PREFIX)).toBe(0);
    const day = todayOf((await t.as("ws-media").get("/v1/usage")).body);
    expect(day).toMatchObject({ renders: expectedRenders, egressBytes: expectedBytes });
    expect(todayOf((await t.as("ws-media-b").get("/v1/usage")).body).egressBytes).toBe(7000);
    // Nothing is counted twice.
    await ingestUsageReports({ prisma: t.db.prisma, blobStore: t.blobStore, log });
    expect(todayOf((await t.as("ws-media").get("/v1/usage")).body).egressBytes).toBe(expectedBytes);
  });
});
