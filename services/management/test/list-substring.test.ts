import { LIST_EXACT_COUNT_LIMIT } from "@media-platform/contracts";
import { createTestApp, type TestApp } from "./helpers";

/**
 * GET /v1/assets?search=: a case-insensitive substring of title, tags, caption, description or
 * filename, with LIKE's `%` and `_` taken literally; its count exact up to LIST_EXACT_COUNT_LIMIT,
 * then the planner's estimate. Rows are inserted with SQL (the trigger fills search_text), so the
 * counts around the limit need no uploads.
 */
let t: TestApp;
const WS = "ws-substring";
const OTHER = "ws-substring-other";
const MANY = "ws-substring-many";

interface Row {
  title?: string | null;
  tags?: string[];
  caption?: string | null;
  description?: string | null;
  filename: string;
  trashed?: boolean;
}

/** The ids of `rows` inserted into `workspace`, the first the oldest (one second apart). */
async function insertRows(workspace: string, rows: Row[]): Promise<string[]> {
  const ids: string[] = [];
  for (const [i, r] of rows.entries()) {
    const [row] = await t.db.prisma.$queryRawUnsafe<Array<{ id: string }>>(
      `INSERT INTO assets (id, workspace_id, user_title, user_tags, user_caption, user_description, original_filename,
                           mime_type, format, width, height, bytes, sha256, phash, created_at, updated_at, deleted_at)
       VALUES (gen_random_uuid(), $1, $2, $3::text[], $4, $5, $6, 'image/png', 'png', 10, 10, 100, repeat('0', 64), 0,
               timestamptz '2026-01-01' + make_interval(secs => $7), timestamptz '2026-01-01' + make_interval(secs => $7),
               CASE WHEN $8 THEN now() END)
       RETURNING id::text AS id`,
      workspace,
      r.title ?? null,
      r.tags ?? [],
      r.caption ?? null,
      r.description ?? null,
      r.filename,
      i,
      r.trashed ?? false,
    );
    ids.push(row!.id);
  }
  return ids;
}

/** Every page of a listing, in order: its ids and the first page's body. */
async function listAll(
  workspace: string,
  query: Record<string, string | number | boolean>,
): Promise<{ ids: string[]; first: { count: number; countIsEstimate?: boolean } }> {
  const ids: string[] = [];
  let first: { count: number; countIsEstimate?: boolean } | undefined;
  let cursor: string | undefined;
  do {
    const res = await t
      .as(workspace)
      .get("/v1/assets")
      .query({ ...query, ...(cursor ? { cursor } : {}) });
    expect(res.status).toBe(200);
    first ??= res.body;
    ids.push(...res.body.assets.map((a: { id: string }) => a.id));
    cursor = res.body.nextCursor ?? undefined;
  } while (cursor);
  return { ids, first: first! };
}

let ids: Record<string, string>;

beforeAll(async () => {
  t = await createTestApp();
  const names = ["percent", "underscore", "mixed", "tagged", "caption", "description", "plain", "trashed"];
  const inserted = await insertRows(WS, [
    { title: "100% Cotton", filename: "shirt.png" },
    { title: "snake_case name", filename: "snake.png" },
    { title: "MixedCase Mountain", filename: "mixed.png" },
    { title: null, tags: ["Ab", "outdoor"], filename: "tagged.png" },
    { caption: "A quiet HARBOUR at dawn", filename: "c.png" },
    { description: "long exposure of a waterfall", filename: "d.png" },
    { title: "nothing special", filename: "PLAIN-File.PNG" },
    { title: "mountain in the trash", tags: ["ab"], filename: "old.png", trashed: true },
  ]);
  ids = Object.fromEntries(names.map((n, i) => [n, inserted[i]!]));
  await insertRows(OTHER, [
    { title: "MixedCase Mountain", tags: ["Ab"], filename: "snake_case 100%.png" },
    { caption: "A quiet HARBOUR at dawn", filename: "c.png" },
  ]);
});
afterAll(async () => {
  await t.close();
});

describe("GET /v1/assets?search= (substring)", () => {
  it.each([
    // query, the assets it finds (newest first)
    ["mountain", ["mixed"]],
    ["MOUNTAIN", ["mixed"]],
    ["xedca", ["mixed"]],
    ["harbour at", ["caption"]],
    ["waterfall", ["description"]],
    ["plain-file.png", ["plain"]],
    ["PLAIN-FILE", ["plain"]],
    ["outdoor", ["tagged"]],
    ["% c", ["percent"]],
    ["%", ["percent"]],
    ["_", ["underscore"]],
    ["e_c", ["underscore"]],
    ["snake%", []],
    ["100%25", []],
    ["zzz-none", []],
  ])("search=%j finds %j, never the trash or another workspace", async (search, expected) => {
    const res = await t.as(WS).get("/v1/assets").query({ search });
    expect(res.status).toBe(200);
    expect(res.body.assets.map((a: { id: string }) => a.id)).toEqual(expected.map((n) => ids[n]));
    expect(res.body.count).toBe(expected.length);
    expect(res.body).not.toHaveProperty("countIsEstimate");
    expect(res.body.nextCursor).toBeNull();
  });

  it.each([
    // Substrings of one and two characters have no trigram: still the same filter.
    ["b", ["caption", "tagged"]],
    ["B", ["caption", "tagged"]],
    ["ab", ["tagged"]],
    ["AB", ["tagged"]],
    ["0%", ["percent"]],
    ["_c", ["underscore"]],
    ["w", ["description", "caption"]],
  ])("search=%j (short) finds %j", async (search, expected) => {
    const res = await t.as(WS).get("/v1/assets").query({ search });
    expect(res.status).toBe(200);
    expect(res.body.assets.map((a: { id: string }) => a.id)).toEqual(expected.map((n) => ids[n]));
    expect(res.body.count).toBe(expected.length);
  });

  it("searches the trash only with ?trashed=true", async () => {
    const trash = await t.as(WS).get("/v1/assets").query({ search: "MOUNTAIN", trashed: true });
    expect(trash.status).toBe(200);
    expect(trash.body.assets.map((a: { id: string }) => a.id)).toEqual([ids.trashed]);
    expect(trash.body.count).toBe(1);
    const short = await t.as(WS).get("/v1/assets").query({ search: "ab", trashed: true });
    expect(short.body.assets.map((a: { id: string }) => a.id)).toEqual([ids.trashed]);
  });

  it("pages through the matches with a cursor, with the count of all of them on every page", async () => {
    // Every live asset's filename ends in ".png".
    const { ids: seen, first } = await listAll(WS, { search: "N", limit: 2 });
    const expected = ["plain", "description", "caption", "tagged", "mixed", "underscore", "percent"].map((n) => ids[n]);
    expect(seen).toEqual(expected);
    expect(first.count).toBe(expected.length);
  });

  it("another workspace's matches stay its own", async () => {
    const res = await t.as(OTHER).get("/v1/assets").query({ search: "harbour" });
    expect(res.body.count).toBe(1);
    expect(res.body.assets[0].id).not.toBe(ids.caption);
    expect(res.body.assets[0].workspaceId).toBe(OTHER);
  });
});

describe("GET /v1/assets?search= count around LIST_EXACT_COUNT_LIMIT", () => {
  beforeAll(async () => {
    // LIST_EXACT_COUNT_LIMIT titled "xq-exact", one "xq-over", 50 "other"; filenames img_<n>.png.
    await t.db.prisma.$executeRawUnsafe(
      `INSERT INTO assets (id, workspace_id, user_title, original_filename, mime_type, format, width, height, bytes,
                           sha256, phash, created_at, updated_at)
       SELECT gen_random_uuid(), $1,
              CASE WHEN g <= $2 THEN 'XQ-exact' WHEN g = $2 + 1 THEN 'xq-over' ELSE 'other' END,
              'img_' || g || '.png', 'image/png', 'png', 10, 10, 100, repeat('0', 64), g,
              timestamptz '2026-01-01' + make_interval(secs => g), timestamptz '2026-01-01' + make_interval(secs => g)
         FROM generate_series(1, $2 + 51) AS g`,
      MANY,
      LIST_EXACT_COUNT_LIMIT,
    );
    await t.db.prisma.$executeRawUnsafe("ANALYZE assets");
  });

  it("is exact at the limit", async () => {
    const res = await t.as(MANY).get("/v1/assets").query({ search: "xq-e", limit: 3 });
    expect(res.status).toBe(200);
    expect(res.body.count).toBe(LIST_EXACT_COUNT_LIMIT);
    expect(res.body).not.toHaveProperty("countIsEstimate");
    expect(res.body.assets.map((a: { originalFilename: string }) => a.originalFilename)).toEqual([
      `img_${LIST_EXACT_COUNT_LIMIT}.png`,
      `img_${LIST_EXACT_COUNT_LIMIT - 1}.png`,
      `img_${LIST_EXACT_COUNT_LIMIT - 2}.png`,
    ]);
  });

  it("is an estimate, flagged countIsEstimate, one match above it", async () => {
    for (const search of ["xq-", "XQ-", "q-"]) {
      const res = await t.as(MANY).get("/v1/assets").query({ search, limit: 2 });
      expect(res.status).toBe(200);
      expect(res.body.countIsEstimate).toBe(true);
      expect(res.body.count).toBeGreaterThan(LIST_EXACT_COUNT_LIMIT);
      expect(res.body.assets.map((a: { originalFilename: string }) => a.originalFilename)).toEqual([
        `img_${LIST_EXACT_COUNT_LIMIT + 1}.png`,
        `img_${LIST_EXACT_COUNT_LIMIT}.png`,
      ]);
      expect(typeof res.body.nextCursor).toBe("string");
    }
  });

  it("stays exact for a substring that matches a few of them", async () => {
    // img_1000.png and img_10000.png .. img_10009.png
    const res = await t.as(MANY).get("/v1/assets").query({ search: "IMG_1000", limit: 1 });
    expect(res.body.count).toBe(11);
    expect(res.body).not.toHaveProperty("countIsEstimate");
    expect(res.body.assets[0].originalFilename).toBe("img_10009.png");
    const over = await t.as(MANY).get("/v1/assets").query({ search: "-o" });
    expect(over.body.count).toBe(1);
    expect(over.body.assets[0].userTitle).toBe("xq-over");
  });

  it("counts exactly, without an estimate, once the trash takes the matches under the limit", async () => {
    await t.db.prisma.$executeRawUnsafe(
      `UPDATE assets SET deleted_at = now() WHERE workspace_id = $1 AND user_title = 'xq-over'`,
      MANY,
    );
    const live = await t.as(MANY).get("/v1/assets").query({ search: "xq-", limit: 1 });
    expect(live.body.count).toBe(LIST_EXACT_COUNT_LIMIT);
    expect(live.body).not.toHaveProperty("countIsEstimate");
    const trash = await t.as(MANY).get("/v1/assets").query({ search: "xq-", trashed: true });
    expect(trash.body.count).toBe(1);
    expect(trash.body.assets[0].userTitle).toBe("xq-over");
    expect(trash.body).not.toHaveProperty("countIsEstimate");
  });
});
