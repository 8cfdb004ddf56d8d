import {
  CANDIDATES_PER_RESULT,
  conjunctionPlan,
  fullTextSearch,
  PAIR_DISTANCE,
  PAIR_MIN_SCORE,
  pairsAreExact,
  parseQuery,
  queryTsquery,
  rankExact,
  rankPairs,
} from "../src/assets/search";
import { createTestApp, type TestApp } from "./helpers";

let t: TestApp;
const WS = "ws-pairs";
const OTHER = "ws-pairs-other";

/**
 * `n` assets in one INSERT ... SELECT (the triggers fill search_vector, search_terms and
 * search_pairs). The two words of each query meet next to each other in titles, tags and captions,
 * apart by one to four words, in reverse order, and in different fields, at co-prime periods: many
 * different pair scores, and many assets whose words stand far apart.
 */
async function insertAssets(workspace: string, n: number, offset = 0): Promise<void> {
  await t.db.prisma.$executeRawUnsafe(
    `INSERT INTO assets (id, workspace_id, user_title, user_tags, user_caption, user_description, original_filename,
                         mime_type, format, width, height, bytes, sha256, phash, created_at, updated_at)
     SELECT gen_random_uuid(), $1,
            (ARRAY['mountain lake','sunset','mountain','beach walk','city night','lake mountain','red car',
                   'mountain blue lake','mountain sky water lake','red sports car','lake','night city'])[1 + g % 12]
              || CASE WHEN g % 11 = 0 THEN ' mountain lake' ELSE '' END,
            ARRAY[(ARRAY['mountains','sun','lake','travel','city','car','red'])[1 + g % 7],
                  (ARRAY['night','lake','mountain','blue'])[1 + g % 4]],
            (ARRAY['clouds over the mountains','a sunny beach','lake and mountain','night','a red car by the lake',
                   'mountain lake'])[1 + g % 6]
              || repeat(' mountain', g % 3) || repeat(' lake', g % 5),
            CASE WHEN g % 3 = 0 THEN 'the city at night, a lake far below the red mountain' END,
            'IMG_' || g || '.jpg', 'image/jpeg', 'jpeg', 10, 10, 100, repeat('0', 64), g,
            timestamptz '2026-01-01' + make_interval(secs => g + $3), timestamptz '2026-01-01' + make_interval(secs => g + $3)
       FROM generate_series(1, $2) AS g`,
    workspace,
    n,
    offset,
  );
}

/** The rows search_pairs should hold for the live assets of `workspace`, and those it holds, as text. */
async function pairRows(workspace: string): Promise<{ expected: string[]; actual: string[] }> {
  const q = async (sql: string) =>
    (await t.db.prisma.$queryRawUnsafe<Array<{ r: string }>>(sql, workspace)).map((x) => x.r);
  return {
    expected: await q(`SELECT concat_ws('|', a.id, p.lexeme_a, p.lexeme_b, p.score) AS r
                         FROM assets a, LATERAL assets_search_pairs(a.search_vector) p
                        WHERE a.workspace_id = $1 AND a.deleted_at IS NULL ORDER BY 1`),
    actual: await q(`SELECT concat_ws('|', s.asset_id, s.lexeme_a, s.lexeme_b, s.score) AS r
                       FROM search_pairs s WHERE s.workspace_id = $1 ORDER BY 1`),
  };
}

beforeAll(async () => {
  t = await createTestApp();
  await insertAssets(WS, 600);
  // The same words in another workspace, newer and scoring higher: they must never show.
  await insertAssets(OTHER, 300, 100000);
  await t.db.prisma.$executeRawUnsafe(
    "UPDATE assets SET user_title = 'mountain lake mountain lake red car city night' WHERE workspace_id = $1",
    OTHER,
  );
});
afterAll(async () => {
  await t.close();
});

const TWO_WORDS = ["mountain lake", "lake mountain", "red car", "city night", "blue lake", "Mountain Lakes"];
const PHRASES = ['"mountain lake"', '"lake mountain"', '"red car"', '"night city"', '"mountain sky water"'];

describe("search_pairs rows (20261130010000_search_pairs)", () => {
  it("hold exactly the close, high-scoring pairs of every live asset, through insert, update, trash, restore and delete", async () => {
    const ws = "ws-pairs-rows";
    await insertAssets(ws, 60);
    const check = async () => {
      const { expected, actual } = await pairRows(ws);
      expect(actual).toEqual(expected);
      return actual.length;
    };
    expect(await check()).toBeGreaterThan(60);
    await t.db.prisma.$executeRawUnsafe(
      "UPDATE assets SET user_title = 'red car next to a lake' WHERE workspace_id = $1 AND phash % 4 = 0",
      ws,
    );
    await check();
    await t.db.prisma.$executeRawUnsafe(
      "UPDATE assets SET deleted_at = now() WHERE workspace_id = $1 AND phash % 3 = 0",
      ws,
    );
    const [trashedRows] = await t.db.prisma.$queryRawUnsafe<Array<{ n: number }>>(
      `SELECT count(*)::int AS n FROM search_pairs s JOIN assets a ON a.id = s.asset_id
        WHERE a.workspace_id = $1 AND a.deleted_at IS NOT NULL`,
      ws,
    );
    expect(trashedRows!.n).toBe(0);
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

  it("a pair's score is its two-word query's exact score, and only pairs at most 2 apart scoring 0.25 are kept", async () => {
    const [row] = await t.db.prisma.$queryRaw<Array<{ rows: number; wrong: number }>>`
      SELECT count(*)::int AS rows,
             count(*) FILTER (WHERE s.score <> ts_rank_cd('{0.1,0.2,0.4,1.0}'::float4[], a.search_vector,
                                                          to_tsquery('english', s.lexeme_a || ' & ' || s.lexeme_b))
                                 OR s.score < ${PAIR_MIN_SCORE})::int AS wrong
        FROM search_pairs s JOIN assets a ON a.id = s.asset_id
       WHERE s.workspace_id = ${WS}`;
    expect(row!.rows).toBeGreaterThan(600);
    expect(row!.wrong).toBe(0);
    expect(PAIR_DISTANCE).toBe(2);
  });

  it.each(TWO_WORDS)(
    "%s: every asset with both words but no row scores below 0.25 or at most (a + b) / 3",
    async (q) => {
      // The bound rankPairs rests on, checked on every match of the workspace.
      const plan = (await conjunctionPlan(t.db.prisma, parseQuery(q)))!;
      const [a, b] = plan.pairs!.pairs[0]!;
      const [row] = await t.db.prisma.$queryRaw<Array<{ missing: number; over: number }>>`
        WITH m AS (
          SELECT a.id, ts_rank_cd('{0.1,0.2,0.4,1.0}'::float4[], a.search_vector, to_tsquery('english', ${`${a} & ${b}`}))::float8 AS score,
                 (SELECT sum(s.score::float8) FROM search_terms s WHERE s.asset_id = a.id AND s.lexeme IN (${a}, ${b})) AS own
            FROM assets a
           WHERE a.workspace_id = ${WS} AND a.deleted_at IS NULL
             AND a.search_vector @@ to_tsquery('english', ${`${a} & ${b}`})
             AND NOT EXISTS (SELECT 1 FROM search_pairs p WHERE p.asset_id = a.id
                               AND p.lexeme_a = least(${a}, ${b}) AND p.lexeme_b = greatest(${a}, ${b})))
        SELECT count(*)::int AS missing,
               count(*) FILTER (WHERE m.score >= ${PAIR_MIN_SCORE} AND m.score > m.own / 3 * 1.00001)::int AS over
          FROM m`;
      expect(row!.missing).toBeGreaterThan(0);
      expect(row!.over).toBe(0);
    },
  );

  it.each(PHRASES)("%s: every phrase match scores at most k/2 times each adjacent pair's row", async (q) => {
    const plan = (await conjunctionPlan(t.db.prisma, parseQuery(q)))!;
    const pairs = plan.pairs!;
    const tsquery = queryTsquery(parseQuery(q));
    for (const [a, b] of pairs.pairs) {
      const [row] = await t.db.prisma.$queryRaw<Array<{ matches: number; over: number }>>`
        WITH m AS (
          SELECT a.id, ts_rank_cd('{0.1,0.2,0.4,1.0}'::float4[], a.search_vector, ${tsquery})::float8 AS score,
                 coalesce((SELECT p.score::float8 FROM search_pairs p WHERE p.asset_id = a.id
                              AND p.lexeme_a = least(${a}, ${b}) AND p.lexeme_b = greatest(${a}, ${b})),
                          ${PAIR_MIN_SCORE}) AS pair
            FROM assets a
           WHERE a.workspace_id = ${WS} AND a.deleted_at IS NULL AND a.search_vector @@ ${tsquery})
        SELECT count(*)::int AS matches,
               count(*) FILTER (WHERE m.score > ${pairs.items / 2}::float8 * m.pair * 1.00001)::int AS over
          FROM m`;
      expect(row!.matches).toBeGreaterThan(0);
      expect(row!.over).toBe(0);
    }
  });
});

describe("two words and phrases ranked from search_pairs", () => {
  it("plans the pair of two words, and each two adjacent words of a phrase", async () => {
    expect((await conjunctionPlan(t.db.prisma, parseQuery("mountain lake")))!.pairs).toEqual({
      kind: "and",
      pairs: [["mountain", "lake"]],
      items: 2,
    });
    expect((await conjunctionPlan(t.db.prisma, parseQuery('"mountain sky water"')))!.pairs).toEqual({
      kind: "phrase",
      pairs: [
        ["mountain", "sky"],
        ["sky", "water"],
      ],
      items: 3,
    });
    // Three words AND: no pair bounds them.
    expect((await conjunctionPlan(t.db.prisma, parseQuery("mountain sky water")))!.pairs).toBeNull();
  });

  it("serves every page it proves equal to the exact ranking, and proves most of them", async () => {
    let proven = 0;
    let tried = 0;
    for (const q of [...TWO_WORDS, ...PHRASES]) {
      const plan = (await conjunctionPlan(t.db.prisma, parseQuery(q)))!;
      const tsquery = queryTsquery(parseQuery(q));
      for (const limit of [1, 3, 10, 25]) {
        for (const perResult of CANDIDATES_PER_RESULT) {
          const r = await rankPairs(t.db.prisma, WS, tsquery, plan, { limit, perResult });
          tried += 1;
          if (!pairsAreExact(r, limit)) continue;
          proven += 1;
          expect(r.hits.slice(0, limit).map((h) => ({ id: h.id, score: h.score }))).toEqual(
            await rankExact(t.db.prisma, WS, tsquery, limit),
          );
        }
      }
    }
    expect(proven).toBeGreaterThan(tried / 2);
  });

  it("does not apply when the last word's prefix expands to another word", async () => {
    // "lake mountain": once 'mountainside' is in the workspace, 'mountain' expands to two lexemes.
    const ws = "ws-pairs-prefix";
    await insertAssets(ws, 50);
    const plan = (await conjunctionPlan(t.db.prisma, parseQuery("lake mountain")))!;
    const tsquery = queryTsquery(parseQuery("lake mountain"));
    expect((await rankPairs(t.db.prisma, ws, tsquery, plan, { limit: 3 })).applicable).toBe(true);
    await t.db.prisma.$executeRawUnsafe(
      "UPDATE assets SET user_title = user_title || ' mountainside' WHERE workspace_id = $1 AND phash = 7",
      ws,
    );
    expect((await rankPairs(t.db.prisma, ws, tsquery, plan, { limit: 3 })).applicable).toBe(false);
    // The served page is still the exact one.
    expect(await fullTextSearch(t.db.prisma, ws, "lake mountain", 10)).toEqual(
      await rankExact(t.db.prisma, ws, tsquery, 10),
    );
  });

  // Typed part-way: each last word's only completion in this corpus is one word (night, car, lake,
  // mountain), and its own lexeme ('nig', 'ca', ...) is in no asset.
  const PART_TYPED = ["city nig", "City NIG", "red ca", "mountain la", "lake mou", "blue la"];

  it.each(PART_TYPED)("%s: ranked from the pair of its completion, every proved page the exact ranking", async (q) => {
    const p = parseQuery(q);
    const plan = (await conjunctionPlan(t.db.prisma, p))!;
    expect(plan.roles[1]!.prefix).not.toBeNull();
    let proven = 0;
    for (const limit of [1, 3, 10, 25]) {
      for (const perResult of CANDIDATES_PER_RESULT) {
        const r = await rankPairs(t.db.prisma, WS, queryTsquery(p), plan, { limit, perResult });
        expect(r.applicable).toBe(true);
        if (!pairsAreExact(r, limit)) continue;
        proven += 1;
        expect(r.hits.slice(0, limit).map((h) => ({ id: h.id, score: h.score }))).toEqual(
          await rankExact(t.db.prisma, WS, queryTsquery(p), limit),
        );
      }
      const exact = await rankExact(t.db.prisma, WS, queryTsquery(p), limit);
      expect(exact.length).toBeGreaterThan(0);
      expect(await fullTextSearch(t.db.prisma, WS, q, limit)).toEqual(exact);
    }
    expect(proven).toBeGreaterThan(0);
    const res = await t.as(WS).get("/v1/assets/search/full-text").query({ q, limit: 25 });
    expect(res.status).toBe(200);
    const exact = await rankExact(t.db.prisma, WS, queryTsquery(p), 25);
    expect(res.body.assets.map((a: { id: string }) => a.id)).toEqual(exact.map((h) => h.id));
  });

  it("does not apply when a part-typed word's own lexeme is in an asset, or both words are one lexeme", async () => {
    const ws = "ws-pairs-part-typed";
    await insertAssets(ws, 60);
    const check = async (q: string, applicable: boolean) => {
      const p = parseQuery(q);
      const plan = (await conjunctionPlan(t.db.prisma, p))!;
      expect([q, (await rankPairs(t.db.prisma, ws, queryTsquery(p), plan, { limit: 3 })).applicable]).toEqual([
        q,
        applicable,
      ]);
      expect(await fullTextSearch(t.db.prisma, ws, q, 10)).toEqual(
        await rankExact(t.db.prisma, ws, queryTsquery(p), 10),
      );
    };
    await check("city nig", true);
    // "night nig": both roles are 'night', and each occurrence of it is a cover on its own.
    await check("night nig", false);
    await t.db.prisma.$executeRawUnsafe(
      "UPDATE assets SET user_title = user_title || ' nig' WHERE workspace_id = $1 AND phash = 7",
      ws,
    );
    await check("city nig", false);
  });

  it.each([...TWO_WORDS, ...PHRASES])(
    "%s: the served page equals the exact ranking, this workspace only",
    async (q) => {
      for (const limit of [1, 5, 25]) {
        const exact = await rankExact(t.db.prisma, WS, queryTsquery(parseQuery(q)), limit);
        expect(exact.length).toBeGreaterThan(0);
        expect(await fullTextSearch(t.db.prisma, WS, q, limit)).toEqual(exact);
      }
      const res = await t.as(WS).get("/v1/assets/search/full-text").query({ q, limit: 25 });
      expect(res.status).toBe(200);
      const exact = await rankExact(t.db.prisma, WS, queryTsquery(parseQuery(q)), 25);
      expect(res.body.assets.map((a: { id: string }) => a.id)).toEqual(exact.map((h) => h.id));
    },
  );

  it("never returns a trashed asset: the pages proved from pairs are the live assets' exact ranking", async () => {
    const ws = "ws-pairs-trash";
    await insertAssets(ws, 400);
    for (const q of ["mountain lake", '"red car"']) {
      const before = await fullTextSearch(t.db.prisma, ws, q, 10);
      const trashed = before.slice(0, 5).map((h) => h.id);
      expect((await t.as(ws).delete(`/v1/assets/${trashed[0]}`)).status).toBe(204);
      await t.db.prisma.$executeRawUnsafe("UPDATE assets SET deleted_at = now() WHERE id = ANY($1::uuid[])", trashed);
      const plan = (await conjunctionPlan(t.db.prisma, parseQuery(q)))!;
      const tsquery = queryTsquery(parseQuery(q));
      for (const limit of [1, 3, 10]) {
        const served = await fullTextSearch(t.db.prisma, ws, q, limit);
        expect(served.filter((h) => trashed.includes(h.id))).toEqual([]);
        expect(served).toEqual(await rankExact(t.db.prisma, ws, tsquery, limit));
        const r = await rankPairs(t.db.prisma, ws, tsquery, plan, { limit });
        expect(r.hits.filter((h) => trashed.includes(h.id))).toEqual([]);
      }
    }
  });
});
