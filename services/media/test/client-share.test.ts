import { PROBLEM_CONTENT_TYPE } from "@media-platform/contracts";
import { loadMediaConfig, MediaConfigError } from "../src/config";
import type { RenderFn } from "../src/render/pipeline/render";
import type { RenderPlan } from "../src/render/pipeline/plan";
import { ClientShare, ClientShareExceededError } from "../src/delivery/client-share";
import { WorkGate } from "../src/delivery/limiter";
import { metricValue, startTestMedia, type TestMedia } from "./support/media-server";

/**
 * A render that admits the memory its URL names (crop:width=<pixels>) as a heavy render and holds
 * it until the test finishes that URL, so who holds how much of the capacity is exact (no timing).
 */
function holdingRender() {
  const admitted: string[] = [];
  const finishers = new Map<string, () => void>();
  const render: RenderFn = async (input, options) => {
    const work = Number((input.steps[0]!.params as { width: number }).width);
    const plan: RenderPlan = { steps: [], workPixels: work, workCost: 1000, heldPixels: work };
    const release = await options.admit!(plan);
    admitted.push(input.cacheKey);
    try {
      await new Promise<void>((resolve) => finishers.set(input.cacheKey, resolve));
      return { data: Buffer.from(`rendered ${input.cacheKey}`), contentType: "image/png", width: 1, height: 1 };
    } finally {
      release();
    }
  };
  const until = async (done: () => boolean) => {
    while (!done()) await new Promise((resolve) => setTimeout(resolve, 5));
  };
  return {
    render,
    admitted,
    /** Resolves once `n` renders have been admitted. */
    waitAdmitted: (n: number) => until(() => admitted.length >= n),
    /** Lets the render of `key` finish (once it was admitted). */
    finish: async (key: string) => {
      await until(() => finishers.has(key));
      finishers.get(key)!();
    },
    finishAll: async () => {
      for (const key of admitted) finishers.get(key)?.();
    },
  };
}

const ALICE = "203.0.113.7";
const BOB = "198.51.100.20";

describe("per-client share of the render capacity (MEDIA_CLIENT_SHARE), work-conserving", () => {
  let media: TestMedia | undefined;
  afterEach(async () => {
    await media?.close();
    media = undefined;
  });

  /** Capacity 1000 (875 for heavy renders), half of it per client; slots enough for every request. */
  const start = async (held: ReturnType<typeof holdingRender>, trustedProxies = ["loopback"]) => {
    media = await startTestMedia({
      render: held.render,
      inflightPixels: 1000,
      clientShare: 0.5,
      trustedProxies,
      concurrency: 64,
      queueLimit: 64,
    });
    return media.store.putFixture("rocket.jpg");
  };
  /** Resolves once `n` heavy renders wait in the gate (they gave their slots up: the queue depth). */
  const waitQueued = async (n: number) => {
    while ((await metricValue(media!, "media_transform_queue_depth")) < n)
      await new Promise((resolve) => setTimeout(resolve, 5));
  };
  const ask = (path: string, client: string) =>
    fetch(`${media!.url}${path}`, { headers: { "X-Forwarded-For": client } }).then(async (res) => ({
      status: res.status,
      cache: res.headers.get("x-cache"),
      retryAfter: res.headers.get("retry-after"),
      type: res.headers.get("content-type"),
      body: await res.text(),
    }));

  it("answers every one of 20 concurrent MISSes from one client behind a trusted proxy (a CDN filling its cache), none refused", async () => {
    const held = holdingRender();
    const id = await start(held);
    // Each holds 200 of the capacity: 20 of them are 4000, eight times the client's share.
    const paths = Array.from({ length: 20 }, (_, i) => `/crop:width=200:height=${i + 1}/${id}.png`);
    const answers = Promise.all(paths.map((path) => ask(path, ALICE)));
    // Four fit the heavy lane at once; the others wait for them, and nobody else waits.
    await held.waitAdmitted(4);
    for (let i = 0; i < paths.length; i++) await held.finish(paths[i]!);
    expect((await answers).map((a) => [a.status, a.cache])).toEqual(paths.map(() => [200, "MISS"]));
  });

  it("splits the capacity when two clients compete: the one within its share is served first, the other refused beyond its share", async () => {
    const held = holdingRender();
    const id = await start(held);
    const path = (n: number) => `/crop:width=200:height=${n}/${id}.png`;
    // Alice alone: four admitted (800), two waiting.
    const alice = [1, 2, 3, 4, 5, 6].map((n) => ask(path(n), ALICE));
    await held.waitAdmitted(4);
    await waitQueued(2);
    // Bob holds nothing: his two wait ahead of alice's; a third would pass his share while alice waits.
    const bob = [11, 12].map((n) => ask(path(n), BOB));
    await waitQueued(4);
    const bobOver = await ask(path(13), BOB);
    expect([bobOver.status, bobOver.retryAfter]).toEqual([429, "1"]);
    // Alice asks again beyond her share while bob waits: refused at once, with a problem.
    const aliceOver = await ask(path(7), ALICE);
    expect([aliceOver.status, aliceOver.retryAfter, aliceOver.type]).toEqual([429, "1", PROBLEM_CONTENT_TYPE]);
    expect(JSON.parse(aliceOver.body)).toMatchObject({
      status: 429,
      type: "https://media-platform.dev/problems/client-share-exceeded",
      instance: path(7),
    });
    expect(JSON.parse(aliceOver.body).detail).toContain("MEDIA_CLIENT_SHARE");

    // Each render of alice's that ends lets one of bob's in, until bob holds his share.
    await held.finish(path(1));
    await held.waitAdmitted(5);
    await held.finish(path(2));
    await held.waitAdmitted(6);
    expect(held.admitted.slice(4)).toEqual([path(11), path(12)]);
    // Bob waits for nothing more: alice's waiting renders take the room that frees up.
    await held.finish(path(3));
    await held.waitAdmitted(7);
    expect(held.admitted[6]).toBe(path(5));
    for (const n of [4, 5, 11, 12]) await held.finish(path(n));
    await held.finish(path(6));
    expect((await Promise.all([...alice, ...bob])).map((a) => a.status)).toEqual(Array(8).fill(200));

    // A HIT is never refused.
    const hit = await ask(path(1), ALICE);
    expect([hit.status, hit.cache]).toEqual([200, "HIT"]);
  });

  it("admits one request larger than the share, and queues the client's next one while nobody else waits", async () => {
    const held = holdingRender();
    const id = await start(held);
    const big = ask(`/crop:width=900:height=1/${id}.png`, ALICE);
    await held.waitAdmitted(1);
    const small = ask(`/crop:width=10:height=1/${id}.png`, ALICE);
    await held.finish(`/crop:width=900:height=1/${id}.png`);
    await held.finish(`/crop:width=10:height=1/${id}.png`);
    expect([(await big).status, (await small).status]).toEqual([200, 200]);
  });

  it("tells clients apart only by the address a trusted proxy names (MEDIA_TRUSTED_PROXIES)", async () => {
    // Untrusted: every X-Forwarded-For from this peer is the same client, so nobody else waits and
    // nothing is refused.
    for (const [trusted, refused] of [
      [[], 200],
      [["loopback"], 429],
    ] as const) {
      const held = holdingRender();
      const id = await start(held, [...trusted]);
      const path = (n: number) => `/crop:width=200:height=${n}/${id}.png`;
      const first = [1, 2, 3, 4, 5].map((n) => ask(path(n), ALICE));
      await held.waitAdmitted(4);
      await waitQueued(1);
      const other = ask(path(11), BOB);
      await waitQueued(2);
      const again = ask(path(6), ALICE);
      const answers = [...first, other, again];
      if (refused === 429) expect((await again).status).toBe(429);
      for (const n of [1, 2, 3, 4, 5, 11, 6]) {
        if (refused === 429 && n === 6) continue;
        await held.finish(path(n));
      }
      expect((await again).status).toBe(refused);
      expect((await Promise.all(answers)).filter((a) => a.status === 200)).toHaveLength(refused === 200 ? 7 : 6);
      await media!.close();
      media = undefined;
    }
  });

  it("validates MEDIA_CLIENT_SHARE and MEDIA_TRUSTED_PROXIES", () => {
    expect(loadMediaConfig({}).clientShare).toBe(0.5);
    expect(loadMediaConfig({}).trustedProxies).toEqual([]);
    expect(loadMediaConfig({ MEDIA_TRUSTED_PROXIES: "loopback, 10.0.0.0/8" }).trustedProxies).toEqual([
      "loopback",
      "10.0.0.0/8",
    ]);
    expect(() => loadMediaConfig({ MEDIA_CLIENT_SHARE: "0" })).toThrow(MediaConfigError);
    expect(() => loadMediaConfig({ MEDIA_CLIENT_SHARE: "1.5" })).toThrow(MediaConfigError);
    expect(() => loadMediaConfig({ MEDIA_TRUSTED_PROXIES: "not-an-address" })).toThrow(/MEDIA_TRUSTED_PROXIES/);
  });
});

describe("ClientShare in the WorkGate", () => {
  const settle = () => new Promise((resolve) => setImmediate(resolve));

  it("lets one client alone use the whole capacity, and counts nothing once everything is released", async () => {
    const clients = new ClientShare(1000, 0.5);
    const gate = new WorkGate(1000);
    const alice = clients.party(ALICE);
    // Heavy by cost: the lane holds 875; the client's share is 500.
    const releases = await Promise.all([0, 1, 2, 3].map(() => gate.acquire(200, undefined, 1000, undefined, alice)));
    expect([gate.inFlight, clients.holding(ALICE)]).toEqual([800, 800]);
    // A fifth waits (it does not fit), not refused: nobody else waits.
    const fifth = gate.acquire(200, undefined, 1000, undefined, alice);
    await settle();
    expect([gate.waiting, clients.holding(ALICE)]).toEqual([1, 1000]);
    releases[0]!();
    const last = await fifth;
    expect([gate.waiting, gate.inFlight, clients.holding(ALICE)]).toEqual([0, 800, 800]);
    for (const release of [...releases, last]) release();
    expect([gate.inFlight, clients.holding(ALICE)]).toEqual([0, 0]);
  });

  it("refuses a client beyond its share only while another client waits", async () => {
    const clients = new ClientShare(1000, 0.5);
    const gate = new WorkGate(1000);
    const alice = clients.party(ALICE);
    const bob = clients.party(BOB);
    const held = await Promise.all([0, 1, 2, 3].map(() => gate.acquire(200, undefined, 1000, undefined, alice)));
    const bobWaits = gate.acquire(200, undefined, 1000, undefined, bob);
    await expect(gate.acquire(200, undefined, 1000, undefined, alice)).rejects.toBeInstanceOf(ClientShareExceededError);
    held[0]!();
    const bobRelease = await bobWaits;
    // Nobody waits now: alice may queue again.
    const aliceWaits = gate.acquire(200, undefined, 1000, undefined, alice);
    held[1]!();
    const aliceRelease = await aliceWaits;
    for (const release of [held[2]!, held[3]!, bobRelease, aliceRelease]) release();
    expect([gate.inFlight, clients.holding(ALICE), clients.holding(BOB)]).toEqual([0, 0, 0]);
  });
});
