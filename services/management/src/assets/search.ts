import { Prisma, type PrismaClient } from "../generated/prisma/client";

/** ts_rank_cd weights in Postgres order {D, C, B, A}: filename, caption/description, tags, title. */
const WEIGHTS = "{0.1,0.2,0.4,1.0}";
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

export interface ScoredId {
  id: string;
  score: number;
}

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
  prisma: PrismaClient,
  workspaceId: string,
  q: string,
  limit: number,
): Promise<ScoredId[]> {
  const p = parseQuery(q);
  const tsquery =
    p.prefix !== null
      ? Prisma.sql`(websearch_to_tsquery('english', ${p.web}) || (websearch_to_tsquery('english', ${p.head ?? ""}) && to_tsquery('english', ${`${p.prefix}:*`})))`
      : Prisma.sql`websearch_to_tsquery('english', ${p.web})`;
  const ranked = await rankedSearch(prisma, workspaceId, tsquery, limit);
  // The typo fallback is for plain words; an explicit phrase ("...") stays exact.
  if (ranked.length > 0 || p.plain.length < 3 || p.web.includes('"')) return ranked;

  const corrections = await spellingCorrections(prisma, workspaceId, p.plain);
  if (corrections.length === 0) return [];
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
  return rankedSearch(prisma, workspaceId, corrected, limit);
}

async function rankedSearch(
  prisma: PrismaClient,
  workspaceId: string,
  tsquery: Prisma.Sql,
  limit: number,
): Promise<ScoredId[]> {
  const rows = await prisma.$queryRaw<Array<{ id: string; score: number }>>`
    SELECT a.id::text AS id, ts_rank_cd(${WEIGHTS}::float4[], a.search_vector, q.tsq)::float8 AS score
      FROM assets a, (SELECT ${tsquery} AS tsq) q
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
export async function spellingCorrections(
  prisma: PrismaClient,
  workspaceId: string,
  plain: string,
): Promise<Correction[]> {
  return prisma.$transaction(async (tx) => {
    // Transaction-local: the `<%` operator (GIN-indexable) uses this threshold.
    await tx.$queryRaw`SELECT set_config('pg_trgm.word_similarity_threshold', ${String(TRIGRAM_THRESHOLD)}, true)`;
    return tx.$queryRaw<Correction[]>`
      SELECT w.word, array_agg(s.word ORDER BY s.sim DESC, s.word) AS suggestions,
             tsvector_to_array(to_tsvector('english', string_agg(s.word, ' '))) AS lexemes
        FROM (SELECT DISTINCT t.lexeme AS word
                FROM unnest(to_tsvector('simple', ${plain})) AS t
               WHERE t.lexeme ~ ${SEARCH_WORD_PATTERN}
                 AND numnode(plainto_tsquery('english', t.lexeme)) > 0) w
        CROSS JOIN LATERAL (
              SELECT d.word, similarity(w.word, d.word) AS sim
                FROM search_words d
               WHERE d.workspace_id = ${workspaceId}
                 AND w.word <% d.word
                 AND d.word <> w.word
               ORDER BY sim DESC, d.word
               LIMIT ${SUGGESTIONS_PER_WORD}) s
       WHERE NOT EXISTS (SELECT 1 FROM assets a
                          WHERE a.workspace_id = ${workspaceId}
                            AND a.search_vector @@ plainto_tsquery('english', w.word))
       GROUP BY w.word
       ORDER BY w.word`;
  });
}
