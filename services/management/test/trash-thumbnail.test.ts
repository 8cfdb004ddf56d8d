import request from "supertest";
import sharp from "sharp";
import { createTestApp, expectProblem, fixture, upload, type TestApp } from "./helpers";

const WS = "ws-trash-thumbnail";
const OTHER = "ws-trash-thumbnail-other";

describe("GET /v1/assets/:assetId/trash-thumbnail", () => {
  let t: TestApp;
  let trashed: string;
  let live: string;
  beforeAll(async () => {
    t = await createTestApp({ mediaSigningKey: "trash-thumbnail-signing-key-0123456789" });
    trashed = (await upload(t.as(WS), fixture("chelsea.png"), "chelsea.png")).body.id;
    live = (await upload(t.as(WS), fixture("rocket.jpg"), "rocket.jpg")).body.id;
    expect((await t.as(WS).delete(`/v1/assets/${trashed}`)).status).toBe(204);
  });
  afterAll(() => t.close());

  it("renders a 256 x 256 WebP of the trashed original, private to its owner's browser", async () => {
    const res = await t
      .as(WS)
      .get(`/v1/assets/${trashed}/trash-thumbnail`)
      .buffer(true)
      .parse((r, cb) => {
        const chunks: Buffer[] = [];
        r.on("data", (c: Buffer) => chunks.push(c));
        r.on("end", () => cb(null, Buffer.concat(chunks)));
      });
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toBe("image/webp");
    expect(res.headers["cache-control"]).toBe("private, max-age=600");
    const image = sharp(res.body as Buffer);
    const meta = await image.metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(["webp", 256, 256]);
    // The pixels are the cat's: the centre matches the original's centre, scaled the same way.
    const expected = await sharp(fixture("chelsea.png"))
      .resize(256, 256, { fit: "cover" })
      .removeAlpha()
      .raw()
      .toBuffer();
    const actual = await image.removeAlpha().raw().toBuffer();
    let diff = 0;
    for (let i = 0; i < actual.length; i++) diff += Math.abs(actual[i]! - expected[i]!);
    expect(diff / actual.length).toBeLessThan(4);
  });

  it("is no way to a live asset, another workspace's, or anyone without a token", async () => {
    expectProblem(await t.as(WS).get(`/v1/assets/${live}/trash-thumbnail`), 404);
    expectProblem(await t.as(OTHER).get(`/v1/assets/${trashed}/trash-thumbnail`), 404);
    expectProblem(await t.as(WS).get(`/v1/assets/not-a-uuid/trash-thumbnail`), 404);
    expectProblem(await request(t.app).get(`/v1/assets/${trashed}/trash-thumbnail`), 401);
  });

  it("leaves a trashed asset out of every signed URL: sign and sign-batch refuse it", async () => {
    expectProblem(
      await t
        .as(WS)
        .post("/v1/media-urls/sign")
        .send({ path: `/thumbnail:size=256/${trashed}.png` }),
      404,
    );
    const batch = await t
      .as(WS)
      .post("/v1/media-urls/sign-batch")
      .send({ paths: [`/thumbnail:size=256/${trashed}.png`] });
    expect(batch.body.notFound).toEqual([`/thumbnail:size=256/${trashed}.png`]);
  });
});
