import request from "supertest";
import {
  MAX_SIGN_BATCH_PATHS,
  signMediaPath,
  signMediaUrlsResponseSchema,
  windowedExpiry,
} from "@media-platform/contracts";
import { createTestApp, expectProblem, fixture, upload, type TestApp } from "./helpers";

const WS = "ws-signed-urls";
const OTHER = "ws-signed-urls-other";
const KEY = "signed-urls-signing-key-0123456789";

/** The signature a URL must carry over its path and query up to sig. */
function expectSigned(url: string, key = KEY): { path: string; exp: number | undefined } {
  const parsed = new URL(url);
  const target = parsed.pathname + parsed.search;
  const at = target.lastIndexOf("sig=");
  const signedPart = target.slice(0, at - 1);
  expect(target.slice(at + 4)).toBe(signMediaPath(signedPart, key));
  const exp = parsed.searchParams.get("exp");
  return { path: parsed.pathname, exp: exp === null ? undefined : Number(exp) };
}

describe("signed deployments: every media URL the API hands out is signed", () => {
  let t: TestApp;
  let id: string;
  let trashedId: string;
  let otherId: string;
  beforeAll(async () => {
    t = await createTestApp({ mediaSigningKey: KEY, mediaUrlLifetimeSeconds: 3600 });
    const res = await upload(t.as(WS), fixture("rocket.jpg"), "rocket.jpg");
    expect(res.status).toBe(201);
    id = res.body.id;
    expectSigned(res.body.mediaUrl);
    trashedId = (await upload(t.as(WS), fixture("coffee.png"), "coffee.png")).body.id;
    expect((await t.as(WS).delete(`/v1/assets/${trashedId}`)).status).toBe(204);
    otherId = (await upload(t.as(OTHER), fixture("chelsea.png"), "chelsea.png")).body.id;
  });
  afterAll(() => t.close());

  it("signs the asset's mediaUrl in every answer, with the windowed exp of MEDIA_URL_LIFETIME_SECONDS", async () => {
    const before = Date.now();
    const answers = [
      (await t.as(WS).get(`/v1/assets/${id}`)).body,
      (await t.as(WS).get("/v1/assets")).body.assets[0],
      (await t.as(WS).get("/v1/assets/search/full-text?q=rocket")).body.assets[0],
      (await t.as(WS).patch(`/v1/assets/${id}`).send({ userTitle: "Rocket" })).body,
    ];
    const after = Date.now();
    for (const asset of answers) {
      expect(asset.id).toBe(id);
      const { path, exp } = expectSigned(asset.mediaUrl);
      expect(path).toBe(`/thumbnail:size=256/${id}.jpg`);
      // A window of half the lifetime (1800 s): the exp this window gives, and every answer shares it.
      expect([windowedExpiry(before, 3600), windowedExpiry(after, 3600)]).toContain(exp);
      expect(exp! * 1000 - after).toBeGreaterThan(1800 * 1000 - 5000);
    }
    expect(new Set(answers.map((a) => a.mediaUrl)).size).toBe(1);
  });

  it("signs a page of paths in one call, listing those of no live asset of the workspace", async () => {
    const paths = [
      `/thumbnail:size=256/${id}.jpg`,
      `/resize:width=640/${id}.jpg`,
      `/info/resize:width=640/${id}.jpg`,
      `/resize:width=640/${trashedId}.png`,
      `/resize:width=640/${otherId}.png`,
      "/resize:width=640/not-an-asset.png",
    ];
    const res = await t.as(WS).post("/v1/media-urls/sign-batch").send({ paths });
    expect(res.status).toBe(200);
    expect(signMediaUrlsResponseSchema.parse(res.body)).toEqual(res.body);
    expect(Object.keys(res.body.urls)).toEqual(paths.slice(0, 3));
    expect(res.body.notFound).toEqual(paths.slice(3));
    expect(res.body.signed).toBe(true);
    for (const [p, url] of Object.entries(res.body.urls as Record<string, string>)) {
      const { path, exp } = expectSigned(url);
      expect(path).toBe(p);
      expect(exp).toBe(res.body.expiresAt);
    }
    // The single form and the batch form hand out the same string for the same path.
    const single = await t.as(WS).post("/v1/media-urls/sign").send({ path: paths[1] });
    expect(single.body.url).toBe(res.body.urls[paths[1]!]);
    // An explicit expiry is honoured as asked.
    const explicit = await t
      .as(WS)
      .post("/v1/media-urls/sign-batch")
      .send({ paths: [paths[0]], expiresAt: 4102444800 });
    expect(explicit.body.expiresAt).toBe(4102444800);
    expect(expectSigned(explicit.body.urls[paths[0]!]).exp).toBe(4102444800);
  });

  it.each([
    [{ paths: [] }, "body.paths"],
    [{ paths: ["no-slash.png"] }, "body.paths.0"],
    [{ paths: Array.from({ length: MAX_SIGN_BATCH_PATHS + 1 }, (_, i) => `/grayscale/${i}.png`) }, "body.paths"],
    [{ paths: ["/grayscale/x.png?sig=1"] }, "body.paths.0"],
    [{ paths: ["/grayscale/x.png"], expiresAt: -1 }, "body.expiresAt"],
    [{ path: "/grayscale/x.png" }, "body.paths"],
  ])("answers 400 naming the field for %#", async (body, field) => {
    const res = await t.as(WS).post("/v1/media-urls/sign-batch").send(body);
    expectProblem(res, 400);
    expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(field);
  });

  it("needs a bearer token", async () => {
    expectProblem(
      await request(t.app)
        .post("/v1/media-urls/sign-batch")
        .send({ paths: [`/grayscale/${id}.jpg`] }),
      401,
    );
  });
});

describe("MEDIA_URL_LIFETIME_SECONDS=0 and unsigned deployments", () => {
  it("signs without exp when the lifetime is 0", async () => {
    const t = await createTestApp({ mediaSigningKey: KEY, mediaUrlLifetimeSeconds: 0 });
    try {
      const res = await upload(t.as(WS), fixture("rocket.jpg"), "rocket.jpg");
      const path = `/thumbnail:size=256/${res.body.id}.jpg`;
      expect(res.body.mediaUrl).toBe(`http://media.test${path}?sig=${signMediaPath(path, KEY)}`);
      const batch = await t
        .as(WS)
        .post("/v1/media-urls/sign-batch")
        .send({ paths: [path] });
      expect(batch.body).toEqual({ urls: { [path]: res.body.mediaUrl }, notFound: [], signed: true, expiresAt: null });
    } finally {
      await t.close();
    }
  });

  it("hands out plain URLs without a key", async () => {
    const t = await createTestApp();
    try {
      const res = await upload(t.as(WS), fixture("rocket.jpg"), "rocket.jpg");
      const path = `/thumbnail:size=256/${res.body.id}.jpg`;
      expect(res.body.mediaUrl).toBe(`http://media.test${path}`);
      const batch = await t
        .as(WS)
        .post("/v1/media-urls/sign-batch")
        .send({ paths: [path] });
      expect(batch.body).toEqual({
        urls: { [path]: `http://media.test${path}` },
        notFound: [],
        signed: false,
        expiresAt: null,
      });
    } finally {
      await t.close();
    }
  });
});
