import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import request from "supertest";
import {
  listAssetsResponseSchema,
  fullTextResponseSchema,
  signMediaPath,
  signMediaUrlResponseSchema,
} from "@media-platform/contracts";
import { createVerifier } from "../src/auth/keys";
import { libraryContentSecurityPolicy } from "../src/library/router";
import { createTestApp, expectProblem, fixture, upload, type TestApp } from "./helpers";

const WS = "ws-library";
const OTHER = "ws-library-other";
const SIGNING_KEY = "library-signing-key-0123456789abcdef";

describe("lists: heavy fields are opt-in (?include=)", () => {
  let t: TestApp;
  let id: string;
  beforeAll(async () => {
    t = await createTestApp();
    const res = await upload(t.as(WS), fixture("rocket.jpg"), "rocket.jpg");
    expect(res.status).toBe(201);
    id = res.body.id;
    expect((await t.as(WS).patch(`/v1/assets/${id}`).send({ userTitle: "Rocket launch" })).status).toBe(200);
  });
  afterAll(() => t.close());

  it("GET /v1/assets leaves placeholderDataUrl and exif out, keeps the ThumbHash", async () => {
    const res = await t.as(WS).get("/v1/assets");
    expect(res.status).toBe(200);
    const [asset] = res.body.assets;
    expect(asset.id).toBe(id);
    expect(asset).not.toHaveProperty("placeholderDataUrl");
    expect(asset).not.toHaveProperty("exif");
    expect(asset.placeholder).toMatch(/^[A-Za-z0-9+/]{20,60}={0,2}$/);
    expect(listAssetsResponseSchema.parse(res.body)).toEqual(res.body);
  });

  it.each([
    ["placeholderDataUrl,exif"],
    ["exif,placeholderDataUrl"],
    [" placeholderDataUrl , exif ,"],
    ["exif,placeholderDataUrl,exif"],
    ["exif&include=placeholderDataUrl"],
  ])("include=%s adds both, as GET /v1/assets/:id has them", async (include) => {
    const full = (await t.as(WS).get(`/v1/assets/${id}`)).body;
    expect(full.placeholderDataUrl).toMatch(/^data:image\/png;base64,/);
    const res = await t.as(WS).get(`/v1/assets?include=${include.replace(/ /g, "%20")}`);
    expect(res.status).toBe(200);
    expect(res.body.assets[0]).toEqual(full);
  });

  it("include=exif adds only exif", async () => {
    const res = await t.as(WS).get("/v1/assets?include=exif");
    expect(res.body.assets[0]).toHaveProperty("exif", null);
    expect(res.body.assets[0]).not.toHaveProperty("placeholderDataUrl");
  });

  it("the full-text search takes include too", async () => {
    const bare = await t.as(WS).get("/v1/assets/search/full-text?q=rocket");
    expect(bare.status).toBe(200);
    expect(bare.body.assets.map((a: { id: string }) => a.id)).toEqual([id]);
    expect(bare.body.assets[0]).not.toHaveProperty("placeholderDataUrl");
    const full = await t.as(WS).get("/v1/assets/search/full-text?q=rocket&include=placeholderDataUrl");
    expect(full.body.assets[0].placeholderDataUrl).toMatch(/^data:image\/png;base64,/);
    expect(fullTextResponseSchema.parse(full.body)).toEqual(full.body);
  });

  it("an unknown field is a 400 naming query.include and the field", async () => {
    const res = await t.as(WS).get("/v1/assets?include=exif,sha1");
    expectProblem(res, 400);
    expect(res.body.errors).toEqual([{ path: "query.include", message: expect.stringContaining('"sha1"') }]);
  });
});

describe("POST /v1/media-urls/sign", () => {
  let t: TestApp;
  let unsigned: TestApp;
  let id: string;
  let otherId: string;
  beforeAll(async () => {
    t = await createTestApp({ mediaSigningKey: SIGNING_KEY });
    unsigned = await createTestApp();
    id = (await upload(t.as(WS), fixture("rocket.jpg"), "rocket.jpg")).body.id;
    otherId = (await upload(t.as(OTHER), fixture("chelsea.png"), "chelsea.png")).body.id;
  });
  afterAll(async () => {
    await t.close();
    await unsigned.close();
  });

  it("signs a path of the caller's asset with the server's key, expiring by MEDIA_URL_LIFETIME_SECONDS' window", async () => {
    const p = `/resize:width=200/grayscale/${id}.jpg`;
    const before = Math.floor(Date.now() / 1000);
    const res = await t.as(WS).post("/v1/media-urls/sign").send({ path: p });
    expect(res.status).toBe(200);
    const exp = Number(/\?exp=(\d+)&/.exec(res.body.url)?.[1]);
    // The default lifetime is a day, in windows of 12 hours: more than half of it is left, at most all.
    expect(exp - before).toBeGreaterThan(43_200 - 5);
    expect(exp - before).toBeLessThanOrEqual(86_400);
    expect(exp % 43_200).toBe(0);
    const signedPart = `${p}?exp=${exp}`;
    expect(res.body).toEqual({
      url: `http://media.test${signedPart}&sig=${signMediaPath(signedPart, SIGNING_KEY)}`,
      signed: true,
    });
    expect(signMediaUrlResponseSchema.parse(res.body)).toEqual(res.body);
    // The same path again: the same string (one cache entry per rendition, not per request).
    expect((await t.as(WS).post("/v1/media-urls/sign").send({ path: p })).body.url).toBe(res.body.url);
  });

  it("covers exp with the signature", async () => {
    const p = `/thumbnail:size=64/${id.toUpperCase()}.jpg`;
    const res = await t.as(WS).post("/v1/media-urls/sign").send({ path: p, expiresAt: 4102444800 });
    expect(res.status).toBe(200);
    const signedPart = `${p}?exp=4102444800`;
    expect(res.body.url).toBe(`http://media.test${signedPart}&sig=${signMediaPath(signedPart, SIGNING_KEY)}`);
  });

  it("returns the URL unsigned when no key is configured", async () => {
    const own = (await upload(unsigned.as(WS), fixture("rocket.jpg"), "rocket.jpg")).body.id;
    const res = await unsigned
      .as(WS)
      .post("/v1/media-urls/sign")
      .send({ path: `/grayscale/${own}.jpg` });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ url: `http://media.test/grayscale/${own}.jpg`, signed: false });
  });

  it("refuses another workspace's asset, a trashed one and a path without an id (404)", async () => {
    expectProblem(
      await t
        .as(WS)
        .post("/v1/media-urls/sign")
        .send({ path: `/grayscale/${otherId}.png` }),
      404,
    );
    expectProblem(await t.as(WS).post("/v1/media-urls/sign").send({ path: "/grayscale/photo.png" }), 404);
    const trashed = (await upload(t.as(WS), fixture("coffee.png"), "coffee.png")).body.id;
    expect((await t.as(WS).delete(`/v1/assets/${trashed}`)).status).toBe(204);
    expectProblem(
      await t
        .as(WS)
        .post("/v1/media-urls/sign")
        .send({ path: `/grayscale/${trashed}.png` }),
      404,
    );
  });

  it.each([
    [{ path: `grayscale/x.png` }, "body.path"],
    [{ path: `/grayscale/x.png?sig=abc` }, "body.path"],
    [{ path: `/gray scale/x.png` }, "body.path"],
    [{ path: "/grayscale/x.png", expiresAt: 1.5 }, "body.expiresAt"],
    [{ path: "/grayscale/x.png", extra: 1 }, "body.extra"],
  ])("answers 400 naming the field for %j", async (body, field) => {
    const res = await t.as(WS).post("/v1/media-urls/sign").send(body);
    expectProblem(res, 400);
    expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(field);
  });

  it("needs a bearer token", async () => {
    expectProblem(
      await request(t.app)
        .post("/v1/media-urls/sign")
        .send({ path: `/grayscale/${id}.jpg` }),
      401,
    );
  });
});

describe("/library", () => {
  let dir: string;
  let t: TestApp;
  let dev: TestApp;
  const devSecret = "embedded-secret-for-the-library-test";
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "library-ui-"));
    fs.mkdirSync(path.join(dir, "assets"));
    fs.writeFileSync(
      path.join(dir, "index.html"),
      '<!doctype html><html><head><script type="module" src="/library/assets/app-1.js"></script></head><body></body></html>',
    );
    fs.writeFileSync(path.join(dir, "assets", "app-1.js"), "console.log(1)");
    t = await createTestApp({ libraryDir: dir });
    dev = await createTestApp({
      libraryDir: dir,
      devSignIn: { secret: devSecret, workspaceClaim: "workspace_id", ttlSeconds: 3600 },
      mediaSigningKey: SIGNING_KEY,
    });
  });
  afterAll(async () => {
    await t.close();
    await dev.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("serves the app with a strict Content-Security-Policy and the media origin as a meta tag", async () => {
    for (const url of ["/library", "/library/"]) {
      const res = await request(t.app).get(url);
      expect(res.status).toBe(200);
      expect(res.headers["content-type"]).toMatch(/^text\/html/);
      expect(res.headers["content-security-policy"]).toBe(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' http://media.test data: blob:; " +
          "connect-src 'self' http://media.test; font-src 'self'; manifest-src 'self'; base-uri 'none'; " +
          "form-action 'none'; frame-ancestors 'none'",
      );
      expect(res.text).toContain('<meta name="media-url" content="http://media.test">');
      // The upload queue's size: half of MAX_CONCURRENT_UPLOADS' default 8; and the size cap.
      expect(res.text).toContain('<meta name="upload-concurrency" content="4">');
      expect(res.text).toContain(`<meta name="max-upload-bytes" content="${50 * 1024 * 1024}">`);
      expect(res.text).not.toContain("dev-sign-in");
      expect(res.text).not.toContain("media-signed");
    }
    const js = await request(t.app).get("/library/assets/app-1.js");
    expect(js.status).toBe(200);
    expect(js.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
    expect(js.headers["content-security-policy"]).toBeDefined();
  });

  it("sends a browser at the service's root to the library (GET and HEAD); other methods stay 404", async () => {
    for (const method of ["get", "head"] as const) {
      const res = await request(t.app)[method]("/");
      expect(res.status).toBe(302);
      expect(res.headers.location).toBe("/library");
    }
    expect((await request(t.app).get("/").redirects(1)).text).toContain("/library/assets/app-1.js");
    expectProblem(await request(t.app).post("/").send({}), 404);
  });

  it("uses only the media origin of MEDIA_PUBLIC_URL", () => {
    expect(libraryContentSecurityPolicy("https://img.example.com/base/")).toContain(
      "img-src 'self' https://img.example.com data: blob:",
    );
  });

  it("has no development sign-in without embedded authentication", async () => {
    const res = await request(t.app).post("/library/dev-token").send({});
    expectProblem(res, 404);
  });

  it("mints a token for the workspace in embedded mode, which the embedded verifier accepts", async () => {
    const res = await request(dev.app).post("/library/dev-token").send({ workspaceId: "studio" });
    expect(res.status).toBe(200);
    expect(res.headers["cache-control"]).toBe("no-store");
    expect(res.body).toEqual({ token: expect.any(String), workspaceId: "studio", expiresAt: expect.any(String) });
    const verifier = createVerifier(
      { kind: "secret", secret: devSecret, embedded: true },
      { workspaceClaim: "workspace_id" },
    );
    await expect(verifier.verify(res.body.token)).resolves.toMatchObject({
      workspaceId: "studio",
      userId: "library-dev",
    });
    const page = await request(dev.app).get("/library");
    expect(page.text).toContain('<meta name="dev-sign-in" content="true">');
    // The API signs media URLs there: the page asks it for every one it shows.
    expect(page.text).toContain('<meta name="media-signed" content="true">');
    const defaulted = await request(dev.app).post("/library/dev-token").send({});
    expect(defaulted.body.workspaceId).toBe("default");
    expectProblem(await request(dev.app).post("/library/dev-token").send({ workspaceId: "" }), 400);
  });

  it("refuses the development sign-in behind a proxy or under another host name", async () => {
    const refused = [
      { Host: "media.example.com" },
      { Host: "media.example.com", "X-Forwarded-For": "203.0.113.9" },
      { "X-Forwarded-For": "203.0.113.9" },
      { "X-Forwarded-Host": "media.example.com" },
      { "X-Forwarded-Proto": "https" },
      { Forwarded: "for=203.0.113.9;host=media.example.com" },
      { Host: "localhost.example.com" },
    ];
    for (const headers of refused) {
      const res = await request(dev.app).post("/library/dev-token").set(headers).send({ workspaceId: "studio" });
      expectProblem(res, 403);
      expect(res.body.detail).toContain("loopback");
    }
    for (const host of ["localhost:4000", "127.0.0.1:4000", "[::1]:4000", "localhost", "LOCALHOST:4000", "[::1]"]) {
      const res = await request(dev.app).post("/library/dev-token").set("Host", host).send({});
      expect(res.status).toBe(200);
    }
  });

  it("answers 503 naming the build when the app is not built", async () => {
    const bare = await createTestApp();
    try {
      const res = await request(bare.app).get("/library");
      expectProblem(res, 503);
      expect(res.body.detail).toContain("pnpm build:library");
    } finally {
      await bare.close();
    }
  });
});
