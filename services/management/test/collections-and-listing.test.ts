import { encodeCursor } from "../src/assets/cursor";
import { MediaLinks } from "../src/assets/media-links";
import { serializeListedAsset } from "../src/assets/serializer";
import { createTestApp, expectProblem, fixture, upload, type TestApp } from "./helpers";

let t: TestApp;
const WS = "ws-col";

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

describe("collections", () => {
  it("POST creates (201 + Location), name trimmed; GET lists with live assetCount", async () => {
    const res = await t.as(WS).post("/v1/asset-collections").send({ name: "  Holidays  " });
    expect(res.status).toBe(201);
    expect(res.headers.location).toBe(`/v1/asset-collections/${res.body.id}`);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: "Holidays",
      assetCount: 0,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const a = await upload(t.as(WS), fixture("palette_color.png"), "a.png", { collectionId: res.body.id });
    const b = await upload(t.as(WS), fixture("palette_color.png"), "b.png");
    await t.as(WS).patch(`/v1/assets/${b.body.id}`).send({ collectionId: res.body.id });
    const list = await t.as(WS).get("/v1/asset-collections");
    expect(list.status).toBe(200);
    expect(list.body.count).toBe(1);
    expect(list.body.collections).toEqual([{ ...res.body, assetCount: 2 }]);
    await t.as(WS).patch(`/v1/assets/${a.body.id}`).send({ collectionId: null });
    expect((await t.as(WS).get("/v1/asset-collections")).body.collections[0].assetCount).toBe(1);
  });

  it("409 for a duplicate name in the same workspace (after trimming); other workspaces may reuse it", async () => {
    await t.as(WS).post("/v1/asset-collections").send({ name: "Dup" });
    const again = await t.as(WS).post("/v1/asset-collections").send({ name: " Dup " });
    expectProblem(again, 409);
    expect(again.body.errors).toEqual([{ path: "body.name", message: expect.any(String) }]);
    expect((await t.as(WS).post("/v1/asset-collections").send({ name: "dup" })).status).toBe(201);
    expect((await t.as("ws-col-2").post("/v1/asset-collections").send({ name: "Dup" })).status).toBe(201);
  });

  it("400 for missing, empty, too long, non-string names, unknown fields and malformed JSON", async () => {
    for (const body of [
      {},
      { name: "" },
      { name: "   " },
      { name: "x".repeat(201) },
      { name: 5 },
      { name: "ok", extra: 1 },
    ]) {
      const res = await t.as(WS).post("/v1/asset-collections").send(body);
      expectProblem(res, 400);
      expect(res.body.errors.length).toBeGreaterThan(0);
    }
    expectProblem(
      await t.as(WS).post("/v1/asset-collections").set("Content-Type", "application/json").send("{nope"),
      400,
    );
    expectProblem(await t.as(WS).post("/v1/asset-collections"), 400);
    expect(
      (
        await t
          .as(WS)
          .post("/v1/asset-collections")
          .send({ name: "x".repeat(200) })
      ).status,
    ).toBe(201);
  });

  it("DELETE: 204, assets stay with collectionId null; then 404", async () => {
    const col = await t.as(WS).post("/v1/asset-collections").send({ name: "to delete" });
    const a = await upload(t.as(WS), fixture("palette_color.png"), "a.png", { collectionId: col.body.id });
    const del = await t.as(WS).delete(`/v1/asset-collections/${col.body.id}`);
    expect(del.status).toBe(204);
    expect(del.text).toBe("");
    const asset = await t.as(WS).get(`/v1/assets/${a.body.id}`);
    expect(asset.status).toBe(200);
    expect(asset.body.collectionId).toBeNull();
    expect(Date.parse(asset.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(a.body.updatedAt));
    expect(
      (await t.as(WS).get("/v1/asset-collections")).body.collections.map((c: { name: string }) => c.name),
    ).not.toContain("to delete");
    expectProblem(await t.as(WS).delete(`/v1/asset-collections/${col.body.id}`), 404);
    expectProblem(await t.as(WS).delete(`/v1/asset-collections/not-a-uuid`), 404);
    // The name is free again.
    expect((await t.as(WS).post("/v1/asset-collections").send({ name: "to delete" })).status).toBe(201);
  });
});

describe("GET /v1/assets listing", () => {
  const LWS = "ws-list";
  const created: Array<{ id: string; bytes: number; userTitle: string | null; format: string }> = [];
  let colId: string;

  beforeAll(async () => {
    colId = (await t.as(LWS).post("/v1/asset-collections").send({ name: "list" })).body.id;
    const files = [
      "palette_color.png",
      "no_time_for_that_tiny.gif",
      "rocket.jpg",
      "palette_color.png",
      "chessboard_GRAY_U16.tif",
    ];
    for (let i = 0; i < 12; i++) {
      const file = files[i % files.length]!;
      const res = await upload(t.as(LWS), fixture(file), `file-${i}`, i % 3 === 0 ? { collectionId: colId } : {});
      expect(res.status).toBe(201);
      const title = i % 4 === 0 ? null : `Title ${String.fromCharCode(97 + ((i * 7) % 12))}`;
      const patched = await t
        .as(LWS)
        .patch(`/v1/assets/${res.body.id}`)
        .send({ userTitle: title, userTags: i % 2 === 0 ? ["even"] : ["odd"] });
      created.push(patched.body);
    }
  });

  async function all(query: Record<string, string | number>) {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    let count = -1;
    do {
      const res = await t
        .as(LWS)
        .get("/v1/assets")
        .query({ ...query, ...(cursor ? { cursor } : {}) });
      expect(res.status).toBe(200);
      if (count >= 0) expect(res.body.count).toBe(count);
      count = res.body.count;
      seen.push(...res.body.assets.map((a: { id: string }) => a.id));
      cursor = res.body.nextCursor;
      pages++;
    } while (cursor && pages < 50);
    return { seen, pages, count };
  }

  it("default: 25 newest first; count is the total", async () => {
    const res = await t.as(LWS).get("/v1/assets");
    expect(res.status).toBe(200);
    expect(res.body.count).toBe(12);
    expect(res.body.nextCursor).toBeNull();
    expect(res.body.assets.map((a: { id: string }) => a.id)).toEqual(created.map((c) => c.id).reverse());
    // Never cached (no-store), so no ETag is computed for it.
    expect([res.headers["cache-control"], res.headers.etag]).toEqual(["no-store", undefined]);
  });

  it.each(["-createdAt", "createdAt", "updatedAt", "-updatedAt", "userTitle", "-userTitle", "bytes", "-bytes"])(
    "pages through every asset exactly once with sort=%s and limit=5",
    async (sort) => {
      const { seen, pages, count } = await all({ sort, limit: 5 });
      expect(count).toBe(12);
      expect(pages).toBe(3);
      expect(new Set(seen).size).toBe(12);
      const byId = new Map(created.map((c) => [c.id, c]));
      const field = sort.replace("-", "") as "userTitle" | "bytes";
      if (field === "userTitle") {
        const titles = seen.map((id) => byId.get(id)!.userTitle);
        const nonNull = titles.filter((x) => x !== null) as string[];
        expect(titles.slice(nonNull.length).every((x) => x === null)).toBe(true); // nulls last
        const sorted = [...nonNull].sort();
        expect(nonNull).toEqual(sort.startsWith("-") ? sorted.reverse() : sorted);
      }
      if (field === "bytes") {
        const bytes = seen.map((id) => byId.get(id)!.bytes);
        const sorted = [...bytes].sort((a, b) => a - b);
        expect(bytes).toEqual(sort.startsWith("-") ? sorted.reverse() : sorted);
      }
    },
  );

  it("filters: collectionId, tag, format, createdAfter/createdBefore, combined with search", async () => {
    const byCol = await t.as(LWS).get("/v1/assets").query({ collectionId: colId });
    expect(byCol.body.count).toBe(4);
    expect(byCol.body.assets.every((a: { collectionId: string }) => a.collectionId === colId)).toBe(true);
    const even = await t.as(LWS).get("/v1/assets").query({ tag: "even" });
    expect(even.body.count).toBe(6);
    const gif = await t.as(LWS).get("/v1/assets").query({ format: "gif" });
    expect(gif.body.assets.every((a: { format: string }) => a.format === "gif")).toBe(true);
    expect(gif.body.count).toBe(created.filter((c) => c.format === "gif").length);
    const pivot = (await t.as(LWS).get(`/v1/assets/${created[6]!.id}`)).body.createdAt as string;
    const after = await t.as(LWS).get("/v1/assets").query({ createdAfter: pivot });
    expect(after.body.count).toBe(6);
    const before = await t.as(LWS).get("/v1/assets").query({ createdBefore: pivot });
    expect(before.body.count).toBe(6);
    const combo = await t.as(LWS).get("/v1/assets").query({ tag: "even", format: "png", search: "title" });
    for (const a of combo.body.assets) {
      expect(a.userTags).toContain("even");
      expect(a.format).toBe("png");
      expect(a.userTitle).toMatch(/title/i);
    }
    const filteredPages = await all({ tag: "odd", limit: 2 });
    expect(filteredPages.count).toBe(6);
    expect(filteredPages.pages).toBe(3);
  });

  it("400 for bad query values and foreign or forged cursors", async () => {
    for (const q of [
      { limit: 0 },
      { limit: 101 },
      { limit: "x" },
      { sort: "name" },
      { format: "bmp" },
      { createdAfter: "yesterday" },
      { collectionId: "x" },
      { unknown: 1 },
      { cursor: "garbage" },
    ]) {
      const res = await t.as(LWS).get("/v1/assets").query(q);
      expectProblem(res, 400);
      expect(res.body.errors[0].path).toMatch(/^query\./);
    }
    const page = await t.as(LWS).get("/v1/assets").query({ limit: 5, sort: "bytes" });
    expectProblem(
      await t.as(LWS).get("/v1/assets").query({ limit: 5, sort: "-createdAt", cursor: page.body.nextCursor }),
      400,
    );
    const forged = Buffer.from(JSON.stringify({ s: "bytes", v: "1; drop table assets", id: created[0]!.id })).toString(
      "base64url",
    );
    expectProblem(await t.as(LWS).get("/v1/assets").query({ sort: "bytes", cursor: forged }), 400);
    expectProblem(await t.as(LWS).get("/v1/assets?limit=1&limit=2"), 400);
  });

  it.each([
    { sort: "-createdAt" },
    { sort: "createdAt" },
    { sort: "-updatedAt" },
    { sort: "userTitle" },
    { sort: "-userTitle" },
    { sort: "bytes" },
    { sort: "-bytes" },
    { sort: "-bytes", tag: "even" },
    { sort: "userTitle", format: "png", search: "file" },
  ] as const)(
    "every page equals findMany's rows in its order (same JSON, ties broken by id, titles nulls last): %o",
    async (query) => {
      const field = query.sort.replace("-", "") as "createdAt" | "updatedAt" | "userTitle" | "bytes";
      const dir = query.sort.startsWith("-") ? "desc" : "asc";
      const reference = await t.db.prisma.asset.findMany({
        where: {
          workspaceId: LWS,
          deletedAt: null,
          ...("tag" in query ? { userTags: { has: query.tag } } : {}),
          ...("format" in query ? { format: query.format, searchText: { contains: query.search } } : {}),
        },
        orderBy:
          field === "userTitle"
            ? [{ userTitle: { sort: dir, nulls: "last" } }, { id: dir }]
            : [{ [field]: dir }, { id: dir }],
      });
      expect(reference.length).toBeGreaterThan(2);
      const expected = reference.map((a) =>
        JSON.parse(JSON.stringify(serializeListedAsset(a, new MediaLinks("http://media.test", undefined)))),
      );
      const served: unknown[] = [];
      let cursor: string | null = null;
      do {
        const res = await t
          .as(LWS)
          .get("/v1/assets")
          .query({ ...query, limit: 2, ...(cursor ? { cursor } : {}) });
        expect(res.status).toBe(200);
        expect(res.body.count).toBe(reference.length);
        expect(res.body).not.toHaveProperty("countIsEstimate");
        served.push(...res.body.assets);
        cursor = res.body.nextCursor;
      } while (cursor);
      expect(served).toEqual(expected);
      // A cursor on the last row: an empty page, still with the count of every match.
      const last = reference[reference.length - 1]!;
      const v =
        field === "bytes" ? last.bytes.toString() : field === "userTitle" ? last.userTitle : last[field].toISOString();
      const end = await t
        .as(LWS)
        .get("/v1/assets")
        .query({ ...query, cursor: encodeCursor({ s: query.sort, v, id: last.id }) });
      expect([end.status, end.body.assets, end.body.count, end.body.nextCursor]).toEqual([
        200,
        [],
        reference.length,
        null,
      ]);
    },
  );

  it("lists the trash (?trashed=true) apart from the live assets, with exact counts", async () => {
    const [a, b] = created;
    for (const c of [a!, b!]) await t.as(LWS).delete(`/v1/assets/${c.id}`).expect(204);
    const trash = await t.as(LWS).get("/v1/assets").query({ trashed: true, sort: "createdAt", limit: 1 });
    expect([trash.body.count, trash.body.assets.map((x: { id: string }) => x.id)]).toEqual([2, [a!.id]]);
    const rest = await t
      .as(LWS)
      .get("/v1/assets")
      .query({ trashed: true, sort: "createdAt", cursor: trash.body.nextCursor });
    expect([rest.body.count, rest.body.assets.map((x: { id: string }) => x.id), rest.body.nextCursor]).toEqual([
      2,
      [b!.id],
      null,
    ]);
    const live = await t.as(LWS).get("/v1/assets").query({ limit: 100 });
    expect(live.body.count).toBe(10);
    expect(live.body.assets.map((x: { id: string }) => x.id)).toEqual(
      created
        .slice(2)
        .map((c) => c.id)
        .reverse(),
    );
  });
});
