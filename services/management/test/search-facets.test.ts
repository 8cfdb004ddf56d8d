import { FACET_EXACT_LIMIT } from "@media-platform/contracts";
import { createTestApp, type TestApp } from "./helpers";

let t: TestApp;
const WS = "ws-facets";
const OTHER = "ws-facets-other";
const MANY = "ws-facets-many";
/**
 * The tests that write 12,000 and 33,000 rows (every index kept up): seconds on an idle machine,
 * minutes on a loaded one. A guard against a hang sized to the data, not a measure of speed.
 */
const BULK_ROWS_TIMEOUT_MS = 600_000;

/**
 * `n` assets: tags cycle through red/green/blue (every third asset also "sky"), formats through
 * jpeg/png, titles "mountain lake" or "city night"; the first `inCollection` of them in a collection.
 */
async function insertAssets(workspace: string, n: number, collectionId: string | null = null, inCollection = 0) {
  await t.db.prisma.$executeRawUnsafe(
    `INSERT INTO assets (id, workspace_id, collection_id, user_title, user_tags, original_filename, mime_type, format,
                         width, height, bytes, sha256, phash, created_at, updated_at)
     SELECT gen_random_uuid(), $1, CASE WHEN g <= $4 THEN $3::uuid END,
            CASE WHEN g % 2 = 0 THEN 'mountain lake' ELSE 'city night' END,
            ARRAY[(ARRAY['red','green','blue'])[1 + g % 3]] || CASE WHEN g % 3 = 0 THEN ARRAY['sky'] ELSE ARRAY[]::text[] END,
            'IMG_' || g || '.jpg', CASE WHEN g % 4 = 0 THEN 'image/png' ELSE 'image/jpeg' END,
            CASE WHEN g % 4 = 0 THEN 'png' ELSE 'jpeg' END, 10, 10, 100, repeat('0', 64), g,
            timestamptz '2026-01-01' + make_interval(secs => g), timestamptz '2026-01-01' + make_interval(secs => g)
       FROM generate_series(1, $2) AS g`,
    workspace,
    n,
    collectionId,
    inCollection,
  );
}

let collectionId: string;

beforeAll(async () => {
  t = await createTestApp();
  const col = await t.as(WS).post("/v1/asset-collections").send({ name: "Trip" });
  expect(col.status).toBe(201);
  collectionId = col.body.id as string;
  await insertAssets(WS, 120, collectionId, 30);
  // Another workspace with the same words and tags, and a tag of its own: never counted here.
  await insertAssets(OTHER, 500);
  await t.db.prisma.$executeRawUnsafe("UPDATE assets SET user_tags = ARRAY['secret'] WHERE workspace_id = $1", OTHER);
});
afterAll(async () => {
  await t.close();
});

describe("facets", () => {
  it("counts the whole list by tags, collectionId and format, beside one page", async () => {
    const res = await t.as(WS).get("/v1/assets?limit=2&facets=tags,collectionId,format");
    expect(res.status).toBe(200);
    expect(res.body.assets).toHaveLength(2);
    expect(res.body.count).toBe(120);
    expect(res.body.facets).toEqual({
      // 40 each of red/green/blue, "sky" on every third asset; equal counts by value.
      tags: [
        { value: "blue", count: 40 },
        { value: "green", count: 40 },
        { value: "red", count: 40 },
        { value: "sky", count: 40 },
      ],
      collectionId: [{ value: collectionId, count: 30 }],
      format: [
        { value: "jpeg", count: 90 },
        { value: "png", count: 30 },
      ],
    });
    expect(res.body).not.toHaveProperty("facetsAreEstimates");
  });

  it("counts only the filtered result, whatever page the cursor points at", async () => {
    const first = await t.as(WS).get("/v1/assets?limit=5&search=mountain&facets=format&tag=sky");
    expect(first.status).toBe(200);
    // mountain: even g; sky: g % 3 = 0 -> g % 6 = 0: 20 assets, png when g % 4 = 0 too (g % 12 = 0): 10.
    expect(first.body.count).toBe(20);
    expect(first.body.facets).toEqual({
      format: [
        { value: "jpeg", count: 10 },
        { value: "png", count: 10 },
      ],
    });
    const next = await t
      .as(WS)
      .get(`/v1/assets?limit=5&search=mountain&facets=format&tag=sky&cursor=${first.body.nextCursor}`);
    expect(next.status).toBe(200);
    expect(next.body.facets).toEqual(first.body.facets);
  });

  it("counts every match of a full-text search, not only the page", async () => {
    const res = await t.as(WS).get("/v1/assets/search/full-text?q=mountain%20lake&limit=3&facets=tags,format");
    expect(res.status).toBe(200);
    expect(res.body.assets).toHaveLength(3);
    // 60 assets with even g: red/green/blue 20 each, sky on g % 6 = 0 (20); png on g % 4 = 0 (30).
    expect(res.body.facets).toEqual({
      tags: [
        { value: "blue", count: 20 },
        { value: "green", count: 20 },
        { value: "red", count: 20 },
        { value: "sky", count: 20 },
      ],
      format: [
        { value: "jpeg", count: 30 },
        { value: "png", count: 30 },
      ],
    });
    const none = await t.as(WS).get("/v1/assets/search/full-text?q=zeppelin&facets=tags");
    expect(none.status).toBe(200);
    expect(none.body).toEqual({ count: 0, assets: [], facets: { tags: [] } });
  });

  it("leaves the trash out, and counts the trash on ?trashed=true", async () => {
    const ws = "ws-facets-trash";
    await insertAssets(ws, 12);
    const [one] = await t.db.prisma.$queryRawUnsafe<Array<{ id: string }>>(
      "SELECT id::text AS id FROM assets WHERE workspace_id = $1 AND format = 'png' AND 'sky' = ANY(user_tags) LIMIT 1",
      ws,
    );
    expect((await t.as(ws).delete(`/v1/assets/${one!.id}`)).status).toBe(204);
    const live = await t.as(ws).get("/v1/assets?facets=format");
    expect(live.body.facets.format).toEqual([
      { value: "jpeg", count: 9 },
      { value: "png", count: 2 },
    ]);
    const fts = await t.as(ws).get("/v1/assets/search/full-text?q=mountain&facets=format");
    // mountain: even g (6), png on g = 4, 8, 12 minus the trashed one.
    expect(fts.body.facets.format).toEqual([
      { value: "jpeg", count: 3 },
      { value: "png", count: 2 },
    ]);
    const trash = await t.as(ws).get("/v1/assets?trashed=true&facets=format,tags");
    expect(trash.body.facets).toEqual({
      format: [{ value: "png", count: 1 }],
      // The one png asset with "sky" among the 12 is IMG_12: tags red and sky.
      tags: [
        { value: "red", count: 1 },
        { value: "sky", count: 1 },
      ],
    });
  });

  it("answers 400 naming an unknown facet", async () => {
    for (const path of ["/v1/assets?facets=tags,color", "/v1/assets/search/full-text?q=lake&facets=color"]) {
      const res = await t.as(WS).get(path);
      expect(res.status).toBe(400);
      expect(res.headers["content-type"]).toMatch(/application\/problem\+json/);
      expect(JSON.stringify(res.body)).toContain('unknown facet \\"color\\"');
    }
  });

  it(
    `estimates above ${FACET_EXACT_LIMIT} matches, flagged facetsAreEstimates`,
    async () => {
      await insertAssets(MANY, FACET_EXACT_LIMIT + 2000);
      await t.db.prisma.$executeRawUnsafe("ANALYZE assets");
      const res = await t.as(MANY).get("/v1/assets?limit=1&facets=format,tags");
      expect(res.status).toBe(200);
      expect(res.body.countIsEstimate).toBe(true);
      expect(res.body.facetsAreEstimates).toBe(true);
      const format = res.body.facets.format as Array<{ value: string; count: number }>;
      expect(format.map((v) => v.value)).toEqual(["jpeg", "png"]);
      // Counted over a sample of the 12,000 and scaled by the sampled share: near 12,000, near 3:1.
      const total = format[0]!.count + format[1]!.count;
      expect(Math.abs(total - 12_000)).toBeLessThanOrEqual(1_200);
      expect(format[0]!.count / format[1]!.count).toBeGreaterThan(2.5);
      expect(format[0]!.count / format[1]!.count).toBeLessThan(3.5);
      const exact = await t.as(MANY).get("/v1/assets?limit=1&facets=format&createdBefore=2026-01-01T01:00:00Z");
      // The first hour: 3,599 assets, exact.
      expect(exact.body).not.toHaveProperty("facetsAreEstimates");
      expect(exact.body.facets.format).toEqual([
        { value: "jpeg", count: 2700 },
        { value: "png", count: 899 },
      ]);
    },
    BULK_ROWS_TIMEOUT_MS,
  );

  it(
    "samples a broad result fairly across the table, never another workspace's assets nor the trash",
    async () => {
      const broad = "ws-facets-broad";
      // 30,000 assets titled "mountain lake": the first 15,000 inserted are jpeg, the rest png (the
      // first matches the database finds are all jpeg); every tenth is in the trash, tagged "binned".
      await t.db.prisma.$executeRawUnsafe(
        `INSERT INTO assets (id, workspace_id, user_title, user_tags, original_filename, mime_type, format,
                           width, height, bytes, sha256, phash, created_at, updated_at, deleted_at)
       SELECT gen_random_uuid(), $1, 'mountain lake', CASE WHEN g % 10 = 0 THEN ARRAY['binned'] ELSE ARRAY['kept'] END,
              'IMG_' || g || '.jpg', 'image/jpeg', CASE WHEN g <= 15000 THEN 'jpeg' ELSE 'png' END, 10, 10, 100,
              repeat('0', 64), g, timestamptz '2026-01-01' + make_interval(secs => g),
              timestamptz '2026-01-01' + make_interval(secs => g),
              CASE WHEN g % 10 = 0 THEN timestamptz '2026-02-01' END
         FROM generate_series(1, 30000) AS g`,
        broad,
      );
      // Another workspace's assets, interleaved on disk with the same title: a format and a tag of their own.
      await t.db.prisma.$executeRawUnsafe(
        `INSERT INTO assets (id, workspace_id, user_title, user_tags, original_filename, mime_type, format,
                           width, height, bytes, sha256, phash, created_at, updated_at)
       SELECT gen_random_uuid(), $1, 'mountain lake', ARRAY['secret'], 'x.gif', 'image/gif', 'gif', 10, 10, 100,
              repeat('0', 64), g, now(), now()
         FROM generate_series(1, 3000) AS g`,
        `${broad}-other`,
      );
      await t.db.prisma.$executeRawUnsafe("ANALYZE assets");
      for (const path of [
        "/v1/assets?limit=1&facets=format,tags",
        "/v1/assets/search/full-text?q=mountain&limit=1&facets=format,tags",
      ]) {
        const res = await t.as(broad).get(path);
        expect(res.status).toBe(200);
        expect(res.body.facetsAreEstimates).toBe(true);
        const format = res.body.facets.format as Array<{ value: string; count: number }>;
        // 13,500 live jpeg and 13,500 live png: a sample of the whole table sees both halves alike.
        expect(format.map((v) => v.value).sort()).toEqual(["jpeg", "png"]);
        const total = format[0]!.count + format[1]!.count;
        expect(Math.abs(total - 27_000)).toBeLessThanOrEqual(2_700);
        for (const v of format) expect(v.count / total).toBeGreaterThan(0.35);
        expect(res.body.facets.tags.map((v: { value: string }) => v.value)).toEqual(["kept"]);
        expect(Math.abs(res.body.facets.tags[0].count - 27_000)).toBeLessThanOrEqual(2_700);
      }
    },
    BULK_ROWS_TIMEOUT_MS,
  );
});
