import { toProblem } from "../src/problem";
import { MetadataRemovalError } from "../src/domain-errors";
import { createTestApp, expectProblem, upload, type TestApp } from "./helpers";
import { jpegSegment, photo, withSegments } from "./support/metadata-fixtures";

const WS = "ws-upload-problems";

describe("an upload whose private metadata cannot be removed", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it("is a 422 titled by what happened, not 'cannot be decoded', saying what to do; nothing is stored", async () => {
    // A JPEG whose XMP packet holds a GPS position but is not well-formed XML: the packet cannot
    // be walked to take the position out, so the original is refused rather than stored with it.
    const plain = await photo()
      .withExif({ IFD0: { Copyright: "Jane" } })
      .jpeg()
      .toBuffer();
    const unreadable = withSegments(
      plain,
      jpegSegment(
        0xe1,
        Buffer.from('http://ns.adobe.com/xap/1.0/\0<x:xmpmeta><rdf:RDF exif:GPSLatitude="1"></x:xmpmeta>', "latin1"),
      ),
    );
    const res = await upload(t.as(WS), unreadable, "photo.jpg");
    expectProblem(res, 422);
    expect(res.body).toMatchObject({
      type: "https://media-platform.dev/problems/metadata-removal-failed",
      title: "Location data could not be removed",
      detail: expect.stringMatching(/could not be read to remove its location.*upload it again/),
    });
    expect((await t.as(WS).get("/v1/assets")).body.count).toBe(0);
  });

  it("is one entry of the problem table", () => {
    const problem = toProblem(new MetadataRemovalError("x"));
    expect([problem.status, problem.slug, problem.title]).toEqual([
      422,
      "metadata-removal-failed",
      "Location data could not be removed",
    ]);
  });
});
