import {
  CANDIDATES_PER_RESULT,
  fullTextSearch,
  PREFIX_MIN_SCORE,
  prefixIsExact,
  parseQuery,
  queryTsquery,
  rankExact,
  rankPrefix,
} from "../src/assets/search";
import { createTestApp, type TestApp } from "./helpers";

let t: TestApp;
const WS = "ws-prefixes";
const OTHER = "ws-prefixes-other";

/**
 * `n` assets in one INSERT ... SELECT (the triggers fill search_vector, search_terms and
 * search_prefixes). Words sharing their first letters (sunset, sunrise, sunny, sun; mountain,
 * mountaineer, mount) meet in titles, tags, captions and descriptions at co-prime periods: many
 * different sums per prefix, many ties.
 */
async function insertAssets(workspace: string, n: number, offset = 0): Promise<void> {
  await t.db.prisma.$executeRawUnsafe(
    `INSERT INTO assets (id, workspace_id, user_title, user_tags, user_caption, user_description, original_filename,
                         mime_type, format, width, height, bytes, sha256, phash, created_at, updated_at)
     SELECT gen_random_uuid(), $1,
            (ARRAY['sunset','sunrise over the lake','mountain','sunny beach','mount fuji','sun','city night',
                   'mountaineer on the ridge','red car','sunset sunrise'])[1 + g % 10],
            ARRAY[(ARRAY['sun','travel','sunset','mountains','car','sunflower','night'])[1 + g % 7]],
            (ARRAY['a sunny day','clouds over the mountains','sunrise','night','the sun sets'])[1 + g % 5]
              || repeat(' sunset', g % 3),
            CASE WHEN g % 4 = 0 THEN 'sunday at the mountain, sunburn and sunglasses' END,
            'IMG_' || g || '.jpg', 'image/jpeg', 'jpeg', 10, 10, 100, repeat('0', 64), g,
            timestamptz '2026-01-01' + make_interval(secs => g + $3), timestamptz '2026-01-01' + make_interval(secs => g + $3)
       FROM generate_series(1, $2) AS g`,
    workspace,
    n,
    offset,
  );
}

async function prefixRows(workspace: string): Promise<{ expected: string[]; actual: string[] }> {
  const q = async (sql: string) =>
    (await t.db.prisma.$queryRawUnsafe<Array<{ r: string }>>(sql, workspace)).map((x) => x.r);
  return {
    expected: await q(`SELECT concat_ws('|', a.id, p.prefix, p.score) AS r
                         FROM assets a, LATERAL assets_search_prefixes(a.search_vector) p
                        WHERE a.workspace_id = $1 AND a.deleted_at IS NULL ORDER BY 1`),
    actual: await q(`SELECT concat_ws('|', s.asset_id, s.prefix, s.score) AS r
                       FROM search_prefixes s WHERE s.workspace_id = $1 ORDER BY 1`),
  };
}

beforeAll(async () => {
  t = await createTestApp();
  await insertAssets(WS, 600);
  // The same words in another workspace, newer and scoring higher: they must never show.
  await insertAssets(OTHER, 200, 100000);
  await t.db.prisma.$executeRawUnsafe(
    "UPDATE assets SET user_title = 'sunset sunrise sunny sun mountain mountaineer' WHERE workspace_id = $1",
    OTHER,
  );
});
afterAll(async () => {
  await t.close();
});

const PREFIXES = ["sun", "Sun", "SUN", "suns", "sunr", "sunny", "mou", "mount", "mountai", "nig", "car"];

describe("search_prefixes rows (20261130020000_search_prefixes)", () => {
  it("hold each live asset's sums per first three letters, through insert, update, trash, restore and delete", async () => {
    const ws = "ws-prefixes-rows";
    await insertAssets(ws, 60);
    const check = async () => {
      const { expected, actual } = await prefixRows(ws);
      expect(actual).toEqual(expected);
      return actual.length;
    };
    expect(await check()).toBeGreaterThan(60);
    await t.db.prisma.$executeRawUnsafe(
      "UPDATE assets SET user_title = 'sunflower field' WHERE workspace_id = $1 AND phash % 4 = 0",
      ws,
    );
    await check();
    await t.db.prisma.$executeRawUnsafe(
      "UPDATE assets SET deleted_at = now() WHERE workspace_id = $1 AND phash % 3 = 0",
      ws,
    );
    await check();
    await t.db.prisma.$executeRawUnsafe(
      "UPDATE assets SET deleted_at = NULL WHERE workspace_id = $1 AND phash % 6 = 0",
      ws,
    );
    await check();
    await t.db.prisma.$executeRawUnsafe("DELETE FROM assets WHERE workspace_id = $1 AND phash % 5 = 0", ws);
    await check();
    await t.db.prisma.$executeRawUnsafe("DELETE FROM assets WHERE workspace_id = $1", ws);
    expect(await check()).toBe(0);
  });

  it.each(PREFIXES)(
    "%s: a row's score is at least the query's score, and an asset without a row scores below 0.25",
    async (word) => {
      const tsquery = queryTsquery(parseQuery(word));
      const [row] = await t.db.prisma.$queryRaw<Array<{ matches: number; missing: number; over: number }>>`
        WITH m AS (
          SELECT a.id, ts_rank_cd('{0.1,0.2,0.4,1.0}'::float4[], a.search_vector, ${tsquery})::float8 AS score,
                 (SELECT s.score::float8 FROM search_prefixes s
                   WHERE s.asset_id = a.id AND s.prefix = left(lower(${word}), 3)) AS row_score
            FROM assets a
           WHERE a.workspace_id = ${WS} AND a.deleted_at IS NULL AND a.search_vector @@ ${tsquery})
        SELECT count(*)::int AS matches,
               count(*) FILTER (WHERE m.row_score IS NULL)::int AS missing,
               count(*) FILTER (WHERE m.score > coalesce(m.row_score, ${PREFIX_MIN_SCORE}) * 1.00001
                                   OR (m.row_score IS NULL AND m.score >= ${PREFIX_MIN_SCORE}))::int AS over
          FROM m`;
      expect(row!.matches).toBeGreaterThan(0);
      expect(row!.over).toBe(0);
    },
  );
});

describe("one word typed as a prefix, ranked from search_prefixes", () => {
  it("serves every page it proves equal to the exact ranking, and proves most of them", async () => {
    let proven = 0;
    let tried = 0;
    for (const word of PREFIXES) {
      const p = parseQuery(word);
      const tsquery = queryTsquery(p);
      for (const limit of [1, 3, 10, 25]) {
        for (const perResult of CANDIDATES_PER_RESULT) {
          const r = await rankPrefix(t.db.prisma, WS, tsquery, p, { limit, perResult });
          expect(r.applicable).toBe(true);
          tried += 1;
          if (!prefixIsExact(r, limit)) continue;
          proven += 1;
          expect(r.hits.slice(0, limit).map((h) => ({ id: h.id, score: h.score }))).toEqual(
            await rankExact(t.db.prisma, WS, tsquery, limit),
          );
        }
      }
    }
    expect(proven).toBeGreaterThan(tried / 2);
  });

  it("does not apply to two letters, two words or a word whose stem is not under its prefix", async () => {
    for (const word of ["su", "mountain su", "-sun", '"sun"']) {
      const p = parseQuery(word);
      const applies = p.prefix !== null && p.head === "" && p.prefix.length >= 3;
      if (!applies) continue;
      const r = await rankPrefix(t.db.prisma, WS, queryTsquery(p), p, { limit: 3 });
      expect(r.applicable).toBe(false);
    }
    // A stop word has no lexeme at all.
    const the = parseQuery("the");
    expect((await rankPrefix(t.db.prisma, WS, queryTsquery(the), the, { limit: 3 })).applicable).toBe(false);
  });

  it.each(PREFIXES)("%s: the served page equals the exact ranking, this workspace only", async (word) => {
    for (const limit of [1, 5, 25]) {
      const exact = await rankExact(t.db.prisma, WS, queryTsquery(parseQuery(word)), limit);
      expect(exact.length).toBeGreaterThan(0);
      expect(await fullTextSearch(t.db.prisma, WS, word, limit)).toEqual(exact);
    }
    const res = await t.as(WS).get("/v1/assets/search/full-text").query({ q: word, limit: 25 });
    expect(res.status).toBe(200);
    const exact = await rankExact(t.db.prisma, WS, queryTsquery(parseQuery(word)), 25);
    expect(res.body.assets.map((a: { id: string }) => a.id)).toEqual(exact.map((h) => h.id));
  });

  it("never returns a trashed asset", async () => {
    const ws = "ws-prefixes-trash";
    await insertAssets(ws, 300);
    const before = await fullTextSearch(t.db.prisma, ws, "sun", 10);
    const trashed = before.slice(0, 5).map((h) => h.id);
    expect((await t.as(ws).delete(`/v1/assets/${trashed[0]}`)).status).toBe(204);
    await t.db.prisma.$executeRawUnsafe("UPDATE assets SET deleted_at = now() WHERE id = ANY($1::uuid[])", trashed);
    const p = parseQuery("sun");
    for (const limit of [1, 3, 10]) {
      const served = await fullTextSearch(t.db.prisma, ws, "sun", limit);
      expect(served.filter((h) => trashed.includes(h.id))).toEqual([]);
      expect(served).toEqual(await rankExact(t.db.prisma, ws, queryTsquery(p), limit));
      const r = await rankPrefix(t.db.prisma, ws, queryTsquery(p), p, { limit });
      expect(r.hits.filter((h) => trashed.includes(h.id))).toEqual([]);
    }
  });
});
