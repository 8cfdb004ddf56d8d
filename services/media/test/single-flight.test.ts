import { SingleFlight } from "../src/delivery/single-flight";
import { gatedRender, singleFlightJoins, startTestMedia, type TestMedia } from "./support/media-server";

describe("single-flight", () => {
  let media: TestMedia;
  afterEach(() => media?.close());

  it("20 concurrent identical requests run one transformation; only the leader answers MISS", async () => {
    const gated = gatedRender();
    media = await startTestMedia({ render: gated.render });
    const id = await media.store.putFixture("astronaut.png");
    const url = `${media.url}/thumbnail:size=200/${id}.png`;

    const responses = Array.from({ length: 20 }, () =>
      fetch(url).then(async (res) => ({ res, body: Buffer.from(await res.arrayBuffer()) })),
    );
    // Hold the one transformation until every request has joined it.
    await gated.started(1);
    while ((await singleFlightJoins(media)) < 19) await new Promise((r) => setImmediate(r));
    gated.release();
    const all = await Promise.all(responses);

    expect(all.map((r) => r.res.status)).toEqual(Array(20).fill(200));
    const xCache = all.map((r) => r.res.headers.get("x-cache"));
    expect(xCache.filter((x) => x === "MISS")).toHaveLength(1);
    expect(xCache.filter((x) => x === "HIT")).toHaveLength(19);
    expect(gated.calls).toHaveLength(1);
    expect(media.store.gets).toBe(1);
    expect(media.counters.get("transformations")).toBe(1);
    expect(media.counters.get("misses")).toBe(1);
    for (const r of all) expect(r.body.equals(all[0]!.body)).toBe(true);
    expect(new Set(all.map((r) => r.res.headers.get("etag"))).size).toBe(1);
  });

  it("shares an error with the followers and does not remember it", async () => {
    const gated = gatedRender();
    media = await startTestMedia({ render: gated.render });
    const id = await media.store.putFixture("astronaut.png");
    const path = `/crop:width=10:height=10:x=4000:y=4000/${id}.png`;
    const responses = Array.from({ length: 5 }, () => fetch(`${media.url}${path}`));
    await gated.started(1);
    while ((await singleFlightJoins(media)) < 4) await new Promise((r) => setImmediate(r));
    gated.release();
    const all = await Promise.all(responses);
    expect(all.map((r) => r.status)).toEqual([400, 400, 400, 400, 400]);
    expect(all.every((r) => r.headers.get("cache-control") === "no-store")).toBe(true);
    expect(gated.calls).toHaveLength(1);
    expect(media.service.inFlight).toBe(0);
    // Not remembered: the next request transforms again.
    expect((await fetch(`${media.url}${path}`)).status).toBe(400);
    expect(gated.calls).toHaveLength(2);
  });
});

describe("SingleFlight", () => {
  it("gives followers the leader's promise and forgets the key once it settles", async () => {
    const flights = new SingleFlight<number>();
    let runs = 0;
    let finish!: (n: number) => void;
    const work = () => {
      runs++;
      return new Promise<number>((resolve) => (finish = resolve));
    };
    const a = flights.run("k", work);
    const b = flights.run("k", work);
    const c = flights.run("other", async () => 7);
    expect([a.leader, b.leader, c.leader]).toEqual([true, false, true]);
    expect(b.promise).toBe(a.promise);
    await Promise.resolve();
    finish(42);
    expect(await Promise.all([a.promise, b.promise, c.promise])).toEqual([42, 42, 7]);
    expect(runs).toBe(1);
    expect(flights.inFlight).toBe(0);
  });

  it("forgets a key whose work throws synchronously", async () => {
    const flights = new SingleFlight<number>();
    const { promise } = flights.run("k", () => {
      throw new Error("boom");
    });
    await expect(promise).rejects.toThrow("boom");
    expect(flights.inFlight).toBe(0);
    expect(flights.run("k", async () => 1).leader).toBe(true);
  });
});
