import request from "supertest";
import { makeEntry } from "../src/cache/entry";
import { startTestMedia, type TestMedia } from "./support/media-server";

// Every media response carries X-Content-Type-Options: nosniff: the hot path (HIT, 304, HEAD),
// the Express path (MISS, Express-served HIT/304) and every error or probe answer.
describe("X-Content-Type-Options: nosniff", () => {
  let media: TestMedia;
  let id: string;

  beforeAll(async () => {
    media = await startTestMedia();
    id = await media.store.putFixture("rocket.jpg");
  });
  afterAll(() => media.close());

  it("is in both header sets of a cache entry, once, next to the fields the hot path sends", () => {
    const entry = makeEntry(Buffer.from("x"), "image/png");
    expect(entry.hitHeaders["X-Content-Type-Options"]).toBe("nosniff");
    expect(entry.notModifiedHeaders["X-Content-Type-Options"]).toBe("nosniff");
    // The flat lists the hot path writes are the same fields and values.
    const pairs = (list: readonly string[]) =>
      Object.fromEntries(list.flatMap((v, i) => (i % 2 ? [] : [[v, list[i + 1]]])));
    expect(pairs(entry.hitHeaderList)).toEqual({ ...entry.hitHeaders, "Content-Length": "1" });
    expect(pairs(entry.notModifiedHeaderList)).toEqual(entry.notModifiedHeaders);
  });

  it("on a MISS, a hot-path HIT, a HEAD and a 304, with the request id and ETag kept", async () => {
    const url = `/thumbnail:size=60/${id}.jpg`;
    const miss = await request(media.server).get(url);
    expect([miss.status, miss.headers["x-cache"], miss.headers["x-content-type-options"]]).toEqual([
      200,
      "MISS",
      "nosniff",
    ]);

    const hit = await request(media.server).get(url).set("X-Request-Id", "req-hit-1");
    expect(hit.status).toBe(200);
    expect(hit.headers).toMatchObject({
      "x-cache": "HIT",
      "x-content-type-options": "nosniff",
      "x-request-id": "req-hit-1",
      etag: miss.headers.etag,
      "content-type": "image/jpeg",
      "content-length": String(miss.body.length),
      // Unversioned URL (lifecycle: originals can be replaced), with the asset's purge tags.
      "cache-control": "public, max-age=3600, stale-while-revalidate=60",
      "surrogate-key": id,
      "cache-tag": id,
    });
    expect(hit.body.equals(miss.body)).toBe(true);

    const generated = await request(media.server).get(url);
    expect(generated.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);

    const head = await request(media.server).head(url);
    expect([head.status, head.headers["x-content-type-options"], head.headers["content-length"]]).toEqual([
      200,
      "nosniff",
      String(miss.body.length),
    ]);

    const notModified = await request(media.server).get(url).set("If-None-Match", miss.headers.etag!);
    expect(notModified.status).toBe(304);
    expect(notModified.headers).toMatchObject({
      "x-content-type-options": "nosniff",
      etag: miss.headers.etag,
      "x-cache": "HIT",
    });
    expect(notModified.headers["x-request-id"]).toBeDefined();
  });

  it("on errors and probes answered by the Express app", async () => {
    const missing = await request(media.server).get("/thumbnail:size=60/00000000-0000-4000-8000-000000000000.jpg");
    expect([missing.status, missing.headers["content-type"], missing.headers["x-content-type-options"]]).toEqual([
      404,
      "application/problem+json",
      "nosniff",
    ]);
    const bad = await request(media.server).get(`/thumbnail:size=abc/${id}.jpg`);
    expect([bad.status, bad.headers["x-content-type-options"]]).toEqual([400, "nosniff"]);
    const health = await request(media.server).get("/healthz");
    expect([health.status, health.headers["x-content-type-options"]]).toEqual([200, "nosniff"]);
  });
});
