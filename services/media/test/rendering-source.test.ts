import { randomUUID } from "node:crypto";
import sharp from "sharp";
import { originalBlobMetadata, originalHeaderOf } from "@media-platform/contracts";
import { originalKey, renderingSourceKey } from "@media-platform/storage";
import { countingRender, startTestMedia, type TestMedia } from "./support/media-server";

/**
 * A HEIC or camera RAW original, stored as management stores it: the original's bytes (which
 * libvips cannot decode) with the blob metadata naming its rendering source, a JPEG beside it.
 */
describe("originals with a rendering source", () => {
  let media: TestMedia;
  let counting: ReturnType<typeof countingRender>;
  const heic = Buffer.from("\0\0\0\x18ftypheic\0\0\0\0mif1heic not decodable by libvips");
  let source: Buffer;

  beforeAll(async () => {
    counting = countingRender();
    media = await startTestMedia({ render: counting.render });
    source = await sharp({ create: { width: 400, height: 300, channels: 3, background: "#2a6" } })
      .jpeg({ quality: 92 })
      .toBuffer();
  });
  afterAll(() => media.close());

  const store = async (withSource: boolean) => {
    const id = randomUUID();
    const header = originalHeaderOf(await sharp(source).metadata());
    if (withSource) {
      await media.store.put(renderingSourceKey(id, 1), source, "image/jpeg", originalBlobMetadata(header, "ws"));
    }
    await media.store.put(
      originalKey(id),
      heic,
      "image/heic",
      originalBlobMetadata(header, "ws", renderingSourceKey(id, 1)),
    );
    return id;
  };

  it("renders from the source (JPEG at the source's size), and /original answers the original as stored", async () => {
    const id = await store(true);
    const res = await fetch(`${media.url}/thumbnail:size=100/${id}.heic`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/jpeg");
    expect(await sharp(Buffer.from(await res.arrayBuffer())).metadata()).toMatchObject({ width: 100, height: 100 });
    expect(counting.calls).toHaveLength(1);
    const original = await fetch(`${media.url}/original/${id}.heic`);
    expect(original.headers.get("content-type")).toBe("image/heic");
    expect(Buffer.from(await original.arrayBuffer()).equals(heic)).toBe(true);
    const info = await fetch(`${media.url}/info/resize:width=200/${id}.heic`);
    expect(await info.json()).toMatchObject({ width: 200, height: 150, format: "jpeg" });
  });

  it("a source that is gone (a delete in progress) is a 404, as a missing original", async () => {
    const id = await store(false);
    const res = await fetch(`${media.url}/thumbnail:size=100/${id}.heic`);
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
  });
});
