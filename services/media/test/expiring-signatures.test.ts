import { createHmac } from "node:crypto";
import { signedMediaUrl, splitSignedTarget } from "@media-platform/contracts";
import { UrlSigner } from "../src/delivery/signing";
import { countingRender, startTestMedia, type TestMedia } from "./support/media-server";

const KEY = "test-signing-key-0123456789";
const PATH = "/grayscale/3f2b6c1e-4d5a-4b7c-8e9f-0a1b2c3d4e5f.jpg";
const hmac = (s: string) => createHmac("sha256", KEY).update(s).digest("base64url");

describe("signedMediaUrl with an expiry", () => {
  it("appends exp (unix seconds) and signs path + exp", () => {
    const url = signedMediaUrl(PATH, KEY, { expiresAt: 1_767_225_600 });
    expect(url).toBe(`${PATH}?exp=1767225600&sig=${hmac(`${PATH}?exp=1767225600`)}`);
    expect(signedMediaUrl(PATH, KEY, { expiresAt: new Date(1_767_225_600_999) })).toBe(url);
  });

  it("without an expiry is unchanged (the path alone is signed)", () => {
    expect(signedMediaUrl(PATH, KEY)).toBe(`${PATH}?sig=${hmac(PATH)}`);
  });

  it("keeps a query the path already has, inside the signature", () => {
    const path = "/original/3f2b6c1e-4d5a-4b7c-8e9f-0a1b2c3d4e5f.jpg?download=a.jpg";
    expect(signedMediaUrl(path, KEY, { expiresAt: 5 })).toBe(`${path}&exp=5&sig=${hmac(`${path}&exp=5`)}`);
  });

  it("refuses an expiry that is not whole unix seconds", () => {
    expect(() => signedMediaUrl(PATH, KEY, { expiresAt: 1.5 })).toThrow(RangeError);
    expect(() => signedMediaUrl(PATH, KEY, { expiresAt: new Date(Number.NaN) })).toThrow(RangeError);
  });

  it("splitSignedTarget takes sig as the last parameter", () => {
    expect(splitSignedTarget(`${PATH}?exp=5&sig=abc`)).toEqual({ signed: `${PATH}?exp=5`, sig: "abc" });
    expect(splitSignedTarget(`${PATH}?sig=abc`)).toEqual({ signed: PATH, sig: "abc" });
    expect(splitSignedTarget(`${PATH}?exp=5`)).toBeUndefined();
    expect(splitSignedTarget(PATH)).toBeUndefined();
  });
});

describe("UrlSigner with exp", () => {
  const nowMs = 1_700_000_000_000;
  const signer = new UrlSigner(KEY, () => nowMs);
  const at = (seconds: number) => signedMediaUrl(PATH, KEY, { expiresAt: seconds });

  it("ok before exp with a Cache-Control bounded by the time left; expired at and after exp", () => {
    expect(signer.verify(at(1_700_000_060))).toEqual({
      status: "ok",
      expiresAt: 1_700_000_060,
      cacheControl: "public, max-age=60",
    });
    expect(signer.check(at(1_700_000_000))).toBe("expired");
    expect(signer.check(at(1_600_000_000))).toBe("expired");
  });

  it("an unversioned URL is cached no longer than MEDIA_CACHE_MAX_AGE however far its exp; a versioned one up to exp", () => {
    const inADay = 1_700_000_000 + 86_400;
    expect(signer.verify(at(inADay)).cacheControl).toBe("public, max-age=3600");
    const capped = new UrlSigner(KEY, () => nowMs, 600);
    expect(capped.verify(at(inADay)).cacheControl).toBe("public, max-age=600");
    const versioned = signedMediaUrl(PATH, KEY, { version: 3, expiresAt: inADay });
    expect(versioned).toBe(`${PATH}?v=3&exp=${inADay}&sig=${hmac(`${PATH}?v=3&exp=${inADay}`)}`);
    expect(capped.verify(versioned)).toEqual({
      status: "ok",
      expiresAt: inADay,
      cacheControl: "public, max-age=86400",
    });
  });

  it("v is covered by the signature: signed it verifies, changed or added afterwards it is invalid", () => {
    const signed = signedMediaUrl(PATH, KEY, { version: 7 });
    expect(signed).toBe(`${PATH}?v=7&sig=${hmac(`${PATH}?v=7`)}`);
    // A signed v is vouched for by the signer: immutable.
    expect(signer.verify(signed)).toEqual({ status: "ok", cacheControl: "public, max-age=31536000, immutable" });
    expect(signer.check(signed.replace("v=7", "v=8"))).toBe("invalid");
    expect(signer.check(signedMediaUrl(PATH, KEY).replace("?sig=", "?v=1&sig="))).toBe("invalid");
    expect(() => signedMediaUrl(PATH, KEY, { version: "a b" })).toThrow(RangeError);
  });

  it("an exp changed after signing is invalid, not expired or ok", () => {
    const signed = at(1_600_000_000);
    expect(signer.check(signed.replace("exp=1600000000", "exp=1900000000"))).toBe("invalid");
  });

  it("refuses other parameters, repeated ones and a malformed exp even when signed with the key", () => {
    const sign = (target: string) => `${target}&sig=${hmac(target)}`;
    expect(signer.check(sign(`${PATH}?w=2`))).toBe("invalid");
    expect(signer.check(sign(`${PATH}?v=2&v=3`))).toBe("invalid");
    expect(signer.check(sign(`${PATH}?exp=1800000000&exp=1900000000`))).toBe("invalid");
    expect(signer.check(sign(`${PATH}?exp=soon`))).toBe("invalid");
    expect(signer.check(sign(`${PATH}?exp=1800000000`))).toBe("ok");
    expect(signer.check(`${at(1_800_000_000)}&v=1`)).toBe("invalid");
  });
});

describe("expiring signed URLs over HTTP", () => {
  let media: TestMedia;
  let counting: ReturnType<typeof countingRender>;
  let id: string;
  const inAnHour = () => Math.floor(Date.now() / 1000) + 3600;
  beforeAll(async () => {
    counting = countingRender();
    media = await startTestMedia({ render: counting.render, signingKey: KEY });
    id = await media.store.putFixture("rocket.jpg");
  });
  afterAll(() => media.close());

  it("200 MISS then HIT (hot path) before exp, each with max-age bounded by the time left", async () => {
    const exp = inAnHour();
    const url = signedMediaUrl(`/thumbnail:size=100/${id}.jpg`, KEY, { expiresAt: exp });
    for (const expected of ["MISS", "HIT"]) {
      const res = await fetch(`${media.url}${url}`);
      expect(res.status).toBe(200);
      expect(res.headers.get("x-cache")).toBe(expected);
      const maxAge = Number(/^public, max-age=(\d+)$/.exec(res.headers.get("cache-control") ?? "")?.[1]);
      expect(maxAge).toBeGreaterThan(3500);
      expect(maxAge).toBeLessThanOrEqual(3600);
    }
    // 304 from the hot path carries the bounded lifetime too
    const etag = (await fetch(`${media.url}${url}`)).headers.get("etag")!;
    const revalidated = await fetch(`${media.url}${url}`, { headers: { "If-None-Match": etag } });
    expect(revalidated.status).toBe(304);
    expect(revalidated.headers.get("cache-control")).toMatch(/^public, max-age=\d+$/);
  });

  it("403 signature-expired after exp, before any work", async () => {
    const url = signedMediaUrl(`/thumbnail:size=110/${id}.jpg`, KEY, { expiresAt: 1_000_000_000 });
    const before = counting.calls.length;
    const res = await fetch(`${media.url}${url}`);
    expect(res.status).toBe(403);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const body = (await res.json()) as { type: string; detail: string };
    expect(body.type).toBe("https://media-platform.dev/problems/signature-expired");
    expect(body.detail).toContain("1000000000");
    expect(counting.calls.length).toBe(before);
  });

  it("a result cached under an expiring URL is not served once it expired (memory tier, hot path)", async () => {
    const past = signedMediaUrl(`/thumbnail:size=100/${id}.jpg`, KEY, { expiresAt: 1_000_000_000 });
    const live = signedMediaUrl(`/thumbnail:size=100/${id}.jpg`, KEY, { expiresAt: inAnHour() });
    await fetch(`${media.url}${live}`);
    // The entry sits in the LRU under the (now expired) key, exactly as if it had been cached before exp.
    media.memory.set(past, media.memory.get(live)!);
    const res = await fetch(`${media.url}${past}`);
    expect(res.status).toBe(403);
    expect(res.headers.get("x-cache")).toBeNull();
  });

  it("a signed versioned URL is immutable; a version changed after signing answers 403", async () => {
    const url = signedMediaUrl(`/thumbnail:size=140/${id}.jpg`, KEY, { version: 2 });
    for (const expected of ["MISS", "HIT"]) {
      const res = await fetch(`${media.url}${url}`);
      expect(res.status).toBe(200);
      expect(res.headers.get("x-cache")).toBe(expected);
      expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    }
    const forged = await fetch(`${media.url}${url.replace("v=2", "v=3")}`);
    expect(forged.status).toBe(403);
  });

  it("an expiring unversioned URL a week away is cached for MEDIA_CACHE_MAX_AGE at most", async () => {
    const url = signedMediaUrl(`/thumbnail:size=150/${id}.jpg`, KEY, { expiresAt: inAnHour() + 7 * 86_400 });
    const res = await fetch(`${media.url}${url}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("public, max-age=3600");
  });

  it("URLs without exp get the service's Cache-Control for unversioned URLs (no shorter bound)", async () => {
    // Originals can be replaced (lifecycle), so an unversioned URL is cached for MEDIA_CACHE_MAX_AGE
    // with stale-while-revalidate, signed or not; only exp makes it shorter.
    const res = await fetch(`${media.url}${signedMediaUrl(`/thumbnail:size=130/${id}.jpg`, KEY)}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("public, max-age=3600, stale-while-revalidate=60");
  });
});
