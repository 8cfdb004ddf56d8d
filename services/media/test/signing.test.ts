import { createHmac } from "node:crypto";
import request from "supertest";
import { signMediaPath, signedMediaUrl, UrlSigner } from "../src/delivery/signing";
import { countingRender, startTestMedia, type TestMedia } from "./support/media-server";

const KEY = "test-signing-key-0123456789";

describe("signMediaPath", () => {
  it("is the unpadded base64url HMAC-SHA256 of the path", () => {
    const path = "/thumbnail:size=256/3f2b6c1e-4d5a-4b7c-8e9f-0a1b2c3d4e5f.png";
    const sig = signMediaPath(path, KEY);
    expect(sig).toBe(createHmac("sha256", KEY).update(path).digest("base64url"));
    expect(sig).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(signedMediaUrl(path, KEY)).toBe(`${path}?sig=${sig}`);
  });

  it("UrlSigner checks the exact path and a query of exactly sig=", () => {
    const signer = new UrlSigner(KEY);
    const path = "/grayscale/3f2b6c1e-4d5a-4b7c-8e9f-0a1b2c3d4e5f.jpg";
    const sig = signMediaPath(path, KEY);
    expect(signer.check(`${path}?sig=${sig}`)).toBe("ok");
    expect(signer.check(path)).toBe("missing");
    expect(signer.check(`${path}?sig=`)).toBe("missing");
    expect(signer.check(`${path}?v=1`)).toBe("missing");
    expect(signer.check(`${path}?sig=${sig}&v=1`)).toBe("invalid");
    expect(signer.check(`${path}?v=1&sig=${sig}`)).toBe("invalid");
    expect(signer.check(`${path}?sig=${sig}=`)).toBe("invalid");
    expect(signer.check(`${path}?sig=${sig.slice(0, -1)}`)).toBe("invalid");
    expect(signer.check(`${path.replace("jpg", "png")}?sig=${sig}`)).toBe("invalid");
    expect(signer.check(`${path}?sig=${signMediaPath(path, "another-key-0123456789")}`)).toBe("invalid");
  });
});

describe("signed media URLs (MEDIA_SIGNING_KEY)", () => {
  let media: TestMedia;
  let counting: ReturnType<typeof countingRender>;
  let id: string;
  beforeAll(async () => {
    counting = countingRender();
    media = await startTestMedia({ render: counting.render, signingKey: KEY });
    id = await media.store.putFixture("rocket.jpg");
  });
  afterAll(() => media.close());

  it("403 problem when the signature is missing or wrong, before any validation or work", async () => {
    const path = `/thumbnail:size=100/${id}.jpg`;
    for (const target of [
      path,
      `${path}?sig=${signMediaPath(path, "wrong-key-0123456789")}`,
      `${path}?sig=abc`,
      `/thumbnail:size=1/${id}.jpg`,
    ]) {
      const res = await request(media.server).get(target);
      expect(res.status).toBe(403);
      expect(res.headers["cache-control"]).toBe("no-store");
      expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
      expect(JSON.parse(res.text).type).toBe("https://media-platform.dev/problems/invalid-signature");
    }
    expect(counting.calls).toHaveLength(0);
  });

  it("200 MISS then HIT with the right signature; the hot path still checks it", async () => {
    const path = `/thumbnail:size=100/${id}.jpg`;
    const signed = signedMediaUrl(path, KEY);
    const first = await fetch(`${media.url}${signed}`);
    expect(first.status).toBe(200);
    expect(first.headers.get("x-cache")).toBe("MISS");
    const second = await fetch(`${media.url}${signed}`);
    expect(second.status).toBe(200);
    expect(second.headers.get("x-cache")).toBe("HIT");
    // The same cached result is not served for an unsigned or badly signed variant.
    expect((await fetch(`${media.url}${path}`)).status).toBe(403);
    expect((await fetch(`${media.url}${path}?sig=${signMediaPath(path, "wrong-key-0123456789")}`)).status).toBe(403);
    expect(counting.calls).toHaveLength(1);
  });

  it("hot path refuses an entry whose signature no longer verifies (key rotated)", async () => {
    const path = `/thumbnail:size=120/${id}.jpg`;
    const signed = signedMediaUrl(path, KEY);
    const first = await fetch(`${media.url}${signed}`);
    expect(first.status).toBe(200);
    const rotated = await startTestMedia({ store: media.store, signingKey: "rotated-key-0123456789" });
    try {
      // Same cache content, another key: the hit must not bypass the check.
      rotated.memory.set(signed, media.memory.get(signed)!);
      const res = await fetch(`${rotated.url}${signed}`);
      expect(res.status).toBe(403);
    } finally {
      await rotated.close();
    }
  });
});
