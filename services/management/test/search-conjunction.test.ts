import {
  CANDIDATES_PER_RESULT,
  conjunctionIsExact,
  conjunctionPlan,
  expandedConjunction,
  fullTextSearch,
  parseQuery,
  prefixConjunction,
  queryTsquery,
  rankConjunction,
  rankExact,
  type ConjunctionRanking,
} from "../src/assets/search";
import { createTestApp, type TestApp } from "./helpers";

let t: TestApp;
const WS = "ws-conjunction";
const OTHER = "ws-conjunction-other";

/**
 * `n` assets inserted with one INSERT ... SELECT (the triggers fill search_vector and search_terms).
 * Titles, tags and captions cycle through a small vocabulary at co-prime periods, so two words meet
 * in many assets, in different fields, at different distances, with many different scores.
 */
async function insertAssets(workspace: string, n: number, offset = 0): Promise<void> {
  await t.db.prisma.$executeRawUnsafe(
    `INSERT INTO assets (id, workspace_id, user_title, user_tags, user_caption, original_filename, mime_type, format,
                         width, height, bytes, sha256, phash, created_at, updated_at)
     SELECT gen_random_uuid(), $1,
            (ARRAY['mountain lake','sunset','mountain','beach walk','city night','lake mountain','red car'])[1 + g % 7]
              || CASE WHEN g % 11 = 0 THEN ' mountain lake' ELSE '' END,
            ARRAY[(ARRAY['mountains','sun','lake','travel','sunny','car'])[1 + g % 6]],
            (ARRAY['clouds over the mountains','a sunny beach','lake and mountain','night','a red car by the lake'])[1 + g % 5]
              || repeat(' mountain', g % 3) || CASE WHEN g % 13 = 0 THEN ' rare zeppelin' ELSE '' END,
            'IMG_' || g || '.jpg', 'image/jpeg', 'jpeg', 10, 10, 100, repeat('0', 64), g,
            timestamptz '2026-01-01' + make_interval(secs => g + $3), timestamptz '2026-01-01' + make_interval(secs => g + $3)
       FROM generate_series(1, $2) AS g`,
    workspace,
    n,
    offset,
  );
}

beforeAll(async () => {
  t = await createTestApp();
  await insertAssets(WS, 400);
  // The same words in another workspace, newer and some scoring higher: they must never show.
  await insertAssets(OTHER, 400, 100000);
  await t.db.prisma.$executeRawUnsafe(
    "UPDATE assets SET user_title = user_title || ' mountain lake mountain lake' WHERE workspace_id = $1",
    OTHER,
  );
});
afterAll(async () => {
  await t.close();
});

const QUERIES = [
  "mountain lake",
  "lake mountain",
  "Mountain Lakes",
  "red car",
  "mountain lake sunny",
  "sunny beach mountain",
  "clouds over the mountains",
  "mountain zeppelin",
  "mountain lak",
  "red car lake mountain sunny",
  '"mountain lake"',
  '"lake and mountain"',
  '"red car"',
  '"red car by the lake"',
];

describe("several words and phrases", () => {
  it.each(QUERIES)("%s: the page equals the exact ranking over every match", async (q) => {
    for (const limit of [3, 25]) {
      const exact = await rankExact(t.db.prisma, WS, queryTsquery(parseQuery(q)), limit);
      expect(exact.length).toBeGreaterThan(0);
      expect(await fullTextSearch(t.db.prisma, WS, q, limit)).toEqual(exact);
    }
  });

  it.each(QUERIES)("%s: served over HTTP from this workspace only", async (q) => {
    const res = await t.as(WS).get("/v1/assets/search/full-text").query({ q, limit: 25 });
    expect(res.status).toBe(200);
    const exact = await rankExact(t.db.prisma, WS, queryTsquery(parseQuery(q)), 25);
    expect(res.body.assets.map((a: { id: string }) => a.id)).toEqual(exact.map((h) => h.id));
  });

  it.each(QUERIES)(
    "%s: no match scores above the plan's factor times the sum of its lexemes' own scores",
    async (q) => {
      // The bound the proof rests on, checked on every match of the workspace.
      const plan = (await conjunctionPlan(t.db.prisma, parseQuery(q)))!;
      const lexemes = plan.roles.map((r) => r.lexeme);
      const prefixes = plan.roles.flatMap((r) => (r.prefix === null ? [] : [r.prefix]));
      const [row] = await t.db.prisma.$queryRaw<Array<{ matches: number; over: number }>>`
        WITH m AS (
          SELECT a.id, ts_rank_cd('{0.1,0.2,0.4,1.0}'::float4[], a.search_vector, ${queryTsquery(parseQuery(q))})::float8 AS score
            FROM assets a
           WHERE a.workspace_id = ${WS} AND a.search_vector @@ ${queryTsquery(parseQuery(q))})
        SELECT count(*)::int AS matches,
               count(*) FILTER (WHERE m.score > 1.00001 * ${plan.boundFactor}::float8 *
                 (SELECT sum(s.score::float8) FROM search_terms s
                   WHERE s.asset_id = m.id
                     AND (s.lexeme = ANY(string_to_array(${lexemes.join(" ")}, ' '))
                          OR EXISTS (SELECT 1 FROM unnest(string_to_array(${prefixes.join(" ")}, ' ')) p
                                      WHERE starts_with(s.lexeme, p)))))::int AS over
          FROM m`;
      expect(row!.matches).toBeGreaterThan(0);
      expect(row!.over).toBe(0);
    },
  );

  it("serves every page it proves from the candidates alone equal to the exact ranking", async () => {
    let proven = 0;
    for (const q of QUERIES) {
      const plan = (await conjunctionPlan(t.db.prisma, parseQuery(q)))!;
      for (const limit of [1, 3, 10]) {
        for (const perResult of CANDIDATES_PER_RESULT) {
          const c = await rankConjunction(t.db.prisma, WS, queryTsquery(parseQuery(q)), plan, { limit, perResult });
          if (!conjunctionIsExact(c, plan, limit)) continue;
          proven += 1;
          expect(c.hits.slice(0, limit).map((h) => ({ id: h.id, score: h.score }))).toEqual(
            await rankExact(t.db.prisma, WS, queryTsquery(parseQuery(q)), limit),
          );
        }
      }
    }
    // This corpus repeats its words in many assets (ties, high scores deep in every list): few pages
    // are proved from the candidates; the others are the exact ranking's (tested above).
    expect(proven).toBeGreaterThanOrEqual(5);
  });

  it("plans an AND of words with the prefix of the last word, and a phrase by its span", async () => {
    expect(await conjunctionPlan(t.db.prisma, parseQuery("Mountain Lakes"))).toEqual({
      roles: [
        { lexeme: "mountain", prefix: null },
        { lexeme: "lake", prefix: "lake" },
      ],
      pairs: { kind: "and", pairs: [["mountain", "lake"]], items: 2 },
      boundFactor: 1,
    });
    expect(await conjunctionPlan(t.db.prisma, parseQuery('"clouds over the mountains"'))).toEqual({
      roles: [
        { lexeme: "cloud", prefix: null },
        { lexeme: "mountain", prefix: null },
      ],
      // 'cloud' <3> 'mountain' ('over' and 'the' are stop words): 2 items spanning 4 positions, and
      // no two adjacent words to rank by search_pairs.
      pairs: null,
      boundFactor: 2,
    });
    for (const q of [
      "mountain",
      "mountain or lake",
      "lake -mountain",
      '"mountain lake" sunny',
      "a b c d e f",
      "the a",
    ]) {
      expect(await conjunctionPlan(t.db.prisma, parseQuery(q))).toBeNull();
    }
  });

  it("proves a two-word page from cut candidate lists, without the exact ranking", async () => {
    // limit 1: CANDIDATES_PER_RESULT[1] candidates per lexeme, far fewer than the ~150 assets each
    // word matches, so the lists are cut and the bound decides.
    const q = "mountain lake";
    const plan = (await conjunctionPlan(t.db.prisma, parseQuery(q)))!;
    const c = await rankConjunction(t.db.prisma, WS, queryTsquery(parseQuery(q)), plan, {
      limit: 1,
      perResult: CANDIDATES_PER_RESULT[1],
    });
    expect(c.completeRole).toBe(false);
    expect(c.bound).not.toBeNull();
    expect(conjunctionIsExact(c, plan, 1)).toBe(true);
    const exact = await rankExact(t.db.prisma, WS, queryTsquery(parseQuery(q)), 1);
    expect(c.hits.map((h) => ({ id: h.id, score: h.score }))).toEqual(exact);
  });

  it("takes every match of a rare word as candidates (its list is complete)", async () => {
    const q = "mountain zeppelin";
    const plan = (await conjunctionPlan(t.db.prisma, parseQuery(q)))!;
    const c = await rankConjunction(t.db.prisma, WS, queryTsquery(parseQuery(q)), plan, { limit: 25 });
    expect(c.completeRole).toBe(true);
    expect(conjunctionIsExact(c, plan, 25)).toBe(true);
    expect(c.hits.map((h) => ({ id: h.id, score: h.score }))).toEqual(
      await rankExact(t.db.prisma, WS, queryTsquery(parseQuery(q)), 25),
    );
  });

  it("does not prove a page whose last hit is not above the bound times the plan's factor", () => {
    const hit = (score: number) => ({ id: "x", score, createdAt: "2026-01-01T00:00:00.000Z" });
    const plan = { roles: [], pairs: null, boundFactor: 2 };
    const base = { expansionCapped: false, completeRole: false, bound: 1, prefixLexemes: null };
    expect(conjunctionIsExact({ ...base, hits: [hit(3), hit(2)] }, plan, 2)).toBe(false);
    expect(conjunctionIsExact({ ...base, hits: [hit(3), hit(2.1)] }, plan, 2)).toBe(true);
    expect(conjunctionIsExact({ ...base, hits: [hit(3)] }, plan, 2)).toBe(false);
    expect(conjunctionIsExact({ ...base, completeRole: true, hits: [hit(3)] }, plan, 2)).toBe(true);
    expect(conjunctionIsExact({ ...base, completeRole: true, expansionCapped: true, hits: [hit(3)] }, plan, 2)).toBe(
      false,
    );
  });

  it("never returns a trashed asset, and still serves the exact ranking of the live ones", async () => {
    const ws = "ws-conjunction-trash";
    await insertAssets(ws, 300);
    for (const q of ["mountain lake", '"red car"', "mountain zeppelin"]) {
      const before = await fullTextSearch(t.db.prisma, ws, q, 10);
      expect(before.length).toBeGreaterThanOrEqual(5);
      const trashed = before.slice(0, 5).map((h) => h.id);
      const res = await t.as(ws).delete(`/v1/assets/${trashed[0]}`);
      expect(res.status).toBe(204);
      await t.db.prisma.$executeRawUnsafe("UPDATE assets SET deleted_at = now() WHERE id = ANY($1::uuid[])", trashed);
      for (const limit of [1, 3, 10]) {
        const served = await fullTextSearch(t.db.prisma, ws, q, limit);
        expect(served.filter((h) => trashed.includes(h.id))).toEqual([]);
        expect(served).toEqual(await rankExact(t.db.prisma, ws, queryTsquery(parseQuery(q)), limit));
      }
    }
  });
});

describe("the last word's prefix spelled out as the workspace's lexemes", () => {
  // Each last word expands to several lexemes of this corpus (sun: sun, sunni, sunset; m: mountain,
  // ...), and the pages of these queries are not all proved from candidates.
  const PREFIXED = ["mountain lake su", "red car l", "lake mountain sunn", "mountain sunny lake m", "car c"];
  // The queries some of whose matches hold two lexemes under the prefix (sun and sunset; car and cloud).
  const MIXED = new Set(["mountain lake su", "car c"]);

  it.each(PREFIXED)("%s: the same matches with the same scores, and the page of the exact ranking", async (q) => {
    const p = parseQuery(q);
    const plan = (await conjunctionPlan(t.db.prisma, p))!;
    const c = await rankConjunction(t.db.prisma, WS, queryTsquery(p), plan, { limit: 25 });
    expect(c.prefixLexemes!.length).toBeGreaterThanOrEqual(2);
    const expanded = expandedConjunction(p, c)!;
    // The form the exact ranking scores the spelled-out matches with.
    const rankBy = prefixConjunction(p, plan, c)!;
    expect(rankBy).not.toBeNull();
    const rows = await t.db.prisma.$queryRaw<
      Array<{ id: string; typed: number | null; spelled: number | null; ranked: number | null; held: number }>
    >`
      SELECT a.id::text AS id,
             CASE WHEN a.search_vector @@ ${queryTsquery(p)}
                  THEN ts_rank_cd('{0.1,0.2,0.4,1.0}'::float4[], a.search_vector, ${queryTsquery(p)})::float8 END AS typed,
             CASE WHEN a.search_vector @@ ${expanded}
                  THEN ts_rank_cd('{0.1,0.2,0.4,1.0}'::float4[], a.search_vector, ${expanded})::float8 END AS spelled,
             CASE WHEN a.search_vector @@ ${expanded}
                  THEN ts_rank_cd('{0.1,0.2,0.4,1.0}'::float4[], a.search_vector, ${rankBy})::float8 END AS ranked,
             (SELECT count(*)::int FROM unnest(a.search_vector) u WHERE u.lexeme = ANY(${c.prefixLexemes!}::text[])) AS held
        FROM assets a WHERE a.workspace_id = ${WS}`;
    const matches = rows.filter((r) => r.typed !== null);
    expect(matches.length).toBeGreaterThan(10);
    expect(rows.filter((r) => r.typed !== r.spelled || r.typed !== r.ranked)).toEqual([]);
    // Where a match holds two different lexemes under the prefix, the forms' trees differ most.
    expect(matches.some((r) => r.held >= 2)).toBe(MIXED.has(q));
    for (const limit of [1, 3, 25]) {
      expect(await fullTextSearch(t.db.prisma, WS, q, limit)).toEqual(
        await rankExact(t.db.prisma, WS, queryTsquery(p), limit),
      );
    }
  });

  it("ranks by the prefix item only when every alternative starts with it", async () => {
    const p = parseQuery("mountain la");
    const plan = (await conjunctionPlan(t.db.prisma, p))!;
    const c: ConjunctionRanking = {
      expansionCapped: false,
      completeRole: false,
      bound: null,
      prefixLexemes: ["la", "lake"],
      hits: [],
    };
    expect(prefixConjunction(p, plan, c)).not.toBeNull();
    expect(prefixConjunction(p, plan, { ...c, prefixLexemes: ["la", "lake", "mountain"] })).toBeNull();
    expect(prefixConjunction(p, plan, { ...c, expansionCapped: true })).toBeNull();
    expect(
      prefixConjunction(
        parseQuery("mountain la"),
        (await conjunctionPlan(t.db.prisma, parseQuery("mountain lake")))!,
        c,
      ),
    ).toBeNull();
  });

  it("a spelled-out query that finds nothing goes on to the spelling correction", async () => {
    // "montain" is in no asset: nothing matches; corrected to "mountain", the page is that query's.
    const served = await fullTextSearch(t.db.prisma, WS, "montain zeppelin su", 10);
    expect(served.length).toBeGreaterThan(0);
    expect(served).toEqual(await rankExact(t.db.prisma, WS, queryTsquery(parseQuery("mountain zeppelin su")), 10));
  });

  it("facets of a full-text search count the same matches", async () => {
    const q = "mountain lake su";
    const res = await t.as(WS).get(`/v1/assets/search/full-text?q=${encodeURIComponent(q)}&limit=3&facets=tags`);
    expect(res.status).toBe(200);
    const expected = await t.db.prisma.$queryRaw<Array<{ value: string; count: number }>>`
      SELECT tag AS value, count(*)::int AS count
        FROM assets a, unnest(a.user_tags) AS tag
       WHERE a.workspace_id = ${WS} AND a.deleted_at IS NULL AND a.search_vector @@ ${queryTsquery(parseQuery(q))}
       GROUP BY tag ORDER BY count DESC, tag`;
    expect(expected.length).toBeGreaterThan(1);
    const tags = (res.body.facets.tags as Array<{ value: string; count: number }>).map((f) => ({
      value: f.value,
      count: f.count,
    }));
    expect([...tags].sort((a, b) => b.count - a.count || a.value.localeCompare(b.value))).toEqual(expected);
  });

  it("quotes each lexeme for the tsquery, quotes and backslashes included", async () => {
    const p = parseQuery("mountain x");
    const lexemes = ["it's", "a\\b", "plain"];
    const c: ConjunctionRanking = {
      expansionCapped: false,
      completeRole: false,
      bound: null,
      prefixLexemes: lexemes,
      hits: [],
    };
    const expanded = expandedConjunction(p, c)!;
    for (const lexeme of lexemes) {
      const [row] = await t.db.prisma.$queryRaw<Array<{ hit: boolean; miss: boolean }>>`
        SELECT array_to_tsvector(ARRAY['mountain', ${lexeme}]) @@ ${expanded} AS hit,
               array_to_tsvector(ARRAY['lake', ${lexeme}]) @@ ${expanded} AS miss`;
      expect(row).toEqual({ hit: true, miss: false });
    }
    const [other] = await t.db.prisma.$queryRaw<Array<{ hit: boolean }>>`
      SELECT array_to_tsvector(ARRAY['mountain', 'its', 'ab']) @@ ${expanded} AS hit`;
    expect(other!.hit).toBe(false);
  });

  it("is not used when the prefix expands past the cap, to nothing, or the query has no prefix", () => {
    const c: ConjunctionRanking = {
      expansionCapped: false,
      completeRole: false,
      bound: null,
      prefixLexemes: ["lake"],
      hits: [],
    };
    expect(expandedConjunction(parseQuery("mountain la"), c)).not.toBeNull();
    expect(expandedConjunction(parseQuery("mountain la"), { ...c, expansionCapped: true })).toBeNull();
    expect(expandedConjunction(parseQuery("mountain la"), { ...c, prefixLexemes: [] })).toBeNull();
    expect(expandedConjunction(parseQuery("mountain la"), { ...c, prefixLexemes: null })).toBeNull();
    expect(expandedConjunction(parseQuery('"mountain lake"'), c)).toBeNull();
  });
});
