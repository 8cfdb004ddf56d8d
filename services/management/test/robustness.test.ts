import fc from "fast-check";
import request from "supertest";
import { createTestApp, expectProblem, fixture, upload, type TestApp } from "./helpers";

/** No input makes the API answer 500 or leak internals. */
let t: TestApp;
const WS = "ws-robust";
let assetId: string;

beforeAll(async () => {
  t = await createTestApp();
  assetId = (await upload(t.as(WS), fixture("palette_color.png"), "p.png")).body.id;
});
afterAll(async () => {
  await t.close();
});

const noLeak = (res: request.Response) => {
  expect(res.status).toBeLessThan(500);
  expect(res.text).not.toMatch(/prisma|stack|node_modules|\.ts:\d+/i);
};

describe("robustness", () => {
  it("NUL and control characters are 400s, not database errors", async () => {
    expectProblem(await t.as(WS).patch(`/v1/assets/${assetId}`).send({ userTitle: "a\u0000b" }), 400);
    expectProblem(
      await t
        .as(WS)
        .patch(`/v1/assets/${assetId}`)
        .send({ userTags: ["a\u0000"] }),
      400,
    );
    expectProblem(
      await t
        .as(WS)
        .patch(`/v1/assets/${assetId}`)
        .send({ userTags: ["line\nbreak"] }),
      400,
    );
    expectProblem(await t.as(WS).post("/v1/asset-collections").send({ name: "x\u0000" }), 400);
    expectProblem(await t.as(WS).get("/v1/assets").query({ search: "a\u0000" }), 400);
    expectProblem(await t.as(WS).get("/v1/assets").query({ tag: "a\u0000" }), 400);
    expectProblem(await t.as(WS).get("/v1/assets/search/full-text").query({ q: "a\u0000" }), 400);
    const res = await upload(t.as(WS), fixture("palette_color.png"), "evil\u0001name.png");
    // busboy refuses the control character in the part header; either way nothing odd is stored.
    expect([201, 400]).toContain(res.status);
    if (res.status === 201) expect(res.body.originalFilename).toBe("evilname.png");
  });

  it("odd paths and encodings", async () => {
    for (const path of [
      "/v1/assets/%E0%A4%A",
      "/v1/assets/%00",
      "/v1/asset-collections/%ZZ",
      "/v1/assets/search/full-text?q=%E0%A4%A",
      "/v1/assets?search=%FF",
    ]) {
      noLeak(await t.as(WS).get(path));
    }
    noLeak(await t.as(WS).delete("/v1/asset-collections/%E0%A4%A"));
    noLeak(
      await t
        .as(WS)
        .patch(`/v1/assets/${assetId}`)
        .set("Content-Type", "application/json; charset=latin-99")
        .send("{}"),
    );
    noLeak(
      await t.as(WS).patch(`/v1/assets/${assetId}`).set("Content-Type", "application/json").send("x".repeat(200_000)),
    );
    noLeak(
      await t
        .as(WS)
        .post("/v1/assets/upload")
        .set("Content-Type", "multipart/form-data; boundary=zzz")
        .send("--zzz\r\nbroken"),
    );
    noLeak(await t.as(WS).post("/v1/assets/upload").set("Content-Type", "multipart/form-data").send("no boundary"));
  });

  it("arbitrary JSON PATCH bodies give 200 or 400", async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), async (body) => {
        const res = await t
          .as(WS)
          .patch(`/v1/assets/${assetId}`)
          .set("Content-Type", "application/json")
          .send(JSON.stringify(body));
        expect([200, 400]).toContain(res.status);
        noLeak(res);
      }),
      { numRuns: 60 },
    );
  });

  it("arbitrary PATCH field values give 200 or 400", async () => {
    const value = fc.oneof(
      fc.string(),
      fc.constant(null),
      fc.array(fc.string(), { maxLength: 60 }),
      fc.integer(),
      fc.uuid(),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.record({ userTitle: value, userTags: value, userCaption: value, collectionId: value }, { requiredKeys: [] }),
        async (body) => {
          const res = await t.as(WS).patch(`/v1/assets/${assetId}`).send(body);
          expect([200, 400]).toContain(res.status);
          noLeak(res);
        },
      ),
      { numRuns: 60 },
    );
  });

  it("arbitrary query strings for listing and full-text search give 200 or 400", async () => {
    const params = fc.dictionary(
      fc.constantFrom("search", "tag", "format", "sort", "limit", "cursor", "createdAfter", "collectionId", "q", "x"),
      fc.string({ unit: "binary", maxLength: 40 }),
    );
    await fc.assert(
      fc.asyncProperty(params, fc.string({ unit: "binary", maxLength: 60 }), async (query, q) => {
        const list = await t.as(WS).get("/v1/assets").query(query);
        expect([200, 400]).toContain(list.status);
        noLeak(list);
        const fts = await t.as(WS).get("/v1/assets/search/full-text").query({ q });
        expect([200, 400]).toContain(fts.status);
        noLeak(fts);
      }),
      { numRuns: 60 },
    );
  });
});
