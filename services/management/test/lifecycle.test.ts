import { randomUUID } from "node:crypto";
import { buffer } from "node:stream/consumers";
import request from "supertest";
import sharp from "sharp";
import { ORIGINAL_WORKSPACE_METADATA, storedOriginalHeader } from "@media-platform/contracts";
import { originalKey } from "@media-platform/storage";
import { sweepTrash } from "../src/jobs/trash-retention";
import { trashKey, versionKey } from "../src/assets/blobs";
import { createTestApp, expectProblem, upload, type TestApp } from "./helpers";

const WS = "ws-life";
/** Refused (entities are never expanded), as at upload. */
const ENTITY_SVG = Buffer.from(
  '<!DOCTYPE svg [<!ENTITY e "x">]><svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>',
);
const OTHER = "ws-life-other";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ webhookUrls: ["http://hooks.test/a"], assetVersionsKept: 2 });
});
afterAll(async () => t?.close());

const png = (w: number, h: number, color: string) =>
  sharp({ create: { width: w, height: h, channels: 3, background: color } })
    .png()
    .toBuffer();

async function uploadOne(ws = WS, bytes?: Buffer, fields: Record<string, string> = {}) {
  const res = await upload(t.as(ws), bytes ?? (await png(40, 30, "#c00")), "red.png", fields);
  expect(res.status).toBe(201);
  return res.body as { id: string; sha256: string };
}
const put = (ws: string, url: string) =>
  request(t.app)
    .put(url)
    .set("Authorization", `Bearer ${t.token(ws)}`);
const blobBytes = async (key: string) => {
  const blob = await t.blobStore.get(key);
  return blob ? buffer(blob.body) : null;
};
const outbox = (type: string, id: string) =>
  t.db.prisma.webhookDelivery.findMany({ where: { eventType: type, payload: { path: ["data", "id"], equals: id } } });

describe("trash, restore, permanent delete", () => {
  it("DELETE moves the asset to the trash: 404 on GET, gone from lists, full-text, duplicates and assetCount", async () => {
    const coll = await t.as(WS).post("/v1/asset-collections").send({ name: "Trash test" });
    const bytes = await png(41, 31, "#0a0");
    const asset = await uploadOne(WS, bytes, { collectionId: coll.body.id });
    await t
      .as(WS)
      .patch(`/v1/assets/${asset.id}`)
      .send({ userTitle: "zanzibar sunset", userTags: ["keep"] });
    const before = await t.as(WS).get(`/v1/assets/${asset.id}`);

    expect((await t.as(OTHER).delete(`/v1/assets/${asset.id}`)).status).toBe(404);
    const del = await t.as(WS).delete(`/v1/assets/${asset.id}`);
    expect(del.status).toBe(204);
    expectProblem(await t.as(WS).get(`/v1/assets/${asset.id}`), 404);
    expectProblem(await t.as(WS).delete(`/v1/assets/${asset.id}`), 404);
    expectProblem(await t.as(WS).patch(`/v1/assets/${asset.id}`).send({ userTitle: "x" }), 404);
    expect((await t.as(WS).get("/v1/assets?limit=100")).body.assets.map((a: { id: string }) => a.id)).not.toContain(
      asset.id,
    );
    expect((await t.as(WS).get("/v1/assets/search/full-text?q=zanzibar")).body.count).toBe(0);
    const dup = await upload(t.as(WS), bytes, "again.png", { warnAboutDuplicateImages: "true" });
    expect(dup.body.duplicates.map((d: { assetId: string }) => d.assetId)).not.toContain(asset.id);
    const colls = await t.as(WS).get("/v1/asset-collections");
    expect(colls.body.collections.find((c: { id: string }) => c.id === coll.body.id).assetCount).toBe(0);
    // The media service's only key is gone: it answers 404 without asking the database.
    expect(await t.blobStore.head(originalKey(asset.id))).toBeNull();
    expect(await t.blobStore.head(trashKey(asset.id))).toMatchObject({ size: bytes.length });
    expect(await outbox("asset.deleted", asset.id)).toHaveLength(1);

    const trashed = await t.as(WS).get("/v1/assets?trashed=true&limit=100");
    const row = trashed.body.assets.find((a: { id: string }) => a.id === asset.id);
    expect(row.deletedAt).toEqual(expect.any(String));
    expect((await t.as(OTHER).get("/v1/assets?trashed=true")).body.count).toBe(0);
    // Same filters in the trash.
    expect((await t.as(WS).get(`/v1/assets?trashed=true&collectionId=${coll.body.id}`)).body.count).toBe(1);
    expect((await t.as(WS).get("/v1/assets?trashed=true&search=zanzibar")).body.count).toBe(1);
    expect((await t.as(WS).get("/v1/assets?trashed=true&tag=nope")).body.count).toBe(0);

    expectProblem(await t.as(OTHER).post(`/v1/assets/${asset.id}/restore`), 404);
    const restored = await t.as(WS).post(`/v1/assets/${asset.id}/restore`);
    expect(restored.status).toBe(200);
    expect(restored.body).toEqual(before.body);
    expect(await blobBytes(originalKey(asset.id))).toEqual(bytes);
    expect(await outbox("asset.restored", asset.id)).toHaveLength(1);
    expectProblem(await t.as(WS).post(`/v1/assets/${asset.id}/restore`), 409);
  });

  it("restore keeps the collection, or null when the collection was deleted meanwhile", async () => {
    const coll = await t.as(WS).post("/v1/asset-collections").send({ name: "Gone later" });
    const asset = await uploadOne(WS, undefined, { collectionId: coll.body.id });
    await t.as(WS).delete(`/v1/assets/${asset.id}`).expect(204);
    await t.as(WS).delete(`/v1/asset-collections/${coll.body.id}`).expect(204);
    const restored = await t.as(WS).post(`/v1/assets/${asset.id}/restore`);
    expect(restored.status).toBe(200);
    expect(restored.body.collectionId).toBeNull();
  });

  it("cursor pagination over the trash", async () => {
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await uploadOne(WS, await png(10 + i, 10, "#123"))).id);
    const batch = await t.as(WS).post("/v1/assets/batch").send({ action: "delete", ids });
    expect(batch.body).toEqual({ matched: 3, changed: 3, notFound: [] });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: request.Response = await t
        .as(WS)
        .get(`/v1/assets?trashed=true&limit=1${cursor ? `&cursor=${cursor}` : ""}`);
      expect(res.status).toBe(200);
      seen.push(...res.body.assets.map((a: { id: string }) => a.id));
      cursor = res.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual(expect.arrayContaining(ids));
    expect(new Set(seen).size).toBe(seen.length);
    await t.as(WS).post("/v1/assets/batch").send({ action: "restore", ids }).expect(200);
  });

  it("DELETE ?permanent=true removes the row, the original, the versions (live or trashed)", async () => {
    const asset = await uploadOne();
    await put(WS, `/v1/assets/${asset.id}/original`)
      .attach("file", await png(8, 8, "#00f"), "blue.png")
      .expect(200);
    expect(await t.blobStore.head(versionKey(asset.id, 1))).not.toBeNull();
    expectProblem(await t.as(OTHER).delete(`/v1/assets/${asset.id}?permanent=true`), 404);
    expectProblem(await t.as(WS).delete(`/v1/assets/${asset.id}?permanent=maybe`), 400);
    await t.as(WS).delete(`/v1/assets/${asset.id}?permanent=true`).expect(204);
    expect(await t.db.prisma.asset.count({ where: { id: asset.id } })).toBe(0);
    expect(await t.db.prisma.assetVersion.count({ where: { assetId: asset.id } })).toBe(0);
    expect(await t.blobStore.head(originalKey(asset.id))).toBeNull();
    expect(await t.blobStore.head(versionKey(asset.id, 1))).toBeNull();
    expect((await outbox("asset.deleted", asset.id))[0]?.payload).toMatchObject({ data: { permanent: true } });

    const trashed = await uploadOne();
    await t.as(WS).delete(`/v1/assets/${trashed.id}`).expect(204);
    await t.as(WS).delete(`/v1/assets/${trashed.id}?permanent=true`).expect(204);
    expect(await t.blobStore.head(trashKey(trashed.id))).toBeNull();
    expect(
      (await t.as(WS).get("/v1/assets?trashed=true&limit=100")).body.assets.map((a: { id: string }) => a.id),
    ).not.toContain(trashed.id);
  });

  it("the retention job removes expired trash with its blobs, and leaves fresh trash and live assets", async () => {
    const old = await uploadOne();
    const fresh = await uploadOne();
    const live = await uploadOne();
    await t.as(WS).delete(`/v1/assets/${old.id}`).expect(204);
    await t.as(WS).delete(`/v1/assets/${fresh.id}`).expect(204);
    await t.db.prisma.$executeRaw`UPDATE assets SET deleted_at = now() - interval '2 days' WHERE id = ${old.id}::uuid`;
    const removed = await sweepTrash(t.deps, 1);
    expect(removed).toBeGreaterThanOrEqual(1);
    expect(await t.db.prisma.asset.count({ where: { id: old.id } })).toBe(0);
    expect(await t.blobStore.head(trashKey(old.id))).toBeNull();
    expect(await t.db.prisma.asset.count({ where: { id: { in: [fresh.id, live.id] } } })).toBe(2);
    expect(await t.blobStore.head(trashKey(fresh.id))).not.toBeNull();
    // Two sweeps at once (two replicas): each expired asset is removed and announced once.
    const a = await uploadOne();
    const b = await uploadOne();
    await t
      .as(WS)
      .post("/v1/assets/batch")
      .send({ action: "delete", ids: [a.id, b.id] })
      .expect(200);
    await t.db.prisma
      .$executeRaw`UPDATE assets SET deleted_at = now() - interval '2 days' WHERE id IN (${a.id}::uuid, ${b.id}::uuid)`;
    const [r1, r2] = await Promise.all([sweepTrash(t.deps, 1), sweepTrash(t.deps, 1)]);
    expect(r1 + r2).toBe(2);
    expect(
      await t.db.prisma.webhookDelivery.count({
        where: { eventType: "asset.deleted", payload: { path: ["data", "permanent"], equals: true } },
      }),
    ).toBeGreaterThanOrEqual(3);
    expect(
      (await outbox("asset.deleted", a.id)).filter(
        (d) => (d.payload as { data: { permanent: boolean } }).data.permanent,
      ),
    ).toHaveLength(1);
  });
});

describe("replace and versions", () => {
  it("PUT /original replaces the bytes, keeps metadata, tags and collection, and keeps the previous original as a version", async () => {
    const coll = await t.as(WS).post("/v1/asset-collections").send({ name: "Replace" });
    const first = await png(40, 30, "#f00");
    const asset = await uploadOne(WS, first, { collectionId: coll.body.id });
    await t
      .as(WS)
      .patch(`/v1/assets/${asset.id}`)
      .send({ userTitle: "Logo", userTags: ["brand"] });
    const second = await sharp(await png(64, 48, "#0f0"))
      .jpeg()
      .toBuffer();

    expectProblem(await put(OTHER, `/v1/assets/${asset.id}/original`).attach("file", second, "x.jpg"), 404);
    expectProblem(await put(WS, `/v1/assets/${asset.id}/original`).attach("file", ENTITY_SVG, "x.svg"), 415);
    expectProblem(await put(WS, `/v1/assets/${asset.id}/original`).field("a", "b"), 400);
    const res = await put(WS, `/v1/assets/${asset.id}/original`).attach("file", second, "green.jpg");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: asset.id,
      version: 2,
      format: "jpeg",
      mimeType: "image/jpeg",
      width: 64,
      height: 48,
      bytes: second.length,
      userTitle: "Logo",
      userTags: ["brand"],
      collectionId: coll.body.id,
      originalFilename: "green.jpg",
    });
    expect(res.body.sha256).not.toBe(asset.sha256);
    expect(await blobBytes(originalKey(asset.id))).toEqual(second);
    expect(await blobBytes(versionKey(asset.id, 1))).toEqual(first);
    expect(await outbox("asset.replaced", asset.id)).toHaveLength(1);

    const versions = await t.as(WS).get(`/v1/assets/${asset.id}/versions`);
    expect(versions.body).toMatchObject({
      currentVersion: 2,
      count: 1,
      versions: [{ version: 1, format: "png", width: 40, height: 30, bytes: first.length, sha256: asset.sha256 }],
    });
    expectProblem(await t.as(OTHER).get(`/v1/assets/${asset.id}/versions`), 404);

    // Restoring version 1 makes it current again as version 3; version 2 is kept.
    expectProblem(await t.as(WS).post(`/v1/assets/${asset.id}/versions/9/restore`), 404);
    expectProblem(await t.as(OTHER).post(`/v1/assets/${asset.id}/versions/1/restore`), 404);
    const back = await t.as(WS).post(`/v1/assets/${asset.id}/versions/1/restore`);
    expect(back.status).toBe(200);
    expect(back.body).toMatchObject({ version: 3, format: "png", width: 40, sha256: asset.sha256, userTitle: "Logo" });
    expect(await blobBytes(originalKey(asset.id))).toEqual(first);
    const after = await t.as(WS).get(`/v1/assets/${asset.id}/versions`);
    expect(after.body.versions.map((v: { version: number }) => v.version)).toEqual([2, 1]);

    // ASSET_VERSIONS_KEPT = 2 here: a third replace drops version 1 (row and blob).
    await put(WS, `/v1/assets/${asset.id}/original`)
      .attach("file", await png(5, 5, "#fff"), "w.png")
      .expect(200);
    const pruned = await t.as(WS).get(`/v1/assets/${asset.id}/versions`);
    expect(pruned.body.versions.map((v: { version: number }) => v.version)).toEqual([3, 2]);
    expect(await t.blobStore.head(versionKey(asset.id, 1))).toBeNull();
  });

  it("a trashed asset cannot be replaced", async () => {
    const asset = await uploadOne();
    await t.as(WS).delete(`/v1/assets/${asset.id}`).expect(204);
    expectProblem(
      await put(WS, `/v1/assets/${asset.id}/original`).attach("file", await png(3, 3, "#000"), "b.png"),
      404,
    );
  });
});

describe("batch", () => {
  it("applies one action to 1000 ids in one request; other workspaces' ids are notFound", async () => {
    const mine = await uploadOne();
    const foreign = await uploadOne(OTHER);
    const coll = await t.as(WS).post("/v1/asset-collections").send({ name: "Batch" });
    const unknown = Array.from({ length: 998 }, () => randomUUID());
    const ids = [mine.id, foreign.id, ...unknown];
    expect(ids).toHaveLength(1000);

    const add = await t
      .as(WS)
      .post("/v1/assets/batch")
      .send({ action: "addTags", ids, value: ["a", "b"] });
    expect(add.status).toBe(200);
    expect(add.body.matched).toBe(1);
    expect(add.body.changed).toBe(1);
    expect(add.body.notFound).toHaveLength(999);
    expect(add.body.notFound).toContain(foreign.id);
    expect((await t.as(OTHER).get(`/v1/assets/${foreign.id}`)).body.userTags).toEqual([]);
    expect((await t.as(WS).get(`/v1/assets/${mine.id}`)).body.userTags).toEqual(["a", "b"]);
    // Idempotent: nothing changes the second time.
    expect(
      (
        await t
          .as(WS)
          .post("/v1/assets/batch")
          .send({ action: "addTags", ids: [mine.id], value: ["b"] })
      ).body,
    ).toEqual({
      matched: 1,
      changed: 0,
      notFound: [],
    });
    const rm = await t
      .as(WS)
      .post("/v1/assets/batch")
      .send({ action: "removeTags", ids: [mine.id], value: ["a"] });
    expect(rm.body).toEqual({ matched: 1, changed: 1, notFound: [] });
    expect((await t.as(WS).get(`/v1/assets/${mine.id}`)).body.userTags).toEqual(["b"]);

    const set = await t
      .as(WS)
      .post("/v1/assets/batch")
      .send({ action: "setCollection", ids: [mine.id], value: coll.body.id });
    expect(set.body).toEqual({ matched: 1, changed: 1, notFound: [] });
    expect((await t.as(WS).get(`/v1/assets/${mine.id}`)).body.collectionId).toBe(coll.body.id);
    const foreignColl = await t.as(OTHER).post("/v1/asset-collections").send({ name: "Theirs" });
    expectProblem(
      await t
        .as(WS)
        .post("/v1/assets/batch")
        .send({ action: "setCollection", ids: [mine.id], value: foreignColl.body.id }),
      400,
    );

    const del = await t.as(WS).post("/v1/assets/batch").send({ action: "delete", ids });
    expect(del.body).toMatchObject({ matched: 1, changed: 1 });
    expect((await t.as(OTHER).get(`/v1/assets/${foreign.id}`)).status).toBe(200);
    const res = await t
      .as(WS)
      .post("/v1/assets/batch")
      .send({ action: "restore", ids: [mine.id] });
    expect(res.body).toEqual({ matched: 1, changed: 1, notFound: [] });
  });

  it("refuses bad batches with a 400 naming the field, and changes nothing", async () => {
    const asset = await uploadOne();
    const tooMany = Array.from({ length: 1001 }, () => randomUUID());
    const r1 = await t.as(WS).post("/v1/assets/batch").send({ action: "delete", ids: tooMany });
    expectProblem(r1, 400);
    expect(JSON.stringify(r1.body)).toContain("body.ids");
    expectProblem(
      await t
        .as(WS)
        .post("/v1/assets/batch")
        .send({ action: "explode", ids: [asset.id] }),
      400,
    );
    expectProblem(
      await t
        .as(WS)
        .post("/v1/assets/batch")
        .send({ action: "addTags", ids: [asset.id] }),
      400,
    );
    expectProblem(await t.as(WS).post("/v1/assets/batch").send({ action: "delete", ids: [] }), 400);
    const fifty = Array.from({ length: 50 }, (_, i) => `t${i}`);
    await t
      .as(WS)
      .patch(`/v1/assets/${asset.id}`)
      .send({ userTags: fifty.slice(0, 49) });
    expectProblem(
      await t
        .as(WS)
        .post("/v1/assets/batch")
        .send({ action: "addTags", ids: [asset.id], value: ["x", "y"] }),
      400,
    );
    expect((await t.as(WS).get(`/v1/assets/${asset.id}`)).body.userTags).toHaveLength(49);
  });
});

describe("collections", () => {
  it("DELETE ?withAssets=true trashes the collection's assets, then deletes it", async () => {
    const coll = await t.as(WS).post("/v1/asset-collections").send({ name: "With assets" });
    const a = await uploadOne(WS, undefined, { collectionId: coll.body.id });
    const outside = await uploadOne();
    expectProblem(await t.as(OTHER).delete(`/v1/asset-collections/${coll.body.id}?withAssets=true`), 404);
    await t.as(WS).delete(`/v1/asset-collections/${coll.body.id}?withAssets=true`).expect(204);
    expectProblem(await t.as(WS).get(`/v1/assets/${a.id}`), 404);
    expect((await t.as(WS).get(`/v1/assets/${outside.id}`)).status).toBe(200);
    const trashed = await t.as(WS).get("/v1/assets?trashed=true&limit=100");
    expect(trashed.body.assets.map((x: { id: string }) => x.id)).toContain(a.id);
    expect(await t.db.prisma.collection.count({ where: { id: coll.body.id } })).toBe(0);
    expect(await t.db.prisma.webhookDelivery.count({ where: { eventType: "collection.deleted" } })).toBeGreaterThan(0);
    expect(await t.db.prisma.webhookDelivery.count({ where: { eventType: "collection.created" } })).toBeGreaterThan(0);
    expect(await t.db.prisma.webhookDelivery.count({ where: { eventType: "asset.created" } })).toBeGreaterThan(0);
    expect(await t.db.prisma.webhookDelivery.count({ where: { eventType: "asset.updated" } })).toBeGreaterThan(0);
  });
});

describe("header facts stored with the original (blob metadata the media service plans from)", () => {
  const headerOf = async (key: string) => storedOriginalHeader((await t.blobStore.head(key))?.metadata);

  it("upload stores them; trash and restore carry them; replace stores the new ones; a restored version gets its own back", async () => {
    // EXIF orientation 6: stored 40x30, displayed 30x40; with alpha.
    const rotated = await sharp({ create: { width: 40, height: 30, channels: 4, background: "#08f8" } })
      .withMetadata({ orientation: 6 })
      .png()
      .toBuffer();
    const asset = await uploadOne(WS, rotated);
    const first = {
      width: 40,
      height: 30,
      orientedWidth: 30,
      orientedHeight: 40,
      pages: 1,
      hasAlpha: true,
      channels: 4,
      space: "srgb",
      depth: "uchar",
    };
    expect(await headerOf(originalKey(asset.id))).toEqual(first);

    expect((await t.as(WS).delete(`/v1/assets/${asset.id}`)).status).toBe(204);
    expect(await headerOf(trashKey(asset.id))).toEqual(first);
    expect((await t.as(WS).post(`/v1/assets/${asset.id}/restore`)).status).toBe(200);
    expect(await headerOf(originalKey(asset.id))).toEqual(first);

    const grey = await sharp({ create: { width: 64, height: 16, channels: 3, background: "#777" } })
      .toColourspace("b-w")
      .jpeg()
      .toBuffer();
    expect((await put(WS, `/v1/assets/${asset.id}/original`).attach("file", grey, "grey.jpg")).status).toBe(200);
    const second = { ...first, width: 64, height: 16, orientedWidth: 64, orientedHeight: 16, hasAlpha: false };
    expect(await headerOf(originalKey(asset.id))).toEqual({ ...second, channels: 1, space: "b-w" });
    expect(await headerOf(versionKey(asset.id, 1))).toEqual(first);

    expect((await t.as(WS).post(`/v1/assets/${asset.id}/versions/1/restore`)).status).toBe(200);
    expect(await headerOf(originalKey(asset.id))).toEqual(first);
  });

  it("every original names its workspace (media draws overlays of the same workspace only)", async () => {
    const workspaceOf = async (key: string) => (await t.blobStore.head(key))?.metadata?.[ORIGINAL_WORKSPACE_METADATA];
    const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: "#123" } })
      .png()
      .toBuffer();
    const asset = await uploadOne(WS, png);
    expect(await workspaceOf(originalKey(asset.id))).toBe(WS);
    expect((await put(WS, `/v1/assets/${asset.id}/original`).attach("file", png, "again.png")).status).toBe(200);
    expect(await workspaceOf(originalKey(asset.id))).toBe(WS);
    expect(await workspaceOf(versionKey(asset.id, 1))).toBe(WS);
    expect((await t.as(WS).post(`/v1/assets/${asset.id}/versions/1/restore`)).status).toBe(200);
    expect(await workspaceOf(originalKey(asset.id))).toBe(WS);
  });
});
