import type { RawReads } from "../db/direct-reads";
import { Prisma } from "../generated/prisma/client";

/** ts_rank_cd weights in Postgres order {D, C, B, A}: filename, caption/description, tags, title. */
const WEIGHTS = "{0.1,0.2,0.4,1.0}";

/**
 * The exact ranking of the candidates (`ids`, by default the `taken` CTE's asset ids) under the query `q`: one
 * primary-key probe per candidate (OFFSET 0 keeps the planner from turning this into a GIN scan of
 * every match joined to the candidates), live assets of the workspace only, best `limit` first.
 */
const rankedCandidates = (
  workspaceId: string,
  limit: number,
  ids: Prisma.Sql = Prisma.sql`SELECT DISTINCT asset_id FROM taken`,
) => Prisma.sql`
      SELECT a.id::text AS id, ts_rank_cd(${WEIGHTS}::float4[], a.search_vector, q.tsq)::float8 AS score, a.created_at
        FROM (${ids}) c
        CROSS JOIN q
        CROSS JOIN LATERAL (
              SELECT x.id, x.search_vector, x.created_at FROM assets x
               WHERE x.id = c.asset_id AND x.workspace_id = ${workspaceId} AND x.deleted_at IS NULL
              OFFSET 0) a
       WHERE a.search_vector @@ q.tsq
       ORDER BY score DESC, a.created_at DESC, a.id ASC
       LIMIT ${limit}`;

/**
 * word_similarity(query word, dictionary word) threshold of the spelling correction (pg_trgm's
 * default 0.6 misses one-letter typos in short words, e.g. "tabel" for "table" scores 0.5).
 */
export const TRIGRAM_THRESHOLD = 0.4;
/** Dictionary words (search_words) tried in place of one misspelled query word, closest first. */
export const SUGGESTIONS_PER_WORD = 3;
/**
 * The words the spelling dictionary holds and the fallback corrects: 'simple' lexemes of 3-64
 * characters without digits or punctuation. Same pattern as assets_search_words() in the
 * 20261122020000_search_words migration.
 */
export const SEARCH_WORD_PATTERN = "^[^[:digit:][:punct:][:space:]]{3,64}$";

export interface ParsedQuery {
  /** The query as typed, for websearch_to_tsquery. */
  web: string;
  /** The query without its last word, when the last word gets a prefix match. */
  head: string | null;
  /** Sanitised last word for `to_tsquery('english', '<word>:*')`, or null. */
  prefix: string | null;
  /** Positive words without operators, lower-cased: the words the spelling correction may correct. */
  plain: string;
}

const WORD = /^[\p{L}\p{N}]+$/u;

/**
 * Splits a web-search query. Only the last token gets a prefix match, and only when it is a plain
 * positive word outside quotes (not "or", not "-word", not a phrase). The prefix term is built from
 * letters and digits only, so to_tsquery never sees operator characters.
 */
export function parseQuery(q: string): ParsedQuery {
  const web = q.trim();
  const tokens = web.split(/\s+/).filter(Boolean);
  const quoteCount = (web.match(/"/g) ?? []).length;
  let head: string | null = null;
  let prefix: string | null = null;
  const last = tokens[tokens.length - 1];
  const beforeLast = tokens[tokens.length - 2];
  if (last !== undefined && quoteCount % 2 === 0 && !last.includes('"') && beforeLast?.toLowerCase() !== "or") {
    const word = last.replace(/[^\p{L}\p{N}]+$/u, "");
    if (WORD.test(word) && word.toLowerCase() !== "or" && !last.startsWith("-")) {
      prefix = word.toLowerCase();
      head = tokens.slice(0, -1).join(" ");
    }
  }
  const positives: string[] = [];
  let inQuote = false;
  for (const raw of tokens) {
    const startsQuote = raw.startsWith('"') || raw.startsWith('-"');
    const negated = !inQuote && raw.startsWith("-");
    if (startsQuote && !inQuote) inQuote = true;
    const cleaned = raw.replace(/["]/g, "").replace(/^-+/, "").toLowerCase();
    if ((raw.endsWith('"') && raw.length > 1) || (raw === '"' && inQuote && !startsQuote)) inQuote = false;
    if (!cleaned || cleaned === "or") continue;
    if (!negated) positives.push(cleaned);
  }
  return {
    web,
    head,
    prefix,
    plain: positives.join(" ").slice(0, 200),
  };
}

/** The tsquery of a parsed query: websearch_to_tsquery, OR-ed with the prefix match of the last word. */
export function queryTsquery(p: ParsedQuery): Prisma.Sql {
  return p.prefix !== null
    ? Prisma.sql`(websearch_to_tsquery('english', ${p.web}) || (websearch_to_tsquery('english', ${p.head ?? ""}) && to_tsquery('english', ${`${p.prefix}:*`})))`
    : Prisma.sql`websearch_to_tsquery('english', ${p.web})`;
}

export interface ScoredId {
  id: string;
  score: number;
}

type RankedHit = ScoredId & { createdAt: string };

/** Scores are float4 sums: a relative margin covers the rounding of ts_rank_cd's own summation. */
const SCORE_MARGIN = 1e-5;

/** The hit scores above `bound`, whatever the rounding. */
const scoresAbove = (hit: RankedHit, bound: number): boolean => hit.score > bound * (1 + SCORE_MARGIN);

/**
 * The hit ties with a cut list's last score and is newer than that list's last entries: an unseen
 * asset reaching that score is older, and ranks after it (the ranking's tie-break is created_at).
 */
const winsTie = (hit: RankedHit, last: number, lastCreatedAt: Date | null): boolean =>
  hit.score >= last * (1 - SCORE_MARGIN) &&
  lastCreatedAt !== null &&
  new Date(hit.createdAt).getTime() > lastCreatedAt.getTime();

/** The ranked candidates as a ranking statement returns them (json_agg), best first. */
const rankedHits = (hits: RankedHit[] | null): RankedHit[] =>
  (hits ?? []).map((h) => ({ id: h.id, score: Number(h.score), createdAt: String(h.createdAt) }));

/** A page's hits without their created_at. */
const scored = (hits: RankedHit[]): ScoredId[] => hits.map((h) => ({ id: h.id, score: h.score }));

/**
 * Ranked full-text search of one workspace. First `websearch_to_tsquery` (stemming, quotes, -term,
 * or) OR-ed with a prefix match on the last word, ranked by ts_rank_cd over the weighted
 * search_vector (GIN index). Only when that finds nothing, spelling correction (pg_trgm's
 * recommended way): each query word with no exact lexeme match in the workspace is looked up in
 * the workspace's spelling dictionary (search_words, trigram GIN index), and the same ranked query
 * runs again with that word replaced by (closest dictionary word OR the next ones). A typo thus costs
 * two indexed lookups, never a similarity scan of every matching asset. Same SQL on PGlite and
 * Postgres.
 */
export async function fullTextSearch(
  reads: RawReads,
  workspaceId: string,
  q: string,
  limit: number,
): Promise<ScoredId[]> {
  return (await rankFullText(reads, workspaceId, q, limit)).hits;
}

/** fullTextSearch's page, with the tsquery that found it (the corrected one after a typo). */
export async function rankFullText(
  reads: RawReads,
  workspaceId: string,
  q: string,
  limit: number,
): Promise<{ hits: ScoredId[]; tsquery: Prisma.Sql }> {
  const p = parseQuery(q);
  const tsquery = queryTsquery(p);
  const plan = await conjunctionPlan(reads, p);
  // Set when the spelled-out conjunction found no match: the query as typed finds none either.
  let unmatched = false;
  if (plan !== null && plan.pairs !== null) {
    for (const perResult of CANDIDATES_PER_RESULT) {
      const r = await rankPairs(reads, workspaceId, tsquery, plan, { limit, perResult });
      if (pairsAreExact(r, limit) && r.hits.length > 0) {
        return { hits: scored(r.hits), tsquery };
      }
      if (!r.deeper) break;
    }
  }
  if (plan !== null) {
    // One try only: the bound of an AND sums every list's last score, and going ten times deeper
    // lowers it little (a word's best assets are mostly not the conjunction's), so a second try
    // mostly adds its cost to the exact ranking's.
    const c = await rankConjunction(reads, workspaceId, tsquery, plan, { limit });
    // An empty page goes on to the exact ranking below, which also tries spelling corrections.
    if (conjunctionIsExact(c, plan, limit) && c.hits.length > 0) {
      return { hits: scored(c.hits), tsquery };
    }
    const expanded = expandedConjunction(p, c);
    if (expanded !== null) {
      // The same matches and scores; a query that finds nothing goes on to the spelling correction,
      // which rewrites the words as typed.
      const hits = await rankExact(reads, workspaceId, expanded, limit, prefixConjunction(p, plan, c) ?? expanded);
      if (hits.length > 0) return { hits, tsquery: expanded };
      unmatched = true;
    }
  }
  // One word of three letters is the prefix with the most words under it: its own list. A longer
  // prefix has fewer, and ranks as their `or` below.
  if (p.prefix !== null && p.head === "" && p.prefix.length === 3) {
    for (const perResult of CANDIDATES_PER_RESULT) {
      const r = await rankPrefix(reads, workspaceId, tsquery, p, { limit, perResult });
      if (prefixIsExact(r, limit)) return { hits: scored(r.hits), tsquery };
      if (!r.deeper) break;
    }
  }
  // The typo fallback is for plain words; an explicit phrase ("...") stays exact.
  const correctable = p.plain.length >= 3 && !p.web.includes('"');
  const first = unmatched
    ? { hits: [], corrections: null }
    : await rankedSearch(reads, workspaceId, tsquery, limit, correctable ? p.plain : undefined);
  if (first.hits.length > 0 || !correctable) return { hits: first.hits, tsquery };

  // Usually already looked up by the first ranking statement (a disjunction that found nothing).
  const corrections = first.corrections ?? (await spellingCorrections(reads, workspaceId, p.plain));
  if (corrections.length === 0) return { hits: [], tsquery };
  // ts_rewrite keeps the query's structure (or, -term, the prefix part) and swaps each misspelled
  // word's lexeme (which matches nothing) for the distinct english lexemes of its suggestions, OR-ed
  // ("mountain mountains mountaineer" -> 'mountain': as cheap as the correctly spelled query).
  const corrected = corrections.reduce(
    (acc, c) =>
      // Constant arguments only (the lexemes come from the lookup), so the planner folds the
      // tsquery to a constant instead of evaluating it for every row.
      Prisma.sql`ts_rewrite(${acc}, plainto_tsquery('english', ${c.word}), websearch_to_tsquery('simple', ${c.lexemes.join(" or ")}))`,
    tsquery,
  );
  return { hits: (await rankedSearch(reads, workspaceId, corrected, limit)).hits, tsquery: corrected };
}

/**
 * Candidates taken per query lexeme from search_terms (its best-scoring assets, in ranking order)
 * by the bounded ranking, per result asked for: a first try, and a deeper one when the first could
 * not prove its page (several cut lists: a prefix with many words, `a or b`). More than one, so that
 * a single cut list still proves its page (its last hit comes before the list's last candidate).
 */
export const CANDIDATES_PER_RESULT = [4, 40] as const;
/** Lexemes a prefix term (the last query word) may expand to; beyond, the exact ranking answers. */
export const PREFIX_EXPANSIONS = 64;

/** What the bounded ranking found, and what is needed to prove it equals the exact ranking. */
export interface CandidateRanking {
  /** The query is a disjunction of lexemes (words, `or`, a prefix, spelling corrections). */
  disjunction: boolean;
  /** A prefix term matched more than PREFIX_EXPANSIONS lexemes (some were not looked at). */
  expansionCapped: boolean;
  /** Lexemes whose postings were cut (more matches than candidates taken). */
  truncatedLists: number;
  /** Sum of the last taken score of each cut list: no asset outside the candidates scores more. */
  bound: number | null;
  /**
   * The oldest created_at among the cut lists' last candidates: an asset outside the candidates
   * that reaches the bound has each list's last score, so it is older than that list's last one.
   */
  boundCreatedAt: Date | null;
  /**
   * The highest score a candidate left unranked could have (null when none was): the sum of its
   * lists' scores plus the last score of each cut list it is missing from. A disjunction scores the
   * sum of its lexemes' own scores (each occurrence is a cover of its own), so a candidate whose
   * upper sum is below the limit-th best lower sum (the lists it was seen in) cannot make the page.
   */
  prunedBound: number | null;
  /** The candidates ranked exactly, best first, with created_at for the tie-break check. */
  hits: RankedHit[];
  /**
   * Spelling corrections of the words asked for (`correct`), looked up in the same statement only
   * when the query is a disjunction that matched nothing (then its empty page is final); else null.
   */
  corrections: Correction[] | null;
}

/**
 * Ranked search. A query that is a disjunction of lexemes (one word, words joined by `or`, the
 * prefix of the last word, spelling corrections) is first ranked on candidates: each lexeme's
 * CANDIDATES_PER_RESULT[0] * limit best assets from search_terms (a btree in ranking order, so a word that
 * matches 10% of a million rows costs 100 index entries instead of 100,000 ts_rank_cd calls), ranked
 * with the same ts_rank_cd expression as the exact query. ts_rank_cd of a disjunction is the sum of
 * its lexemes' own scores (one cover per occurrence), so an asset missing from every candidate list
 * scores at most the sum of the last scores of the cut lists (threshold algorithm). When the page's
 * last hit scores above that bound (or ties with it and is newer than the cut lists' last
 * candidates), the page is provably the exact one. Otherwise the same runs once more with
 * CANDIDATES_PER_RESULT[1] * limit candidates per lexeme; when that cannot prove its page either,
 * and for queries with AND, phrases or -words, the exact ranking over every match answers
 * (rankExact). The page served is therefore always the exact ranking's.
 */
async function rankedSearch(
  reads: RawReads,
  workspaceId: string,
  tsquery: Prisma.Sql,
  limit: number,
  correct?: string,
): Promise<{ hits: ScoredId[]; corrections: Correction[] | null }> {
  let corrections: Correction[] | null = null;
  for (const [index, perResult] of CANDIDATES_PER_RESULT.entries()) {
    const c = await rankCandidates(
      reads,
      workspaceId,
      tsquery,
      { limit, perResult },
      index === 0 ? correct : undefined,
    );
    corrections ??= c.corrections;
    if (!c.disjunction) break;
    if (candidatesAreExact(c, limit)) return { hits: scored(c.hits), corrections };
  }
  return { hits: await rankExact(reads, workspaceId, tsquery, limit), corrections };
}

/**
 * True when the candidates' first `limit` hits are provably those of the exact ranking: every list
 * is complete, or the last hit scores above the bound of the unseen assets, or it ties with the bound
 * and is newer than any unseen asset that could reach it (the ranking's tie-break is created_at).
 */
export function candidatesAreExact(c: CandidateRanking, limit: number): boolean {
  if (c.expansionCapped) return false;
  // Candidates left unranked: none may reach the page's last hit.
  const lastHit = c.hits[limit - 1];
  if (c.prunedBound !== null && !(lastHit !== undefined && scoresAbove(lastHit, c.prunedBound))) return false;
  if (c.truncatedLists === 0) return true; // every match was a candidate
  if (lastHit === undefined || c.bound === null) return false;
  return scoresAbove(lastHit, c.bound) || winsTie(lastHit, c.bound, c.boundCreatedAt);
}

/**
 * How deep a bounded ranking looks: `perResult` candidates per lexeme and result of a page of
 * `limit` (default CANDIDATES_PER_RESULT[0]).
 */
export interface CandidateDepth {
  limit: number;
  perResult?: number;
}

/** The bounded ranking alone (exported for the bench's recall measurement and the tests). */
export async function rankCandidates(
  reads: RawReads,
  workspaceId: string,
  tsquery: Prisma.Sql,
  { limit, perResult = CANDIDATES_PER_RESULT[0] }: CandidateDepth,
  correct?: string,
): Promise<CandidateRanking> {
  const candidates = perResult * limit;
  // An uncorrelated subquery under CASE is an initPlan, run only when the CASE reaches it: a query
  // with hits never looks at the dictionary, a typo saves the round trip of its own lookup.
  const corrections =
    correct === undefined
      ? Prisma.sql`NULL::json`
      : Prisma.sql`CASE WHEN (SELECT disjunction FROM q) AND NOT EXISTS (SELECT 1 FROM ranked)
                     THEN (SELECT coalesce(json_agg(json_build_object('word', c.word, 'suggestions', c.suggestions,
                                                                      'lexemes', c.lexemes) ORDER BY c.word), '[]')
                             FROM (${spellingCorrectionsQuery(workspaceId, correct)}) c) END`;
  // The items of the constant tsquery, read from its text form ('lexeme' or 'lexeme':*, with ''
  // and \\ escapes); it is a disjunction when no &, ! or <-> remains outside the quoted lexemes.
  const rows = await reads.$queryRaw<
    Array<{
      disjunction: boolean;
      expansion_capped: boolean;
      truncated_lists: number;
      bound: number | null;
      bound_created_at: Date | null;
      pruned_bound: number | null;
      hits: CandidateRanking["hits"] | null;
      corrections: Correction[] | null;
    }>
  >`
    WITH RECURSIVE q AS (
      SELECT t.tsq, regexp_replace(t.tsq::text, '''(?:[^'']|'''')*''', '', 'g') !~ '[&!<]' AS disjunction
        FROM (SELECT ${tsquery} AS tsq) t),
    items AS (
      SELECT DISTINCT replace(replace(m[1], '\\\\', '\\'), '''''', '''') AS lexeme, m[2] IS NOT NULL AS prefix
        FROM q, regexp_matches(q.tsq::text, '''((?:[^'']|'''')*)''(:\\*)?', 'g') AS m
       WHERE q.disjunction),
    expanded (prefix, lexeme, n) AS (
      SELECT i.lexeme, (SELECT min(s.lexeme) FROM search_terms s
                         WHERE s.workspace_id = ${workspaceId} AND s.lexeme >= i.lexeme), 1
        FROM items i WHERE i.prefix
      UNION ALL
      SELECT e.prefix, (SELECT min(s.lexeme) FROM search_terms s
                         WHERE s.workspace_id = ${workspaceId} AND s.lexeme > e.lexeme), e.n + 1
        FROM expanded e
       WHERE starts_with(e.lexeme, e.prefix) AND e.n <= ${PREFIX_EXPANSIONS}),
    lexemes AS (
      SELECT lexeme FROM items WHERE NOT prefix
      UNION
      SELECT lexeme FROM expanded WHERE starts_with(lexeme, prefix) AND n <= ${PREFIX_EXPANSIONS}),
    taken AS (
      SELECT l.lexeme, c.asset_id, c.score, c.created_at
        FROM lexemes l
        CROSS JOIN LATERAL (
              SELECT s.asset_id, s.score, s.created_at FROM search_terms s
               WHERE s.workspace_id = ${workspaceId} AND s.lexeme = l.lexeme
               ORDER BY s.score DESC, s.created_at DESC, s.asset_id DESC
               LIMIT ${candidates}) c),
    cut AS (
      SELECT lexeme, min(score) AS last_score FROM taken GROUP BY lexeme HAVING count(*) >= ${candidates}),
    cut_last AS (
      SELECT c.lexeme, min(t.created_at) AS last_created_at
        FROM cut c JOIN taken t ON t.lexeme = c.lexeme AND t.score = c.last_score
       GROUP BY c.lexeme),
    seen AS (
      SELECT t.asset_id, sum(t.score::float8) AS lb,
             sum(t.score::float8) + coalesce((SELECT sum(c.last_score::float8) FROM cut c
                                               WHERE c.lexeme <> ALL (array_agg(t.lexeme))), 0) AS ub
        FROM taken t GROUP BY t.asset_id),
    kth AS (SELECT lb FROM seen ORDER BY lb DESC OFFSET ${limit - 1} LIMIT 1),
    kept AS (
      SELECT asset_id FROM seen WHERE NOT EXISTS (SELECT 1 FROM kth) OR ub >= (SELECT lb FROM kth) * (1 - 2e-5)),
    ranked AS (${rankedCandidates(workspaceId, limit, Prisma.sql`SELECT asset_id FROM kept`)})
    SELECT (SELECT disjunction FROM q) AS disjunction,
           (SELECT max(ub) FROM seen WHERE asset_id NOT IN (SELECT asset_id FROM kept)) AS pruned_bound,
           EXISTS (SELECT 1 FROM expanded WHERE n > ${PREFIX_EXPANSIONS} AND starts_with(lexeme, prefix)) AS expansion_capped,
           (SELECT count(*)::int FROM cut) AS truncated_lists,
           (SELECT sum(last_score::float8) FROM cut) AS bound,
           (SELECT min(last_created_at) FROM cut_last) AS bound_created_at,
           (SELECT json_agg(json_build_object('id', r.id, 'score', r.score, 'createdAt', r.created_at)
                            ORDER BY r.score DESC, r.created_at DESC, r.id ASC)
              FROM ranked r) AS hits,
           ${corrections} AS corrections`;
  const row = rows[0]!;
  return {
    disjunction: row.disjunction,
    expansionCapped: row.expansion_capped,
    truncatedLists: Number(row.truncated_lists),
    bound: row.bound === null ? null : Number(row.bound),
    boundCreatedAt: row.bound_created_at === null ? null : new Date(row.bound_created_at),
    prunedBound: row.pruned_bound === null ? null : Number(row.pruned_bound),
    hits: rankedHits(row.hits),
    corrections: row.corrections,
  };
}

/**
 * The exact ranking: ts_rank_cd over every match in the workspace (GIN index on search_vector).
 * `rankBy` scores the matches instead of `tsquery` when it gives every match the same score with
 * less work (see prefixConjunction).
 */
export async function rankExact(
  reads: RawReads,
  workspaceId: string,
  tsquery: Prisma.Sql,
  limit: number,
  rankBy: Prisma.Sql = tsquery,
): Promise<ScoredId[]> {
  const rows = await reads.$queryRaw<Array<{ id: string; score: number }>>`
    SELECT a.id::text AS id, ts_rank_cd(${WEIGHTS}::float4[], a.search_vector, q.rank_by)::float8 AS score
      FROM assets a, (SELECT ${tsquery} AS tsq, ${rankBy} AS rank_by) q
     WHERE a.workspace_id = ${workspaceId}
       AND a.deleted_at IS NULL
       AND a.search_vector @@ q.tsq
     ORDER BY score DESC, a.created_at DESC, a.id ASC
     LIMIT ${limit}`;
  return rows.map((r) => ({ id: r.id, score: Number(r.score) }));
}

export interface Correction {
  /** A query word ('simple' lexeme) with no exact lexeme match in the workspace. */
  word: string;
  /** Its closest words of the workspace's dictionary, best first (at most SUGGESTIONS_PER_WORD). */
  suggestions: string[];
  /** The distinct english lexemes of the suggestions (what the corrected query searches for). */
  lexemes: string[];
}

/**
 * Spelling suggestions for the words of `plain` (tokenised like the dictionary: 'simple' lexemes
 * matching SEARCH_WORD_PATTERN, english stop words skipped) that match no asset of the workspace
 * (GIN probe of search_vector): the dictionary words of that workspace only with
 * word_similarity(word, dictionary word) >= TRIGRAM_THRESHOLD (`<%`, trigram GIN index on
 * search_words.word), closest (similarity) first. Words without suggestions are left out.
 */
export async function spellingCorrections(reads: RawReads, workspaceId: string, plain: string): Promise<Correction[]> {
  return reads.$queryRaw<Correction[]>(spellingCorrectionsQuery(workspaceId, plain));
}

/** The spelling lookup's query (rows: word, suggestions, lexemes), alone or inside rankCandidates'. */
function spellingCorrectionsQuery(workspaceId: string, plain: string): Prisma.Sql {
  // The `<%` operator (GIN-indexable) reads its threshold from pg_trgm.word_similarity_threshold.
  // It is set by this statement itself, statement-local (set_config(..., true) outside a
  // transaction block lasts for the statement), in `cfg`: every dictionary probe is a LATERAL
  // subquery that references cfg, so it runs after it. One round trip, on any connection (a pooler
  // may not keep session settings), instead of BEGIN, set_config, the lookup and COMMIT.
  return Prisma.sql`
      SELECT w.word, array_agg(s.word ORDER BY s.sim DESC, s.word) AS suggestions,
             tsvector_to_array(to_tsvector('english', string_agg(s.word, ' '))) AS lexemes
        FROM (SELECT set_config('pg_trgm.word_similarity_threshold', ${String(TRIGRAM_THRESHOLD)}, true) AS threshold
              OFFSET 0) cfg
        CROSS JOIN (SELECT DISTINCT t.lexeme AS word
                      FROM unnest(to_tsvector('simple', ${plain})) AS t
                     WHERE t.lexeme ~ ${SEARCH_WORD_PATTERN}
                       AND numnode(plainto_tsquery('english', t.lexeme)) > 0) w
        CROSS JOIN LATERAL (
              SELECT d.word, similarity(w.word, d.word) AS sim
                FROM search_words d
               WHERE cfg.threshold IS NOT NULL
                 AND d.workspace_id = ${workspaceId}
                 AND w.word <% d.word
                 AND d.word <> w.word
               ORDER BY sim DESC, d.word
               LIMIT ${SUGGESTIONS_PER_WORD}) s
       WHERE NOT EXISTS (SELECT 1 FROM assets a
                          WHERE a.workspace_id = ${workspaceId}
                            AND a.deleted_at IS NULL
                            AND a.search_vector @@ plainto_tsquery('english', w.word))
       GROUP BY w.word
       ORDER BY w.word`;
}

/** Words of an AND query (or of a phrase) that the bounded conjunction ranking takes on. */
export const CONJUNCTION_WORDS = { min: 2, max: 5 } as const;

/**
 * An AND of words or a phrase, as the bounded ranking of a conjunction needs it: the query matches
 * an asset exactly when every role is present (a role is a word's lexeme, or for the last word
 * typed, its lexeme OR any lexeme its prefix expands to).
 */
export interface ConjunctionPlan {
  roles: Array<{ lexeme: string; prefix: string | null }>;
  /** The lexeme pairs whose search_pairs rows rank this query (see rankPairs), or null when none can. */
  pairs: PairPlan | null;
  /**
   * An unseen asset scores at most boundFactor * (the sum of its lexemes' own scores): 1 for an AND,
   * span / items for a phrase (see rankConjunction).
   */
  boundFactor: number;
}

const TSQUERY_TOKEN = /'((?:[^']|'')*)'(:\*)?|<(-|\d+)>|[&|!()]/g;

/** The items and operators of a tsquery's text form, or null when it holds anything else. */
function tsqueryTokens(
  text: string,
): Array<{ lexeme?: string; prefix?: boolean; distance?: number; op?: string }> | null {
  const tokens: Array<{ lexeme?: string; prefix?: boolean; distance?: number; op?: string }> = [];
  for (const m of text.matchAll(TSQUERY_TOKEN)) {
    if (m[1] !== undefined)
      tokens.push({ lexeme: m[1].replace(/''/g, "'").replace(/\\\\/g, "\\"), prefix: m[2] !== undefined });
    else if (m[3] !== undefined) tokens.push({ distance: m[3] === "-" ? 1 : Number(m[3]) });
    else tokens.push({ op: m[0] });
  }
  return text.replace(TSQUERY_TOKEN, "").trim() === "" ? tokens : null;
}

/**
 * The conjunction plan of a query of 2-5 plain words (no quotes, -word or `or`), or of one quoted
 * phrase of 2-5 words; null for any other query (one word, `or`, -word, several phrases, words
 * that english parses into several lexemes such as "sun-set"), which the other rankings answer.
 */
export async function conjunctionPlan(reads: RawReads, p: ParsedQuery): Promise<ConjunctionPlan | null> {
  const phrase = /^"[^"]+"$/.test(p.web);
  const words = (phrase ? p.web.slice(1, -1) : p.web).split(/\s+/).filter(Boolean);
  if (words.length < CONJUNCTION_WORDS.min || words.length > CONJUNCTION_WORDS.max) return null;
  if (!phrase && words.some((w) => w.includes('"') || w.startsWith("-") || w.toLowerCase() === "or")) return null;
  const last = words[words.length - 1]!;
  const [row] = await reads.$queryRaw<Array<{ web: string; last: string; prefix: string | null }>>`
    SELECT websearch_to_tsquery('english', ${p.web})::text AS web,
           plainto_tsquery('english', ${last})::text AS last,
           CASE WHEN ${p.prefix}::text IS NULL THEN NULL
                ELSE to_tsquery('english', ${`${p.prefix ?? ""}:*`})::text END AS prefix`;
  const web = tsqueryTokens(row!.web);
  if (web === null || web.length < 3) return null;
  const items = web.filter((_, i) => i % 2 === 0);
  const ops = web.filter((_, i) => i % 2 === 1);
  if (items.some((t) => t.lexeme === undefined || t.prefix)) return null;
  const lexemes = [...new Set(items.map((t) => t.lexeme!))];
  if (phrase) {
    if (ops.some((o) => o.distance === undefined)) return null;
    const span = 1 + ops.reduce((sum, o) => sum + o.distance!, 0);
    // Adjacent words of the phrase (distance 1, two different lexemes) have a search_pairs row.
    const adjacent = ops.flatMap((o, i) =>
      o.distance === 1 && items[i]!.lexeme !== items[i + 1]!.lexeme
        ? [[items[i]!.lexeme!, items[i + 1]!.lexeme!] as [string, string]]
        : [],
    );
    return {
      roles: lexemes.map((lexeme) => ({ lexeme, prefix: null })),
      pairs: adjacent.length > 0 ? { kind: "phrase", pairs: adjacent, items: items.length } : null,
      boundFactor: span / items.length,
    };
  }
  if (ops.some((o) => o.op !== "&")) return null;
  const roles = lexemes.map((lexeme) => ({ lexeme, prefix: null as string | null }));
  if (p.prefix !== null) {
    // The query is web OR (head AND prefix:*): the last word's role is its lexeme OR the prefix.
    const lastTokens = tsqueryTokens(row!.last);
    const prefixTokens = row!.prefix === null ? [] : tsqueryTokens(row!.prefix);
    if (lastTokens?.length !== 1 || prefixTokens === null || prefixTokens.length > 1) return null;
    const lastLexeme = lastTokens[0]!.lexeme;
    const prefix = prefixTokens[0];
    // A word repeated in the head already requires the last word's lexeme: the prefix adds nothing.
    if (prefix !== undefined && items.filter((t) => t.lexeme === lastLexeme).length === 1) {
      if (!prefix.prefix || prefix.lexeme === undefined) return null;
      roles.find((r) => r.lexeme === lastLexeme)!.prefix = prefix.lexeme;
    }
  }
  const pairs: PairPlan | null =
    roles.length === 2 ? { kind: "and", pairs: [[roles[0]!.lexeme, roles[1]!.lexeme]], items: 2 } : null;
  return { roles, pairs, boundFactor: 1 };
}

/**
 * The CTEs `items`, `expanded` and `lexemes` of a conjunction plan: each role's lexeme and, for the
 * last word typed, the workspace's lexemes starting with its prefix (found by a loose index scan of
 * search_terms, at most `cap` of them in `lexemes`; `expanded` holds one more when there are more).
 */
function roleLexemes(workspaceId: string, plan: ConjunctionPlan, cap: number): Prisma.Sql {
  const items = JSON.stringify(
    plan.roles.flatMap((r, role) => [
      { role, lexeme: r.lexeme, prefix: false },
      ...(r.prefix === null ? [] : [{ role, lexeme: r.prefix, prefix: true }]),
    ]),
  );
  return Prisma.sql`items AS (
      SELECT i.role, i.lexeme, i.prefix FROM json_to_recordset(${items}::json) AS i(role int, lexeme text, prefix boolean)),
    expanded (role, prefix, lexeme, n) AS (
      SELECT i.role, i.lexeme, (SELECT min(s.lexeme) FROM search_terms s
                                 WHERE s.workspace_id = ${workspaceId} AND s.lexeme >= i.lexeme), 1
        FROM items i WHERE i.prefix
      UNION ALL
      SELECT e.role, e.prefix, (SELECT min(s.lexeme) FROM search_terms s
                                 WHERE s.workspace_id = ${workspaceId} AND s.lexeme > e.lexeme), e.n + 1
        FROM expanded e
       WHERE starts_with(e.lexeme, e.prefix) AND e.n <= ${cap}),
    lexemes AS (
      SELECT role, lexeme FROM items WHERE NOT prefix
      UNION
      SELECT role, lexeme FROM expanded WHERE starts_with(lexeme, prefix) AND n <= ${cap})`;
}

/** What the bounded ranking of a conjunction found, and what proves it equals the exact ranking. */
export interface ConjunctionRanking {
  /** A prefix term matched more than PREFIX_EXPANSIONS lexemes (some were not looked at). */
  expansionCapped: boolean;
  /** Some role's lists are all complete: every match holds that role, so every match is a candidate. */
  completeRole: boolean;
  /** Sum of the last taken score of each cut list (an unseen asset scores at most that per lexeme). */
  bound: number | null;
  /** The lexemes the last word's prefix expands to (with its own), when it has a prefix; else null. */
  prefixLexemes: string[] | null;
  /** The candidates ranked exactly, best first. */
  hits: RankedHit[];
}

/**
 * The bounded ranking of an AND or a phrase (threshold algorithm). Each lexeme of each role (with
 * the prefix's expansions) gives its `perResult * limit` best assets from search_terms; the
 * candidates are ranked with the exact query's ts_rank_cd. An asset outside every list has, for
 * each lexeme, at most that list's last score (nothing when the list is complete), and its score
 * is bounded by those: ts_rank_cd sums over covers (minimal extents matching the query) the
 * harmonic mean of the weights of the query-lexeme occurrences in the cover, which is at most
 * their arithmetic mean. For an AND of k roles a cover holds at least k occurrences, and an
 * occurrence lies in at most k covers (the i-th cover holding it starts on a role found nowhere
 * else in it, which every later cover must hold past the i-th's end, so these roles differ); each
 * occurrence's weight thus adds at most k * 1/k: the score is at most the sum of the lexemes' own
 * scores (sum of their occurrences' weights, what search_terms holds). For a phrase of `items`
 * lexemes spanning `span` positions, a cover holds at least `items` occurrences and at most `span`
 * covers overlap one position: span / items. This assumes one lexeme per position ('english'
 * parses each word into one lexeme).
 */
export async function rankConjunction(
  reads: RawReads,
  workspaceId: string,
  tsquery: Prisma.Sql,
  plan: ConjunctionPlan,
  { limit, perResult = CANDIDATES_PER_RESULT[0] }: CandidateDepth,
): Promise<ConjunctionRanking> {
  const candidates = perResult * limit;
  const rows = await reads.$queryRaw<
    Array<{
      expansion_capped: boolean;
      complete_role: boolean;
      bound: number | null;
      prefix_lexemes: string[] | null;
      hits: ConjunctionRanking["hits"] | null;
    }>
  >`
    WITH RECURSIVE q AS (SELECT ${tsquery} AS tsq),
    ${roleLexemes(workspaceId, plan, PREFIX_EXPANSIONS)},
    taken AS (
      SELECT l.lexeme, c.asset_id, c.score
        FROM (SELECT DISTINCT lexeme FROM lexemes) l
        CROSS JOIN LATERAL (
              SELECT s.asset_id, s.score FROM search_terms s
               WHERE s.workspace_id = ${workspaceId} AND s.lexeme = l.lexeme
               ORDER BY s.score DESC, s.created_at DESC, s.asset_id DESC
               LIMIT ${candidates}) c),
    cut AS (
      SELECT lexeme, min(score) AS last_score FROM taken GROUP BY lexeme HAVING count(*) >= ${candidates}),
    ranked AS (${rankedCandidates(workspaceId, limit)})
    SELECT EXISTS (SELECT 1 FROM expanded WHERE n > ${PREFIX_EXPANSIONS} AND starts_with(lexeme, prefix)) AS expansion_capped,
           EXISTS (SELECT 1 FROM items i
                    WHERE NOT EXISTS (SELECT 1 FROM lexemes l JOIN cut c ON c.lexeme = l.lexeme
                                       WHERE l.role = i.role)) AS complete_role,
           (SELECT sum(last_score::float8) FROM cut) AS bound,
           (SELECT array_agg(l.lexeme ORDER BY l.lexeme) FROM lexemes l
             WHERE l.role IN (SELECT role FROM items WHERE prefix)) AS prefix_lexemes,
           (SELECT json_agg(json_build_object('id', r.id, 'score', r.score, 'createdAt', r.created_at)
                            ORDER BY r.score DESC, r.created_at DESC, r.id ASC)
              FROM ranked r) AS hits`;
  const row = rows[0]!;
  return {
    expansionCapped: row.expansion_capped,
    completeRole: row.complete_role,
    bound: row.bound === null ? null : Number(row.bound),
    prefixLexemes: plan.roles.some((r) => r.prefix !== null) ? (row.prefix_lexemes ?? []) : null,
    hits: rankedHits(row.hits),
  };
}

/**
 * An AND of plain words whose last word is typed as a prefix, with that prefix spelled out as the
 * workspace's lexemes that start with it: `head & (x1 | x2 | ...)` instead of
 * `web | (head & prefix:*)`. Both match the same assets and score them the same (ts_rank_cd looks at
 * the positions of the query's lexemes in the document, the same here, and at which extents satisfy
 * the query, equivalent here). The GIN index answers it from exact posting lists, where a prefix
 * item collects every match of the prefix into a bitmap that turns lossy beyond work_mem (at 1M
 * assets "blue sky water" then rechecked 26k rows for 8k matches). Null when the prefix expanded
 * past PREFIX_EXPANSIONS or to nothing, or the query has no prefix.
 */
export function expandedConjunction(p: ParsedQuery, c: ConjunctionRanking): Prisma.Sql | null {
  if (p.prefix === null || p.head === null || c.expansionCapped) return null;
  if (c.prefixLexemes === null || c.prefixLexemes.length === 0) return null;
  const alternatives = c.prefixLexemes.map(quotedLexeme).join(" | ");
  return Prisma.sql`(websearch_to_tsquery('english', ${p.head}) && ${alternatives}::tsquery)`;
}

/** A lexeme in tsquery input syntax: quoted, with '' and \\ escapes (as in the search_terms migration). */
function quotedLexeme(lexeme: string): string {
  return `'${lexeme.replace(/\\/g, "\\\\").replace(/'/g, "''")}'`;
}

/**
 * The spelled-out conjunction (expandedConjunction) with its last role as one prefix item again:
 * `head & 'prefix':*`, for ts_rank_cd only. Over the assets the spelled-out query matches, both
 * items find the same positions: the alternatives are every lexeme of the workspace's live assets
 * that starts with the prefix (search_terms), and start with it themselves (checked here). So every
 * match gets the same score, and ts_rank_cd, which walks the query tree at each position of a query
 * lexeme in the document, does less work per match: at 1M assets "red ca" (11 alternatives) ranks
 * its 51,640 matches in 0.5 instead of 1.4 s. The index still reads the spelled-out form (a prefix
 * item collects its postings into a bitmap that turns lossy). Null when there is no such form.
 */
export function prefixConjunction(p: ParsedQuery, plan: ConjunctionPlan, c: ConjunctionRanking): Prisma.Sql | null {
  const prefixed = plan.roles.filter((r) => r.prefix !== null);
  if (p.head === null || prefixed.length !== 1 || c.prefixLexemes === null || c.expansionCapped) return null;
  const prefix = prefixed[0]!.prefix!;
  if (!c.prefixLexemes.every((l) => l.startsWith(prefix))) return null;
  const item = `${quotedLexeme(prefix)}:*`;
  return Prisma.sql`(websearch_to_tsquery('english', ${p.head}) && ${item}::tsquery)`;
}

/**
 * True when the conjunction's candidates hold the exact ranking's first `limit` hits: some role's
 * lists are complete, or the last hit scores above the bound of every unseen asset (a tie goes to
 * the exact ranking, whose tie-break looks at every match).
 */
export function conjunctionIsExact(c: ConjunctionRanking, plan: ConjunctionPlan, limit: number): boolean {
  if (c.expansionCapped) return false;
  if (c.completeRole) return true;
  if (c.hits.length < limit || c.bound === null) return false;
  const bound = plan.boundFactor * c.bound;
  // Scores are float4 sums: a relative margin covers the rounding of ts_rank_cd's own summation.
  return scoresAbove(c.hits[limit - 1]!, bound);
}

/**
 * search_pairs holds a pair of lexemes for an asset when two of their occurrences are at most
 * PAIR_DISTANCE positions apart and the pair's own score (ts_rank_cd of 'a' & 'b') is at least
 * PAIR_MIN_SCORE. Both are fixed by the 20261130010000_search_pairs migration.
 */
export const PAIR_DISTANCE = 2;
export const PAIR_MIN_SCORE = 0.25;

/** The pairs a two-word AND or a phrase is ranked by. */
export interface PairPlan {
  /** "and": two words in any order and place; "phrase": words next to each other. */
  kind: "and" | "phrase";
  /** For "and" the two roles' lexemes; for a phrase each two adjacent words' lexemes. */
  pairs: Array<[string, string]>;
  /** Lexemes of the phrase (with repeats), or 2. */
  items: number;
}

/** What the pair ranking found, and what proves it equals the exact ranking. */
export interface PairRanking {
  /**
   * Each role is one lexeme of the workspace: a prefix that expands to one lexeme only, and a last
   * word typed part-way whose own lexeme no asset holds, are; a prefix that expands further is not.
   */
  applicable: boolean;
  /** A deeper try could prove more: some pair's list was cut. */
  deeper: boolean;
  kind: PairPlan["kind"];
  items: number;
  /**
   * Per pair, the last score taken from its cut list and the oldest created_at at that score (an
   * unseen row that ties with it is older: the list is in the ranking's order); null when the list
   * was complete.
   */
  pairs: Array<{ last: number | null; lastCreatedAt: Date | null }>;
  /** Two words: (a's last + b's last) / 3 when both words' lists were cut, else null. */
  listsBound: number | null;
  /** Two words: the best score of the pair's rows left unranked (below the page), or null. */
  prunedScore: number | null;
  /** The candidates ranked exactly, best first. */
  hits: RankedHit[];
}

/**
 * The ranking of a two-word AND or of a phrase from search_pairs (threshold algorithm on pairs).
 *
 * Two words a & b: an asset holding both either has a row of the pair, or its occurrences of a and b
 * are all at least PAIR_DISTANCE + 1 positions apart (every cover is then divided by at least 3:
 * the asset scores at most (score of a + score of b) / 3, each from search_terms), or its pair
 * scores below PAIR_MIN_SCORE. The candidates are the pair's best `perResult * limit` rows and,
 * from each word's best `10 * perResult * limit` postings, the assets whose (a + b) / 3 could still
 * reach the page (a missing word counts as that list's last score). Unseen assets score at most
 * max(the pair list's last score, PAIR_MIN_SCORE, (a's last + b's last) / 3).
 *
 * A phrase of k lexemes: its assets hold each two adjacent words at distance 1, and each phrase
 * cover holds such a pair, whose own cover it maps to one to one, with a harmonic mean of weights at
 * most k/2 times the pair's: an asset scores at most k/2 times any adjacent pair's score, so at most
 * k/2 * min over the pairs of max(the pair list's last score, PAIR_MIN_SCORE).
 *
 * Trashed assets have no rows (as in search_terms), and every candidate is re-read from assets
 * with the workspace and deleted_at checked.
 */
export async function rankPairs(
  reads: RawReads,
  workspaceId: string,
  tsquery: Prisma.Sql,
  plan: ConjunctionPlan,
  { limit, perResult = CANDIDATES_PER_RESULT[0] }: CandidateDepth,
): Promise<PairRanking> {
  const pairPlan = plan.pairs;
  if (pairPlan === null) {
    return {
      applicable: false,
      deeper: false,
      kind: "and",
      items: 2,
      pairs: [],
      listsBound: null,
      prunedScore: null,
      hits: [],
    };
  }
  const depth = perResult * limit;
  // Each word's list only bounds the assets whose words stand apart ((a + b) / 3): a fixed depth
  // takes that bound below the pages the pair proves; deeper tries only read more of the pair.
  const listDepth = 10 * CANDIDATES_PER_RESULT[0] * limit;
  const pairs = JSON.stringify(pairPlan.pairs.map(([a, b]) => ({ a, b })));
  const and = pairPlan.kind === "and";
  // Scores are float4 sums: relative margins cover the rounding of ts_rank_cd's own summation.
  const rows = await reads.$queryRaw<
    Array<{
      applicable: boolean;
      deeper: boolean;
      pairs: Array<{ last: number | null; lastCreatedAt: string | null }> | null;
      lists_bound: number | null;
      pruned_score: number | null;
      hits: PairRanking["hits"] | null;
    }>
  >`
    WITH RECURSIVE q AS (SELECT ${tsquery} AS tsq),
    -- Two lexemes under a role are enough to know the role is not one lexeme.
    ${roleLexemes(workspaceId, plan, 2)},
    -- The lexemes some live asset of the workspace holds: a last word typed part-way ("nig") has a
    -- lexeme of its own that matches nothing, and its role is then what it expands to ("night").
    present AS (
      SELECT l.role, l.lexeme FROM lexemes l
       WHERE EXISTS (SELECT 1 FROM search_terms s WHERE s.workspace_id = ${workspaceId} AND s.lexeme = l.lexeme)),
    applicable AS (
      SELECT NOT EXISTS (SELECT 1 FROM present GROUP BY role HAVING count(*) > 1)
             AND (SELECT count(DISTINCT role) FROM present) = ${plan.roles.length}
             -- Two roles on one lexeme ("night nig") score every occurrence alone: not a pair's score.
             AND NOT EXISTS (SELECT 1 FROM present x JOIN present y ON x.role < y.role AND x.lexeme = y.lexeme) AS ok),
    pairs AS (
      SELECT DISTINCT least(p.a, p.b) AS a, greatest(p.a, p.b) AS b
        FROM (SELECT x.lexeme AS a, y.lexeme AS b FROM present x JOIN present y ON x.role = 0 AND y.role = 1
               WHERE ${and}
              UNION ALL
              SELECT j.a, j.b FROM json_to_recordset(${pairs}::json) AS j(a text, b text) WHERE NOT ${and}) p,
             applicable
       WHERE applicable.ok),
    ptaken AS (
      SELECT p.a, p.b, c.asset_id, c.score, c.created_at
        FROM pairs p
        CROSS JOIN LATERAL (
              SELECT s.asset_id, s.score, s.created_at FROM search_pairs s
               WHERE s.workspace_id = ${workspaceId} AND s.lexeme_a = p.a AND s.lexeme_b = p.b
               ORDER BY s.score DESC, s.created_at DESC, s.asset_id DESC
               LIMIT ${depth}) c),
    plast AS (
      SELECT p.a, p.b, count(t.asset_id) >= ${depth} AS cut, min(t.score) AS last
        FROM pairs p LEFT JOIN ptaken t ON t.a = p.a AND t.b = p.b
       GROUP BY p.a, p.b),
    plast_created AS (
      SELECT l.a, l.b, min(t.created_at) AS created_at
        FROM plast l JOIN ptaken t ON t.a = l.a AND t.b = l.b AND t.score = l.last
       GROUP BY l.a, l.b),
    -- Two words: a row's score is the query's own exact score for that asset (the query is the
    -- pair's, each word one lexeme), so only the rows that can still make the page are ranked.
    pkth AS (SELECT score FROM ptaken ORDER BY score DESC OFFSET ${limit - 1} LIMIT 1),
    pcands AS (
      SELECT DISTINCT asset_id FROM ptaken
       WHERE NOT ${and} OR NOT EXISTS (SELECT 1 FROM pkth) OR score::float8 >= (SELECT score FROM pkth) * (1 - 2e-5)),
    pranked AS (${rankedCandidates(workspaceId, limit, Prisma.sql`SELECT asset_id FROM pcands`)}),
    threshold AS (
      SELECT CASE WHEN count(*) >= ${limit} THEN min(score) END AS t FROM pranked),
    ltaken AS (
      SELECT l.lexeme, c.asset_id, c.score
        FROM (SELECT lexeme FROM present, applicable WHERE applicable.ok AND ${and}) l
        CROSS JOIN LATERAL (
              SELECT s.asset_id, s.score FROM search_terms s
               WHERE s.workspace_id = ${workspaceId} AND s.lexeme = l.lexeme
               ORDER BY s.score DESC, s.created_at DESC, s.asset_id DESC
               LIMIT ${listDepth}) c),
    llast AS (
      SELECT lexeme, count(*) >= ${listDepth} AS cut, min(score::float8) AS last FROM ltaken GROUP BY lexeme),
    lkept AS (
      SELECT t.asset_id
        FROM ltaken t
       WHERE NOT EXISTS (SELECT 1 FROM ptaken p WHERE p.asset_id = t.asset_id)
       GROUP BY t.asset_id
      HAVING (sum(t.score::float8)
              + CASE WHEN count(*) = 2 THEN 0
                     ELSE (SELECT CASE WHEN l.cut THEN l.last END FROM llast l WHERE l.lexeme <> min(t.lexeme)) END) / 3
             >= (SELECT th.t FROM threshold th) * (1 - 2e-5)),
    lranked AS (${rankedCandidates(workspaceId, limit, Prisma.sql`SELECT asset_id FROM lkept`)}),
    ranked AS (
      SELECT * FROM (SELECT * FROM pranked UNION ALL SELECT * FROM lranked) r
       ORDER BY score DESC, created_at DESC, id ASC
       LIMIT ${limit})
    SELECT (SELECT ok FROM applicable) AS applicable,
           EXISTS (SELECT 1 FROM plast WHERE cut) AS deeper,
           (SELECT json_agg(json_build_object('last', CASE WHEN l.cut THEN l.last::float8 END,
                                              'lastCreatedAt', CASE WHEN l.cut THEN c.created_at END))
              FROM plast l LEFT JOIN plast_created c ON c.a = l.a AND c.b = l.b) AS pairs,
           CASE WHEN (SELECT count(*) FILTER (WHERE cut) FROM llast) = 2
                THEN (SELECT sum(last) FROM llast) / 3 END AS lists_bound,
           (SELECT max(score::float8) FROM ptaken WHERE asset_id NOT IN (SELECT asset_id FROM pcands)) AS pruned_score,
           (SELECT json_agg(json_build_object('id', r.id, 'score', r.score, 'createdAt', r.created_at)
                            ORDER BY r.score DESC, r.created_at DESC, r.id ASC)
              FROM ranked r) AS hits`;
  const row = rows[0]!;
  return {
    applicable: row.applicable,
    deeper: row.applicable && row.deeper,
    kind: pairPlan.kind,
    items: pairPlan.items,
    pairs: (row.pairs ?? []).map((p) => ({
      last: p.last === null ? null : Number(p.last),
      lastCreatedAt: p.lastCreatedAt === null ? null : new Date(p.lastCreatedAt),
    })),
    listsBound: row.lists_bound === null ? null : Number(row.lists_bound),
    prunedScore: row.pruned_score === null ? null : Number(row.pruned_score),
    hits: rankedHits(row.hits),
  };
}

/**
 * True when the pair ranking's first `limit` hits are provably the exact ranking's: the last hit
 * scores above PAIR_MIN_SCORE and the words' lists bound (k/2 times these for a phrase of k
 * lexemes), and above the pair list's last score, or ties with it and is newer than that list's
 * last rows (the ranking's tie-break is created_at, newest first).
 */
export function pairsAreExact(r: PairRanking, limit: number): boolean {
  if (!r.applicable || r.hits.length < limit || r.pairs.length === 0) return false;
  const last = r.hits[limit - 1]!;
  const above = (bound: number) => scoresAbove(last, bound);
  const aboveOrNewer = (p: PairRanking["pairs"][number], factor: number) =>
    p.last === null || above(factor * p.last) || (factor === 1 && winsTie(last, p.last, p.lastCreatedAt));
  if (r.kind === "and") {
    if (r.prunedScore !== null && !above(r.prunedScore)) return false;
    return above(Math.max(PAIR_MIN_SCORE, r.listsBound ?? 0)) && aboveOrNewer(r.pairs[0]!, 1);
  }
  // A phrase scores at most k/2 times each adjacent pair's score: one pair whose bound it passes.
  const factor = r.items / 2;
  return above(factor * PAIR_MIN_SCORE) && r.pairs.some((p) => aboveOrNewer(p, factor));
}

/**
 * search_prefixes holds, per asset and first three letters of its lexemes, the sum of the scores of
 * its lexemes that start with them, when that sum is at least PREFIX_MIN_SCORE (fixed by the
 * 20261130020000_search_prefixes migration).
 */
export const PREFIX_MIN_SCORE = 0.25;

/** What the ranking of a one-word prefix from search_prefixes found, and what proves it exact. */
export interface PrefixRanking {
  /** The query is one word whose stemmed prefix has 3+ letters and covers the word's own lexeme. */
  applicable: boolean;
  /** The stemmed prefix is exactly the three letters of the list: a row's score is the asset's score. */
  exactScores: boolean;
  /** A deeper try could prove more: the list was cut. */
  deeper: boolean;
  /** The last score taken from the cut list and the oldest created_at at that score; null when complete. */
  last: number | null;
  lastCreatedAt: Date | null;
  /** The best row score left unranked (exact scores only: rows below the page), or null. */
  prunedScore: number | null;
  /** The candidates ranked exactly, best first. */
  hits: RankedHit[];
}

/**
 * The ranking of one word typed as a prefix ("sun": 'sun' | 'sun':*, a disjunction of every lexeme
 * starting with 'sun') from search_prefixes (threshold algorithm on one list). A row's score is the
 * sum of the asset's lexeme scores under the first three letters of the stemmed prefix: exactly the
 * asset's score when the prefix has three letters, at least it when longer. An asset without a row
 * scores below PREFIX_MIN_SCORE, one beyond the cut at most the list's last score.
 */
export async function rankPrefix(
  reads: RawReads,
  workspaceId: string,
  tsquery: Prisma.Sql,
  p: ParsedQuery,
  { limit, perResult = CANDIDATES_PER_RESULT[0] }: CandidateDepth,
): Promise<PrefixRanking> {
  const depth = perResult * limit;
  const rows = await reads.$queryRaw<
    Array<{
      applicable: boolean;
      exact_scores: boolean | null;
      cut: boolean | null;
      last: number | null;
      last_created_at: Date | null;
      pruned_score: number | null;
      hits: PrefixRanking["hits"] | null;
    }>
  >`
    WITH q AS (SELECT ${tsquery} AS tsq),
    parts AS (
      SELECT (regexp_match(to_tsquery('english', ${`${p.prefix ?? ""}:*`})::text, '^''([^'']+)'':\\*$'))[1] AS pre,
             (regexp_match(websearch_to_tsquery('english', ${p.web})::text, '^''([^'']+)''$'))[1] AS word,
             websearch_to_tsquery('english', ${p.web})::text = '' AS no_word),
    list AS (
      SELECT left(pre, 3) AS prefix, length(pre) = 3 AS exact
        FROM parts
       WHERE length(pre) >= 3 AND (no_word OR starts_with(word, pre))),
    taken AS (
      SELECT s.asset_id, s.score, s.created_at
        FROM list l
        CROSS JOIN LATERAL (
              SELECT s.asset_id, s.score, s.created_at FROM search_prefixes s
               WHERE s.workspace_id = ${workspaceId} AND s.prefix = l.prefix
               ORDER BY s.score DESC, s.created_at DESC, s.asset_id DESC
               LIMIT ${depth}) s),
    kth AS (SELECT score FROM taken ORDER BY score DESC OFFSET ${limit - 1} LIMIT 1),
    cands AS (
      SELECT asset_id FROM taken
       WHERE NOT (SELECT exact FROM list) OR NOT EXISTS (SELECT 1 FROM kth)
          OR score::float8 >= (SELECT score FROM kth) * (1 - 2e-5)),
    ranked AS (${rankedCandidates(workspaceId, limit, Prisma.sql`SELECT asset_id FROM cands`)}),
    last AS (SELECT min(score) AS score FROM taken)
    SELECT EXISTS (SELECT 1 FROM list) AS applicable,
           (SELECT exact FROM list) AS exact_scores,
           (SELECT count(*) >= ${depth} FROM taken) AS cut,
           (SELECT score::float8 FROM last) AS last,
           (SELECT min(t.created_at) FROM taken t, last WHERE t.score = last.score) AS last_created_at,
           (SELECT max(score::float8) FROM taken WHERE asset_id NOT IN (SELECT asset_id FROM cands)) AS pruned_score,
           (SELECT json_agg(json_build_object('id', r.id, 'score', r.score, 'createdAt', r.created_at)
                            ORDER BY r.score DESC, r.created_at DESC, r.id ASC)
              FROM ranked r) AS hits`;
  const row = rows[0]!;
  const cut = row.applicable && row.cut === true;
  return {
    applicable: row.applicable,
    exactScores: row.exact_scores === true,
    deeper: cut,
    last: cut && row.last !== null ? Number(row.last) : null,
    lastCreatedAt: cut && row.last_created_at !== null ? new Date(row.last_created_at) : null,
    prunedScore: row.pruned_score === null ? null : Number(row.pruned_score),
    hits: rankedHits(row.hits),
  };
}

/**
 * True when the prefix ranking's first `limit` hits are provably the exact ranking's: the last hit
 * scores above PREFIX_MIN_SCORE, above every row left unranked, and above the list's last score or
 * (scores exact) ties with it and is newer than the list's last rows.
 */
export function prefixIsExact(r: PrefixRanking, limit: number): boolean {
  if (!r.applicable || r.hits.length < limit) return false;
  const last = r.hits[limit - 1]!;
  const above = (bound: number) => scoresAbove(last, bound);
  if (!above(PREFIX_MIN_SCORE)) return false;
  if (r.prunedScore !== null && !above(r.prunedScore)) return false;
  if (r.last === null || above(r.last)) return true;
  return r.exactScores && winsTie(last, r.last, r.lastCreatedAt);
}
