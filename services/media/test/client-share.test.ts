import request from "supertest";
import { PROBLEM_CONTENT_TYPE } from "@media-platform/contracts";
import { loadMediaConfig, MediaConfigError } from "../src/config";
import type { RenderFn } from "../src/render/pipeline/render";
import type { RenderPlan } from "../src/render/pipeline/plan";
import { startTestMedia, type TestMedia } from "./support/media-server";

/**
 * A render that admits the work its URL names (crop:width=<work>) and holds it until the test
 * lets it finish, so who holds how much of the capacity is exact (no timing).
 */
function holdingRender() {
  const admitted: string[] = [];
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const render: RenderFn = async (input, options) => {
    const work = Number((input.steps[0]!.params as { width: number }).width);
    const release = await options.admit!({ steps: [], workPixels: work, workCost: 1000 } satisfies RenderPlan);
    admitted.push(input.cacheKey);
    try {
      await finished;
      return { data: Buffer.from(`rendered ${input.cacheKey}`), contentType: "image/png", width: 1, height: 1 };
    } finally {
      release();
    }
  };
  const waitAdmitted = async (n: number) => {
    while (admitted.length < n) await new Promise((resolve) => setTimeout(resolve, 5));
  };
  return { render, admitted, finish: () => finish(), waitAdmitted };
}

describe("per-client share of the render capacity (MEDIA_CLIENT_SHARE)", () => {
  let media: TestMedia | undefined;
  afterEach(async () => {
    await media?.close();
    media = undefined;
  });

  it("answers 429 + Retry-After to a client over its share while another client's render is admitted", async () => {
    const held = holdingRender();
    // Capacity 1000, half of it per client; the proxy on loopback names the client.
    media = await startTestMedia({
      render: held.render,
      inflightPixels: 1000,
      clientShare: 0.5,
      trustedProxies: ["loopback"],
    });
    const id = await media.store.putFixture("rocket.jpg");
    const alice = "203.0.113.7";
    const bob = "198.51.100.20";

    const first = request(media.server).get(`/crop:width=400:height=1/${id}.png`).set("X-Forwarded-For", alice);
    const firstDone = first.then((res) => res);
    await held.waitAdmitted(1);

    // 400 held + 400 asked > 500: refused at once, nothing queued.
    const over = await request(media.server).get(`/crop:width=400:height=2/${id}.png`).set("X-Forwarded-For", alice);
    expect(over.status).toBe(429);
    expect(over.headers["retry-after"]).toBe("1");
    expect(over.headers["content-type"]).toContain(PROBLEM_CONTENT_TYPE);
    expect(over.headers["cache-control"]).toBe("no-store");
    expect(over.body).toMatchObject({
      status: 429,
      type: "https://media-platform.dev/problems/client-share-exceeded",
      instance: `/crop:width=400:height=2/${id}.png`,
    });
    expect(over.body.detail).toContain("MEDIA_CLIENT_SHARE");

    // Another client is admitted beside alice's render (the capacity has room for it).
    const second = request(media.server).get(`/crop:width=400:height=3/${id}.png`).set("X-Forwarded-For", bob);
    const secondDone = second.then((res) => res);
    await held.waitAdmitted(2);
    expect(held.admitted).toEqual([`/crop:width=400:height=1/${id}.png`, `/crop:width=400:height=3/${id}.png`]);

    held.finish();
    const [a, b] = await Promise.all([firstDone, secondDone]);
    expect([a.status, a.headers["x-cache"]]).toEqual([200, "MISS"]);
    expect([b.status, b.headers["x-cache"]]).toEqual([200, "MISS"]);

    // A HIT is never refused, and once alice holds nothing her next render is admitted again.
    const hit = await request(media.server).get(`/crop:width=400:height=1/${id}.png`).set("X-Forwarded-For", alice);
    expect([hit.status, hit.headers["x-cache"]]).toEqual([200, "HIT"]);
    const again = await request(media.server).get(`/crop:width=400:height=2/${id}.png`).set("X-Forwarded-For", alice);
    expect([again.status, again.headers["x-cache"]]).toEqual([200, "MISS"]);
  });

  it("admits one request larger than the share when the client holds nothing", async () => {
    const held = holdingRender();
    media = await startTestMedia({ render: held.render, inflightPixels: 1000, clientShare: 0.5 });
    const id = await media.store.putFixture("rocket.jpg");
    const done = request(media.server)
      .get(`/crop:width=900:height=1/${id}.png`)
      .then((res) => res);
    await held.waitAdmitted(1);
    const small = await request(media.server).get(`/crop:width=10:height=1/${id}.png`);
    expect(small.status).toBe(429);
    held.finish();
    expect((await done).status).toBe(200);
  });

  it("ignores X-Forwarded-For from a peer that is not a trusted proxy", async () => {
    const held = holdingRender();
    media = await startTestMedia({ render: held.render, inflightPixels: 1000, clientShare: 0.5 });
    const id = await media.store.putFixture("rocket.jpg");
    const done = request(media.server)
      .get(`/crop:width=400:height=1/${id}.png`)
      .set("X-Forwarded-For", "203.0.113.7")
      .then((res) => res);
    await held.waitAdmitted(1);
    // Another spoofed address from the same peer is still the same client.
    const spoofed = await request(media.server)
      .get(`/crop:width=400:height=2/${id}.png`)
      .set("X-Forwarded-For", "198.51.100.20");
    expect(spoofed.status).toBe(429);
    held.finish();
    expect((await done).status).toBe(200);
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
