import { randomUUID } from "node:crypto";
import sharp from "sharp";
import { originalKey } from "@media-platform/storage";
import { loadMediaConfig, MediaConfigError } from "../src/config";
import { renditionKey } from "../src/delivery/admission";
import { FormatNegotiator } from "../src/negotiation";
import { countingRender, startTestMedia, type TestMedia } from "./support/media-server";

const CHROME = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8";
const CHROME_OTHER = "image/avif,image/webp,*/*;q=0.8"; // another string, same bucket
const SAFARI_OLD = "image/webp,image/png,image/svg+xml,image/*;q=0.8,video/*;q=0.8,*/*;q=0.5";

describe("FormatNegotiator", () => {
  it("picks the first configured format the Accept header names with q > 0", () => {
    const n = new FormatNegotiator(["avif", "webp"]);
    expect(n.bucket(CHROME)).toBe("avif");
    expect(n.bucket(SAFARI_OLD)).toBe("webp");
    expect(n.bucket("image/avif;q=0, image/webp")).toBe("webp");
    expect(n.bucket("*/*")).toBeUndefined();
    expect(n.bucket("image/*")).toBeUndefined();
    expect(n.bucket(undefined)).toBeUndefined();
    expect(n.bucket("")).toBeUndefined();
    expect(new FormatNegotiator(["webp", "avif"]).bucket(CHROME)).toBe("webp");
    expect(new FormatNegotiator(["avif"]).bucket(SAFARI_OLD)).toBeUndefined();
  });

  it("keys on the bucket, never the raw Accept; no bucket keeps the bare target", () => {
    const n = new FormatNegotiator(["avif", "webp"]);
    const key = (accept: string) => renditionKey("/grayscale/x.jpg", n.bucket(accept));
    expect(key(CHROME)).toBe("/grayscale/x.jpg#avif");
    expect(key(CHROME_OTHER)).toBe("/grayscale/x.jpg#avif");
    expect(key(SAFARI_OLD)).toBe("/grayscale/x.jpg#webp");
    expect(key("*/*")).toBe("/grayscale/x.jpg");
  });
});

describe("MEDIA_AUTO_FORMAT setting", () => {
  it("parses an ordered list; refuses unknown or repeated formats", () => {
    expect(loadMediaConfig({}).autoFormat).toEqual([]);
    expect(loadMediaConfig({ MEDIA_AUTO_FORMAT: "avif,webp" }).autoFormat).toEqual(["avif", "webp"]);
    expect(loadMediaConfig({ MEDIA_AUTO_FORMAT: " WebP " }).autoFormat).toEqual(["webp"]);
    for (const bad of ["jpeg", "avif,avif", "avif,,webp"]) {
      expect(() => loadMediaConfig({ MEDIA_AUTO_FORMAT: bad })).toThrow(MediaConfigError);
      expect(() => loadMediaConfig({ MEDIA_AUTO_FORMAT: bad })).toThrow(/MEDIA_AUTO_FORMAT: must/);
    }
  });
});

async function get(media: TestMedia, path: string, accept?: string) {
  const res = await fetch(`${media.url}${path}`, { headers: accept ? { Accept: accept } : {} });
  const body = Buffer.from(await res.arrayBuffer());
  return { res, body, meta: res.status === 200 ? await sharp(body).metadata() : undefined };
}

describe("negotiated renditions (MEDIA_AUTO_FORMAT=avif,webp)", () => {
  let media: TestMedia;
  let counting: ReturnType<typeof countingRender>;
  let jpg: string;
  let png: string;
  let gif: string;
  let webp: string;
  beforeAll(async () => {
    counting = countingRender();
    media = await startTestMedia({ render: counting.render, autoFormat: ["avif", "webp"], avifEffort: 2 });
    jpg = await media.store.putFixture("rocket.jpg");
    png = await media.store.putFixture("astronaut.png");
    gif = await media.store.putFixture("no_time_for_that_tiny.gif");
    webp = randomUUID();
    await media.store.put(
      originalKey(webp),
      await sharp(media.store.blobs.get(originalKey(jpg))!.data)
        .webp()
        .toBuffer(),
      "image/webp",
    );
  });
  afterAll(() => media.close());

  it("serves a JPEG as AVIF, WebP or JPEG by Accept bucket, each with Vary: Accept, MISS then HIT", async () => {
    const path = `/resize:width=320/${jpg}.jpg`;
    const cases = [
      [CHROME, "image/avif", "heif"],
      [SAFARI_OLD, "image/webp", "webp"],
      ["*/*", "image/jpeg", "jpeg"],
    ] as const;
    for (const [accept, type, format] of cases) {
      for (const xCache of ["MISS", "HIT"]) {
        const { res, meta } = await get(media, path, accept);
        expect([accept, res.status, res.headers.get("content-type"), res.headers.get("x-cache")]).toEqual([
          accept,
          200,
          type,
          xCache,
        ]);
        expect(res.headers.get("vary")).toBe("Accept");
        expect([meta!.format, meta!.width, meta!.height]).toEqual([format, 320, 214]);
      }
    }
    expect(counting.calls.filter((k) => k.startsWith(path))).toEqual([`${path}#avif`, `${path}#webp`, path]);
    // Another Accept string in the avif bucket is the same cache entry (hot path HIT).
    const other = await get(media, path, CHROME_OTHER);
    expect([other.res.headers.get("x-cache"), other.res.headers.get("content-type")]).toEqual(["HIT", "image/avif"]);
    expect(media.memory.get(`${path}#avif`)?.contentType).toBe("image/avif");
  });

  it("serves a PNG as WebP; a 304 carries Vary too", async () => {
    const path = `/thumbnail:size=64/${png}.png`;
    const { res, meta } = await get(media, path, SAFARI_OLD);
    expect(res.headers.get("content-type")).toBe("image/webp");
    expect([meta!.width, meta!.height]).toEqual([64, 64]);
    const revalidated = await fetch(`${media.url}${path}`, {
      headers: { Accept: SAFARI_OLD, "If-None-Match": res.headers.get("etag")! },
    });
    expect(revalidated.status).toBe(304);
    expect(revalidated.headers.get("vary")).toBe("Accept");
  });

  it("never converts GIFs or non-JPEG/PNG originals", async () => {
    const g = await get(media, `/resize:width=50/${gif}.gif`, CHROME);
    expect([g.res.headers.get("content-type"), g.meta!.format]).toEqual(["image/gif", "gif"]);
    const w = await get(media, `/resize:width=50/${webp}.webp`, CHROME);
    expect([w.res.headers.get("content-type"), w.meta!.format]).toEqual(["image/webp", "webp"]);
  });

  it("errors carry Vary too and are not cached", async () => {
    const { res } = await get(media, `/resize/${jpg}.jpg`, CHROME);
    expect(res.status).toBe(400);
    expect(res.headers.get("vary")).toBe("Accept");
    expect(res.headers.get("cache-control")).toBe("no-store");
  });
});

describe("negotiation off (default): the spec's rule holds", () => {
  let media: TestMedia;
  let id: string;
  beforeAll(async () => {
    media = await startTestMedia();
    id = await media.store.putFixture("rocket.jpg");
  });
  afterAll(() => media.close());

  it("a browser Accept still gets the stored format, without Vary", async () => {
    for (const xCache of ["MISS", "HIT"]) {
      const { res, meta } = await get(media, `/resize:width=100/${id}.jpg`, CHROME);
      expect([res.headers.get("content-type"), res.headers.get("x-cache"), meta!.format]).toEqual([
        "image/jpeg",
        xCache,
        "jpeg",
      ]);
      expect(res.headers.get("vary")).toBeNull();
    }
  });
});
