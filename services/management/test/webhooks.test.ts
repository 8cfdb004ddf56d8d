import http from "node:http";
import net, { type AddressInfo } from "node:net";
import pino from "pino";
import { Webhook } from "standardwebhooks";
import { createCollection } from "../src/collections/service";
import { WebhookDispatcher } from "../src/webhooks/dispatcher";
import { createTestApp, upload, fixture, type TestApp } from "./helpers";

const SECRET = "whsec_d2ViaG9va3MtdGVzdC1zZWNyZXQtMDEyMzQ1Njc4OWFi";

interface Received {
  body: string;
  headers: http.IncomingHttpHeaders;
  /** The status the receiver answered. */
  status: number;
}

/** A local receiver answering with the next queued status (then 200). */
async function startReceiver(statuses: number[]) {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const status = statuses.shift() ?? 200;
      received.push({ body: Buffer.concat(chunks).toString("utf8"), headers: req.headers, status });
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return { url, received, close: () => new Promise((r) => server.close(r)) };
}

type DispatcherOverrides = Partial<ConstructorParameters<typeof WebhookDispatcher>[0]>;

/** A dispatcher on the test app's database with a fast poll and backoff, and a day of retries. */
const testDispatcher = (t: TestApp, overrides: DispatcherOverrides = {}) =>
  new WebhookDispatcher({
    prisma: t.db.prisma,
    log: pino({ level: "silent" }),
    secret: SECRET,
    retryMs: 24 * 3600_000,
    backoffBaseMs: 10,
    pollIntervalMs: 10,
    ...overrides,
  });

describe("webhooks: transactional outbox + signed at-least-once delivery", () => {
  let t: TestApp;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    receiver = await startReceiver([500, 500]);
    t = await createTestApp({ webhookUrls: [receiver.url] });
  });
  afterAll(async () => {
    await receiver.close();
    await t.close();
  });

  const dispatcher = (overrides: DispatcherOverrides = {}) => testDispatcher(t, overrides);

  /** Runs the dispatcher until nothing is due, waiting out the (10 ms) backoff between rounds. */
  async function drain(d: WebhookDispatcher, rounds = 50) {
    for (let i = 0; i < rounds; i++) {
      await d.runOnce();
      const pending = await t.db.prisma.webhookDelivery.count({ where: { status: "pending" } });
      if (pending === 0) return;
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  it("delivers asset.created signed per Standard Webhooks, retried after the receiver answers 500 twice", async () => {
    const res = await upload(t.as("ws-hooks"), fixture("rocket.jpg"), "rocket.jpg");
    expect(res.status).toBe(201);
    const outcomes: string[] = [];
    await drain(dispatcher({ onOutcome: (o) => outcomes.push(o) }));
    expect(outcomes).toEqual(["failed", "failed", "delivered"]);
    expect(receiver.received).toHaveLength(3);
    // Same event id on every attempt (receivers deduplicate on webhook-id).
    expect(new Set(receiver.received.map((r) => r.headers["webhook-id"])).size).toBe(1);
    const last = receiver.received[2]!;
    const verified = new Webhook(SECRET).verify(last.body, {
      "webhook-id": String(last.headers["webhook-id"]),
      "webhook-timestamp": String(last.headers["webhook-timestamp"]),
      "webhook-signature": String(last.headers["webhook-signature"]),
    }) as { type: string; data: { id: string; workspaceId: string } };
    expect(verified.type).toBe("asset.created");
    expect(verified.data).toMatchObject({ id: res.body.id, workspaceId: "ws-hooks" });
    // A tampered body fails verification.
    expect(() =>
      new Webhook(SECRET).verify(last.body.replace("ws-hooks", "ws-other"), {
        "webhook-id": String(last.headers["webhook-id"]),
        "webhook-timestamp": String(last.headers["webhook-timestamp"]),
        "webhook-signature": String(last.headers["webhook-signature"]),
      }),
    ).toThrow();
    const row = await t.db.prisma.webhookDelivery.findFirstOrThrow({ where: { eventType: "asset.created" } });
    expect(row).toMatchObject({ status: "delivered", attempts: 3 });
  });

  it("two dispatchers (two replicas) send each event exactly once", async () => {
    const before = receiver.received.length;
    for (let i = 0; i < 9; i++)
      await t
        .as("ws-hooks")
        .post("/v1/asset-collections")
        .send({ name: `c${i}` });
    // Both replicas poll at the same instants until the outbox is empty. A round may leave rows for
    // the next one (each replica claims at most 4 per endpoint, and skips rows the other holds).
    const [a, b] = [dispatcher(), dispatcher()];
    for (let round = 0; round < 50; round++) {
      await Promise.all([a.runOnce(), b.runOnce()]);
      if ((await t.db.prisma.webhookDelivery.count({ where: { status: "pending" } })) === 0) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    // Exactly once: every event accepted by the receiver once (a 500 answered earlier is retried).
    const accepted = receiver.received
      .slice(before)
      .filter((r) => r.status === 200)
      .map((r) => r.headers["webhook-id"]);
    expect(accepted).toHaveLength(9);
    expect(new Set(accepted).size).toBe(9);
  });

  it('marks a delivery dead once it has failed for longer than the retry window, and reports the outcome (webhook_deliveries_total{outcome="dead"})', async () => {
    const failing = await startReceiver(Array(10).fill(503));
    try {
      await t.db.prisma.webhookDelivery.updateMany({ data: { status: "delivered" } });
      const app2 = { ...t.deps, webhookUrls: [failing.url] };
      // The event is written through the service, in the same transaction as the change.
      await createCollection(app2, { workspaceId: "ws-hooks", userId: "u" }, { name: "doomed" });
      const outcomes: string[] = [];
      await drain(dispatcher({ retryMs: 1, onOutcome: (o) => outcomes.push(o) }), 3);
      expect(outcomes).toEqual(["dead"]);
      const row = await t.db.prisma.webhookDelivery.findFirstOrThrow({ where: { url: failing.url } });
      expect(row).toMatchObject({ status: "dead", attempts: 1, lastError: "HTTP 503" });
    } finally {
      await failing.close();
    }
  });
});

describe("webhooks: one lane per endpoint", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it("an endpoint that accepts and never answers does not hold back deliveries to another endpoint", async () => {
    // A black hole: accepts the connection, reads, never answers.
    const sockets = new Set<import("node:net").Socket>();
    const blackHole = net.createServer((s) => {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.resume();
    });
    await new Promise<void>((r) => blackHole.listen(0, "127.0.0.1", r));
    const holeUrl = `http://127.0.0.1:${(blackHole.address() as AddressInfo).port}/hooks`;
    const good = await startReceiver([]);
    const d = testDispatcher(t, { timeoutMs: 60_000, perEndpoint: 2 });
    try {
      // 25 events for the black hole are due first (more than one claim batch), then one for the good endpoint.
      for (let i = 0; i < 25; i++)
        await createCollection(
          { ...t.deps, webhookUrls: [holeUrl] },
          { workspaceId: "ws-lanes", userId: "u" },
          { name: `h${i}` },
        );
      await createCollection(
        { ...t.deps, webhookUrls: [good.url] },
        { workspaceId: "ws-lanes", userId: "u" },
        { name: "good" },
      );
      d.start();
      while (good.received.length === 0) await new Promise((r) => setTimeout(r, 20));
      // The good endpoint got its event while the black hole's requests are still hanging (60 s timeout).
      expect(JSON.parse(good.received[0]!.body)).toMatchObject({ type: "collection.created", data: { name: "good" } });
      expect(sockets.size).toBe(2);
      const pendingHole = await t.db.prisma.webhookDelivery.count({
        where: { url: holeUrl, status: "pending", attempts: 0 },
      });
      expect(pendingHole).toBe(25);
    } finally {
      for (const s of sockets) s.destroy();
      await d.stop();
      await good.close();
      await new Promise((r) => blackHole.close(r));
    }
  }, 30_000);
});
