import { createTestApp, expectProblem, fixture, upload, type TestApp } from "./helpers";

/** Two workspaces on one database: neither can see, change or find the other's resources. */
let t: TestApp;
const A = "ws-alpha";
const B = "ws-beta";
let assetA: string;
let colA: string;

beforeAll(async () => {
  t = await createTestApp();
  colA = (await t.as(A).post("/v1/asset-collections").send({ name: "Alpha only" })).body.id;
  const res = await upload(t.as(A), fixture("coffee.png"), "secret-coffee.png", { collectionId: colA });
  assetA = res.body.id;
  await t
    .as(A)
    .patch(`/v1/assets/${assetA}`)
    .send({ userTitle: "Secret espresso", userTags: ["private"] });
});
afterAll(async () => {
  await t.close();
});

describe("workspace isolation", () => {
  it("GET /v1/assets/:id of another workspace is 404", async () => {
    expectProblem(await t.as(B).get(`/v1/assets/${assetA}`), 404);
    expect((await t.as(A).get(`/v1/assets/${assetA}`)).status).toBe(200);
  });

  it("PATCH of another workspace's asset is 404 and changes nothing", async () => {
    expectProblem(await t.as(B).patch(`/v1/assets/${assetA}`).send({ userTitle: "pwned" }), 404);
    expect((await t.as(A).get(`/v1/assets/${assetA}`)).body.userTitle).toBe("Secret espresso");
  });

  it("assigning another workspace's collection is 400, at upload and by PATCH", async () => {
    expectProblem(await upload(t.as(B), fixture("palette_color.png"), "p.png", { collectionId: colA }), 400);
    const own = await upload(t.as(B), fixture("palette_color.png"), "p.png");
    expectProblem(await t.as(B).patch(`/v1/assets/${own.body.id}`).send({ collectionId: colA }), 400);
    expect((await t.as(A).get("/v1/asset-collections")).body.collections[0].assetCount).toBe(1);
  });

  it("lists and both searches never show another workspace's assets", async () => {
    const list = await t.as(B).get("/v1/assets");
    expect(list.body.assets.map((a: { id: string }) => a.id)).not.toContain(assetA);
    expect(list.body.assets.every((a: { workspaceId: string }) => a.workspaceId === B)).toBe(true);
    expect((await t.as(B).get("/v1/assets").query({ search: "espresso" })).body).toEqual({
      count: 0,
      assets: [],
      nextCursor: null,
    });
    expect((await t.as(B).get("/v1/assets").query({ collectionId: colA })).body.count).toBe(0);
    expect((await t.as(B).get("/v1/assets").query({ tag: "private" })).body.count).toBe(0);
    expect((await t.as(B).get("/v1/assets/search/full-text").query({ q: "espresso" })).body).toEqual({
      count: 0,
      assets: [],
    });
    expect((await t.as(B).get("/v1/assets/search/full-text").query({ q: "expresso" })).body).toEqual({
      count: 0,
      assets: [],
    });
    expect((await t.as(A).get("/v1/assets/search/full-text").query({ q: "espresso" })).body.count).toBe(1);
  });

  it("a cursor from another workspace's listing does not leak its rows", async () => {
    for (let i = 0; i < 3; i++) await upload(t.as(A), fixture("palette_color.png"), `a${i}.png`);
    const pageA = await t.as(A).get("/v1/assets").query({ limit: 1 });
    const res = await t.as(B).get("/v1/assets").query({ limit: 100, cursor: pageA.body.nextCursor });
    expect(res.status).toBe(200);
    expect(res.body.assets.every((a: { workspaceId: string }) => a.workspaceId === B)).toBe(true);
  });

  it("collections: list, duplicate names and delete are per workspace", async () => {
    expect((await t.as(B).get("/v1/asset-collections")).body).toEqual({ count: 0, collections: [] });
    expect((await t.as(B).post("/v1/asset-collections").send({ name: "Alpha only" })).status).toBe(201);
    expectProblem(await t.as(B).delete(`/v1/asset-collections/${colA}`), 404);
    const listA = await t.as(A).get("/v1/asset-collections");
    expect(listA.body.collections.map((c: { id: string }) => c.id)).toEqual([colA]);
  });

  it("duplicate detection only compares within the workspace", async () => {
    const res = await upload(t.as(B), fixture("coffee.png"), "coffee.png", { warnAboutDuplicateImages: "true" });
    expect(res.body.duplicates).toEqual([]);
  });
});
