import { readFile } from "node:fs/promises";
import path from "node:path";
import sharp from "sharp";
import request from "supertest";
import { signedMediaUrl } from "@media-platform/contracts";
import { renderedFacts } from "../src/info";
import { FIXTURES_DIR } from "./support/memory-store";
import { countingRender, startTestMedia, type CountingRender, type TestMedia } from "./support/media-server";

const KEY = "test-signing-key-0123456789";

describe("GET /info/<steps>/<assetId>.<ext>", () => {
  let media: TestMedia;
  let counting: CountingRender;
  let photo: string;
  let gif: string;
  beforeAll(async () => {
    counting = countingRender();
    media = await startTestMedia({ render: counting.render });
    photo = await media.store.putFixture("rocket.jpg");
    gif = await media.store.putFixture("no_time_for_that_tiny.gif");
  });
  afterAll(() => media.close());

  it("plans width, height, format and animation from the header, rendering nothing", async () => {
    const before = counting.calls.length;
    const res = await request(media.server).get(`/info/resize:width=300/format:type=webp/${photo.toUpperCase()}.jpg`);
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
    const meta = await sharp(await readFile(path.join(FIXTURES_DIR, "rocket.jpg"))).metadata();
    expect(res.body).toEqual({
      assetId: photo,
      url: `/resize:width=300/format:type=webp/${photo}.jpg`,
      width: 300,
      height: Math.round((meta.height * 300) / meta.width),
      format: "webp",
      contentType: "image/webp",
      animated: false,
      frames: 1,
    });
    expect(res.headers["surrogate-key"]).toBe(photo);
    expect(res.headers.etag).toMatch(/^"[\w-]{43}"$/);
    expect(counting.calls.length).toBe(before);
    const again = await request(media.server)
      .get(`/info/resize:width=300/format:type=webp/${photo}.jpg`)
      .set("If-None-Match", res.headers.etag!);
    expect(again.status).toBe(304);
  });

  it("says an animated GIF stays animated, and that a frame step makes a still", async () => {
    const meta = await sharp(await readFile(path.join(FIXTURES_DIR, "no_time_for_that_tiny.gif")), {
      pages: -1,
    }).metadata();
    const animated = await request(media.server).get(`/info/grayscale/${gif}.gif`);
    expect(animated.body).toMatchObject({ format: "gif", animated: true, frames: meta.pages, width: meta.width });
    const still = await request(media.server).get(`/info/frame:index=1/${gif}.gif`);
    expect(still.body).toMatchObject({ format: "gif", animated: false, frames: 1 });
  });

  it("?render=1 renders through the image URL's own cache entry and adds bytes, colour and ThumbHash", async () => {
    const image = await request(media.server).get(`/thumbnail:size=64/${photo}.jpg`);
    expect(image.status).toBe(200);
    const before = counting.calls.length;
    const res = await request(media.server).get(`/info/thumbnail:size=64/${photo}.jpg?render=1`);
    expect(res.status).toBe(200);
    // Served from the image URL's entry: no second render.
    expect(counting.calls.length).toBe(before);
    const facts = await renderedFacts(image.body as Buffer, "image/jpeg");
    expect(res.body).toMatchObject({ width: 64, height: 64, format: "jpeg", animated: false });
    expect(res.body.rendered).toEqual(facts);
    expect(res.body.rendered.bytes).toBe((image.body as Buffer).length);
    expect(res.body.rendered.dominantColor).toMatch(/^#[0-9a-f]{6}$/);
    expect(Buffer.from(res.body.rendered.thumbHash, "base64").length).toBeGreaterThan(5);
  });

  it("answers like the image URL: 404 for an unknown asset, 400 naming the parameter, 400 for another query", async () => {
    const missing = await request(media.server).get(`/info/grayscale/0f8fad5b-d9cb-469f-a165-70867728950e.jpg`);
    expect(missing.status).toBe(404);
    expect(missing.body.type).toMatch(/asset-not-found$/);
    const bad = await request(media.server).get(`/info/resize:width=0/${photo}.jpg`);
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0].path).toBe("resize.width");
    const tooLarge = await request(media.server).get(`/info/fit:width=8192:height=8192/${photo}.jpg`);
    expect(tooLarge.status).toBe(400);
    const query = await request(media.server).get(`/info/grayscale/${photo}.jpg?render=yes`);
    expect(query.status).toBe(400);
    expect(query.body.errors[0].path).toBe("render");
  });

  describe("with signing on", () => {
    let signed: TestMedia;
    let id: string;
    beforeAll(async () => {
      signed = await startTestMedia({ signingKey: KEY });
      id = await signed.store.putFixture("rocket.jpg");
    });
    afterAll(() => signed.close());

    it("needs the info URL signed, render=1 included in what the signature covers", async () => {
      const unsigned = await request(signed.server).get(`/info/grayscale/${id}.jpg`);
      expect(unsigned.status).toBe(403);
      const ok = await request(signed.server).get(signedMediaUrl(`/info/grayscale/${id}.jpg?render=1`, KEY));
      expect(ok.status).toBe(200);
      expect(ok.body.rendered.bytes).toBeGreaterThan(0);
      // A signature of the plain info URL does not allow render=1 appended.
      const plain = signedMediaUrl(`/info/grayscale/${id}.jpg`, KEY);
      const tampered = plain.replace("?sig=", "?render=1&sig=");
      expect((await request(signed.server).get(tampered)).status).toBe(403);
    });
  });
});
