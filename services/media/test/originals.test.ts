import { readFile } from "node:fs/promises";
import path from "node:path";
import { formatOriginalPath, signedMediaUrl } from "@media-platform/contracts";
import { countingRender, startTestMedia, type TestMedia } from "./support/media-server";
import { FIXTURES_DIR } from "./support/memory-store";

const KEY = "test-signing-key-0123456789";

describe("GET /original/<id>.<ext>", () => {
  let media: TestMedia;
  let counting: ReturnType<typeof countingRender>;
  let png: string;
  let jpg: string;
  beforeAll(async () => {
    counting = countingRender();
    media = await startTestMedia({ render: counting.render });
    png = await media.store.putFixture("astronaut.png");
    jpg = await media.store.putFixture("rocket.jpg");
  });
  afterAll(() => media.close());

  it("returns the stored bytes unchanged with their Content-Type, length and nosniff; nothing rendered", async () => {
    for (const [id, file, type] of [
      [png, "astronaut.png", "image/png"],
      [jpg, "rocket.jpg", "image/jpeg"],
    ] as const) {
      const res = await fetch(`${media.url}/original/${id}.jpg`);
      expect(res.status).toBe(200);
      const body = Buffer.from(await res.arrayBuffer());
      expect(body.equals(await readFile(path.join(FIXTURES_DIR, file)))).toBe(true);
      expect(res.headers.get("content-type")).toBe(type);
      expect(Number(res.headers.get("content-length"))).toBe(body.length);
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      // An unversioned original can be replaced or deleted: cached like an unversioned rendition.
      expect(res.headers.get("cache-control")).toBe("public, max-age=3600, stale-while-revalidate=60");
      expect(res.headers.get("content-disposition")).toBeNull();
    }
    expect(counting.calls).toHaveLength(0);
  });

  it("is cached like a rendition: revalidates, an unsigned ?v= included (the version is not checked)", async () => {
    const versioned = await fetch(`${media.url}/original/${jpg}.jpg?v=3`);
    expect(versioned.status).toBe(200);
    expect(versioned.headers.get("cache-control")).toBe("public, max-age=3600, stale-while-revalidate=60");
    const plain = await fetch(`${media.url}/original/${jpg}.jpg`);
    expect(plain.headers.get("cache-control")).toBe("public, max-age=3600, stale-while-revalidate=60");
  });

  it("HEAD answers the headers without a body", async () => {
    const res = await fetch(`${media.url}/original/${png}.png`, { method: "HEAD" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/png");
    expect(Number(res.headers.get("content-length"))).toBeGreaterThan(0);
    expect((await res.arrayBuffer()).byteLength).toBe(0);
  });

  it("?download=<filename> adds an RFC 6266 attachment disposition, UTF-8 names with an ASCII fallback", async () => {
    const plain = await fetch(`${media.url}/original/${jpg}.jpg?download=rocket%20launch.jpg`);
    expect(plain.status).toBe(200);
    expect(plain.headers.get("content-disposition")).toBe('attachment; filename="rocket launch.jpg"');
    const url = formatOriginalPath(jpg, "jpg", "Fußball «final» €.jpg");
    const unicode = await fetch(`${media.url}${url}`);
    expect(unicode.headers.get("content-disposition")).toBe(
      `attachment; filename="Fu_ball _final_ _.jpg"; filename*=UTF-8''Fu%C3%9Fball%20%C2%ABfinal%C2%BB%20%E2%82%AC.jpg`,
    );
    const empty = await fetch(`${media.url}/original/${jpg}.jpg?download=`);
    expect(empty.headers.get("content-disposition")).toBe(`attachment; filename="${jpg}.jpg"`);
  });

  it.each([
    ["a path", "..%2F..%2Fetc%2Fpasswd", /without \//],
    ["a control character", "a%0D%0ASet-Cookie%3A%20x.jpg", /control characters/],
    ["too long", "a".repeat(256), /at most 255/],
    // U+202E RIGHT-TO-LEFT OVERRIDE: "photo\u202Egpj.exe" reads as "photoexe.jpg".
    ["a right-to-left override", "photo%E2%80%AEgpj.exe", /direction-changing/],
    ["a zero-width joiner", "a%E2%80%8Db.jpg", /invisible/],
    ["a Windows-reserved character", "a%3Ab.jpg", /must not contain any of/],
    ["a double quote", "%22a%22.jpg", /must not contain any of/],
  ])("refuses a download name that is %s (400 naming download)", async (_what, value, message) => {
    const res = await fetch(`${media.url}/original/${jpg}.jpg?download=${value}`);
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    const body = (await res.json()) as { errors: { path: string; message: string }[] };
    expect(body.errors[0]!.path).toBe("download");
    expect(body.errors[0]!.message).toMatch(message);
    expect(res.headers.get("content-disposition")).toBeNull();
  });

  it("the download name ends in the served format's extension, whatever the name asks", async () => {
    const disposition = async (id: string, ext: string, name: string) =>
      (await fetch(`${media.url}/original/${id}.${ext}?download=${encodeURIComponent(name)}`)).headers.get(
        "content-disposition",
      );
    expect(await disposition(jpg, "jpg", "report.exe")).toBe('attachment; filename="report.exe.jpg"');
    expect(await disposition(jpg, "jpg", "Rocket.JPEG")).toBe('attachment; filename="Rocket.JPEG"');
    expect(await disposition(jpg, "jpg", "noext")).toBe('attachment; filename="noext.jpg"');
    // The stored format decides, not the URL's extension: a PNG original asked as .jpg stays .png.
    expect(await disposition(png, "jpg", "astronaut.jpg")).toBe('attachment; filename="astronaut.jpg.png"');
    expect(await disposition(png, "png", "")).toBe(`attachment; filename="${png}.png"`);
  });

  it("400 for a repeated download, bad extension; 404 for a missing asset or a non-UUID id; 405 for POST", async () => {
    expect((await fetch(`${media.url}/original/${jpg}.jpg?download=a.jpg&download=b.jpg`)).status).toBe(400);
    expect((await fetch(`${media.url}/original/${jpg}.bmp`)).status).toBe(400);
    expect((await fetch(`${media.url}/original/7d0b8a8e-1c1e-4f7a-9a43-111111111111.jpg`)).status).toBe(404);
    expect((await fetch(`${media.url}/original/nope.jpg`)).status).toBe(404);
    const post = await fetch(`${media.url}/original/${jpg}.jpg`, { method: "POST" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
  });

  it("503 + Retry-After when the blob store is down", async () => {
    media.store.unavailable = true;
    try {
      const res = await fetch(`${media.url}/original/${jpg}.jpg`);
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBe("5");
    } finally {
      media.store.unavailable = false;
    }
  });
});

describe("signed originals", () => {
  let media: TestMedia;
  let id: string;
  beforeAll(async () => {
    media = await startTestMedia({ signingKey: KEY });
    id = await media.store.putFixture("rocket.jpg");
  });
  afterAll(() => media.close());

  it("need a signature that covers download; exp applies", async () => {
    const pathOnly = `/original/${id}.jpg`;
    expect((await fetch(`${media.url}${pathOnly}`)).status).toBe(403);
    expect((await fetch(`${media.url}${signedMediaUrl(pathOnly, KEY)}`)).status).toBe(200);
    const withDownload = signedMediaUrl(formatOriginalPath(id, "jpg", "a.jpg"), KEY);
    const ok = await fetch(`${media.url}${withDownload}`);
    expect(ok.status).toBe(200);
    expect(ok.headers.get("content-disposition")).toBe('attachment; filename="a.jpg"');
    // a different filename is not covered by the signature
    expect((await fetch(`${media.url}${withDownload.replace("a.jpg", "b.jpg")}`)).status).toBe(403);
    const expired = await fetch(`${media.url}${signedMediaUrl(pathOnly, KEY, { expiresAt: 1_000_000_000 })}`);
    expect(expired.status).toBe(403);
    const live = await fetch(
      `${media.url}${signedMediaUrl(pathOnly, KEY, { expiresAt: Math.floor(Date.now() / 1000) + 600 })}`,
    );
    expect(live.status).toBe(200);
    expect(live.headers.get("cache-control")).toMatch(/^public, max-age=(59\d|600)$/);
  });
});
