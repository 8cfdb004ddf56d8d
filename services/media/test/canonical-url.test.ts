import request from "supertest";
import { canonicalMediaPath, parseMediaPath } from "@media-platform/contracts";
import { loadMediaConfig } from "../src/config";
import { signedMediaUrl } from "../src/delivery/signing";
import { countingRender, startTestMedia, type TestMedia } from "./support/media-server";

const problem = (res: request.Response) => JSON.parse(res.text) as { type: string; detail: string; errors: unknown[] };

describe("one spelling per rendition (cache-key equivalence)", () => {
  let media: TestMedia;
  let id: string;
  let counting: ReturnType<typeof countingRender>;
  beforeAll(async () => {
    counting = countingRender();
    media = await startTestMedia({ render: counting.render });
    id = await media.store.putFixture("astronaut.png");
  });
  afterAll(() => media.close());

  it.each([
    ["a leading zero", (id: string) => `/thumbnail:size=0256/${id}.png`],
    ["a plus sign", (id: string) => `/thumbnail:size=+256/${id}.png`],
    ["percent-encoded digits", (id: string) => `/thumbnail:size=%32%35%36/${id}.png`],
    ["a percent-encoded name", (id: string) => `/%74humbnail:size=256/${id}.png`],
    ["an upper-case asset id", (id: string) => `/thumbnail:size=256/${id.toUpperCase()}.png`],
    ["an upper-case extension", (id: string) => `/thumbnail:size=256/${id}.PNG`],
    ["a trailing decimal zero", (id: string) => `/saturation:value=1.50/${id}.png`],
    ["a doubled slash", (id: string) => `//thumbnail:size=256/${id}.png`],
  ])("serves %s from the canonical spelling's entry, with Link rel=canonical", async (_what, url) => {
    const canonical = url(id).includes("saturation")
      ? `/saturation:value=1.5/${id}.png`
      : `/thumbnail:size=256/${id}.png`;
    const first = await request(media.server).get(canonical);
    expect(first.status).toBe(200);
    expect(first.headers.link).toBeUndefined();
    const before = counting.calls.length;
    const res = await request(media.server).get(url(id));
    expect(res.status).toBe(200);
    expect(res.headers["x-cache"]).toBe("HIT");
    expect(res.headers.etag).toBe(first.headers.etag);
    expect(res.headers.link).toBe(`<${canonical}>; rel="canonical"`);
    expect(res.body).toEqual(first.body);
    expect(counting.calls.length).toBe(before);
  });

  it("keeps the query string in the key and in the Link of another spelling", async () => {
    const first = await request(media.server).get(`/thumbnail:size=0077/${id}.png?v=3`);
    expect([first.status, first.headers["x-cache"]]).toEqual([200, "MISS"]);
    expect(first.headers.link).toBe(`<${`/thumbnail:size=77/${id}.png?v=3`}>; rel="canonical"`);
    const canonical = await request(media.server).get(`/thumbnail:size=77/${id}.png?v=3`);
    expect([canonical.status, canonical.headers["x-cache"], canonical.headers.link]).toEqual([200, "HIT", undefined]);
    expect(canonical.headers.etag).toBe(first.headers.etag);
  });

  it("answers 304 to another spelling whose ETag the client holds, with the Link", async () => {
    const first = await request(media.server).get(`/thumbnail:size=256/${id}.png`);
    const res = await request(media.server)
      .get(`/thumbnail:size=256/${id.toUpperCase()}.png`)
      .set("If-None-Match", first.headers.etag!);
    expect(res.status).toBe(304);
    expect(res.headers.link).toBe(`</thumbnail:size=256/${id}.png>; rel="canonical"`);
  });

  it("serves the canonical spelling, in any parameter order (each order its own entry)", async () => {
    const a = await request(media.server).get(`/crop:width=100:height=80/${id}.png`);
    const b = await request(media.server).get(`/crop:height=80:width=100/${id}.png`);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.body).toEqual(b.body);
  });

  it("keeps the query string as a cache buster by default", async () => {
    const res = await request(media.server).get(`/thumbnail:size=120/${id}.png?v=2`);
    expect(res.status).toBe(200);
    expect(res.headers["x-cache"]).toBe("MISS");
  });

  it("canonicalMediaPath is the identity on the formatter's own output and names the canonical form of others", () => {
    const path = `/crop:height=80:width=100:gravity=north/${"a".repeat(8)}-aaaa-4aaa-8aaa-${"a".repeat(12)}.jpg`;
    expect(canonicalMediaPath(parseMediaPath(path))).toBe(path);
    expect(canonicalMediaPath(parseMediaPath(path.replace("=80", "=080").replace(".jpg", ".JPG")))).toBe(path);
  });
});

describe("MEDIA_ALLOW_QUERY=false", () => {
  let media: TestMedia | undefined;
  afterEach(async () => {
    await media?.close();
    media = undefined;
  });

  it("is read from the environment (default true)", () => {
    expect(loadMediaConfig({}).allowQuery).toBe(true);
    expect(loadMediaConfig({ MEDIA_ALLOW_QUERY: "false" }).allowQuery).toBe(false);
    expect(() => loadMediaConfig({ MEDIA_ALLOW_QUERY: "maybe" })).toThrow(/MEDIA_ALLOW_QUERY/);
  });

  it("refuses any query string with 400 problem+json and serves the bare path", async () => {
    const counting = countingRender();
    media = await startTestMedia({ render: counting.render, allowQuery: false });
    const id = await media.store.putFixture("astronaut.png");
    for (const query of ["?v=2", "?sig=abc", "?x"]) {
      const res = await request(media.server).get(`/thumbnail:size=100/${id}.png${query}`);
      expect(res.status).toBe(400);
      expect(problem(res).type).toBe("https://media-platform.dev/problems/query-not-allowed");
      expect(problem(res).detail).toContain(`request /thumbnail:size=100/${id}.png instead`);
    }
    expect(counting.calls).toEqual([]);
    const ok = await request(media.server).get(`/thumbnail:size=100/${id}.png`);
    expect(ok.status).toBe(200);
  });

  it("refuses exp too when signing is off (unsigned, it would mean nothing)", async () => {
    media = await startTestMedia({ allowQuery: false });
    const id = await media.store.putFixture("astronaut.png");
    const res = await request(media.server).get(`/thumbnail:size=100/${id}.png?exp=4102444800`);
    expect(res.status).toBe(400);
    expect(problem(res).type).toBe("https://media-platform.dev/problems/query-not-allowed");
  });

  it("accepts a signed exp when signing is on; another spelling is checked as sent and served from the canonical entry", async () => {
    const key = "0123456789abcdef0123456789abcdef";
    media = await startTestMedia({ allowQuery: false, signingKey: key });
    const id = await media.store.putFixture("astronaut.png");
    const expiresAt = Math.floor(Date.now() / 1000) + 3600;
    const res = await request(media.server).get(signedMediaUrl(`/thumbnail:size=100/${id}.png`, key, { expiresAt }));
    expect(res.status).toBe(200);
    expect(res.headers["cache-control"]).toMatch(/^public, max-age=\d+$/);
    const other = await request(media.server).get(signedMediaUrl(`/thumbnail:size=0100/${id}.png`, key, { expiresAt }));
    // The key keeps the query as sent (here its signature): another signed URL, another entry.
    expect([other.status, other.headers["x-cache"]]).toEqual([200, "MISS"]);
    expect(other.headers.etag).toBe(res.headers.etag);
    const again = await request(media.server).get(signedMediaUrl(`/thumbnail:size=0100/${id}.png`, key, { expiresAt }));
    expect([again.status, again.headers["x-cache"], again.headers.etag]).toEqual([200, "HIT", res.headers.etag]);
    // The signature covers the path as sent; the Link names the canonical path alone (sign it anew).
    expect(other.headers.link).toBe(`</thumbnail:size=100/${id}.png>; rel="canonical"`);
    // A signature of the canonical path does not sign another spelling of it.
    const signed = signedMediaUrl(`/thumbnail:size=100/${id}.png`, key, { expiresAt });
    const forged = await request(media.server).get(signed.replace("size=100", "size=0100"));
    expect(forged.status).toBe(403);
  });

  it("still accepts the signature when signing is on", async () => {
    const key = "0123456789abcdef0123456789abcdef";
    media = await startTestMedia({ allowQuery: false, signingKey: key });
    const id = await media.store.putFixture("astronaut.png");
    const res = await request(media.server).get(signedMediaUrl(`/thumbnail:size=100/${id}.png`, key));
    expect(res.status).toBe(200);
    const unsigned = await request(media.server).get(`/thumbnail:size=100/${id}.png?v=2`);
    expect(unsigned.status).toBe(403);
  });
});
