import { Prisma, type PrismaClient } from "../generated/prisma/client";

/** ts_rank_cd weights in Postgres order {D, C, B, A}: filename, caption/description, tags, title. */
const WEIGHTS = "{0.1,0.2,0.4,1.0}";
/** word_similarity threshold of the typo fallback (pg_trgm's default 0.6 misses one-letter typos in short words). */
export const TRIGRAM_THRESHOLD = 0.4;

export interface ParsedQuery {
  /** The query as typed, for websearch_to_tsquery. */
  web: string;
  /** The query without its last word, when the last word gets a prefix match. */
  head: string | null;
  /** Sanitised last word for `to_tsquery('english', '<word>:*')`, or null. */
  prefix: string | null;
  /** Positive words without operators, lower-cased: the input of the trigram fallback. */
  plain: string;
  /** Excluded (-word) words, joined with "or", for the fallback's exclusion. */
  excluded: string | null;
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
  const negatives: string[] = [];
  let inQuote = false;
  for (const raw of tokens) {
    const startsQuote = raw.startsWith('"') || raw.startsWith('-"');
    const negated = !inQuote && raw.startsWith("-");
    if (startsQuote && !inQuote) inQuote = true;
    const cleaned = raw.replace(/["]/g, "").replace(/^-+/, "").toLowerCase();
    if ((raw.endsWith('"') && raw.length > 1) || (raw === '"' && inQuote && !startsQuote)) inQuote = false;
    if (!cleaned || cleaned === "or") continue;
    (negated ? negatives : positives).push(cleaned);
  }
  return {
    web,
    head,
    prefix,
    plain: positives.join(" ").slice(0, 200),
    excluded: negatives.length > 0 ? negatives.filter((w) => WORD.test(w)).join(" or ") || null : null,
  };
}

export interface ScoredId {
  id: string;
  score: number;
}

/**
 * Ranked full-text search of one workspace. First `websearch_to_tsquery` (stemming, quotes, -term,
 * or) OR-ed with a prefix match on the last word, ranked by ts_rank_cd over the weighted
 * search_vector (GIN index). Only when that finds nothing, pg_trgm word similarity over search_text
 * (trigram GIN index) finds near-misses such as typos. Same SQL on PGlite and Postgres.
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
  const ranked = await prisma.$queryRaw<Array<{ id: string; score: number }>>`
    SELECT a.id::text AS id, ts_rank_cd(${WEIGHTS}::float4[], a.search_vector, q.tsq)::float8 AS score
      FROM assets a, (SELECT ${tsquery} AS tsq) q
     WHERE a.workspace_id = ${workspaceId}
       AND a.search_vector @@ q.tsq
     ORDER BY score DESC, a.created_at DESC, a.id ASC
     LIMIT ${limit}`;
  // The typo fallback is for plain words; an explicit phrase ("...") stays exact.
  if (ranked.length > 0 || p.plain.length < 3 || p.web.includes('"'))
    return ranked.map((r) => ({ id: r.id, score: Number(r.score) }));

  const exclusion =
    p.excluded !== null
      ? Prisma.sql`AND NOT (coalesce(a.search_vector, ''::tsvector) @@ websearch_to_tsquery('english', ${p.excluded}))`
      : Prisma.empty;
  const fuzzy = await prisma.$transaction(async (tx) => {
    // Transaction-local: the `<%` operator (GIN-indexable) uses this threshold.
    await tx.$queryRaw`SELECT set_config('pg_trgm.word_similarity_threshold', ${String(TRIGRAM_THRESHOLD)}, true)`;
    return tx.$queryRaw<Array<{ id: string; score: number }>>`
      SELECT a.id::text AS id, word_similarity(${p.plain}, a.search_text)::float8 AS score
        FROM assets a
       WHERE a.workspace_id = ${workspaceId}
         AND ${p.plain} <% a.search_text
         ${exclusion}
       ORDER BY score DESC, a.created_at DESC, a.id ASC
       LIMIT ${limit}`;
  });
  return fuzzy.map((r) => ({ id: r.id, score: Number(r.score) }));
}
