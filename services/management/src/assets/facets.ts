import {
  FACET_EXACT_LIMIT,
  FACET_VALUES_LIMIT,
  type FacetField,
  type ListAssetsResponse,
} from "@media-platform/contracts";
import type { RawReads } from "../db/direct-reads";
import { Prisma } from "../generated/prisma/client";

export type FacetsResult = Pick<ListAssetsResponse, "facets" | "facetsAreEstimates">;

/** The SQL value of each facet field, one row per value an asset has. */
const FACET_VALUES: Record<FacetField, Prisma.Sql> = {
  tags: Prisma.sql`SELECT unnest(m.user_tags) AS v FROM m`,
  collectionId: Prisma.sql`SELECT m.collection_id::text AS v FROM m WHERE m.collection_id IS NOT NULL`,
  format: Prisma.sql`SELECT m.format AS v FROM m`,
};

/**
 * Matches a sampled count aims at: the share of the table sampled is this over the planner's
 * estimate of the matches. A value held by 5% of the result is then counted within about 9%.
 */
export const FACET_SAMPLE_SIZE = 2_500;
/**
 * Most table pages a sample reads (16 MB): a result that is a small share of the table is sampled
 * more thinly rather than read at length.
 */
export const FACET_SAMPLE_MAX_PAGES = 2_000;
/**
 * Largest share (%) of a table larger than a quarter of shared_buffers a sample reads: Postgres
 * reads a SYSTEM sample of 1% or more of such a table through a small ring of buffers (bulk read),
 * so its blocks never stay cached; below 1% they do, and the fixed seed samples the same blocks.
 */
export const FACET_SAMPLE_CACHED_PERCENT = 0.99;
/**
 * Fewest matches a sample must expect to hold to be taken; a result too thin in the table for that
 * (a small workspace among many) is counted through its index instead, as below the limit.
 */
export const FACET_SAMPLE_MIN = 250;
/**
 * The sample's seed: the same blocks for every request, so a result's estimates stay the same from
 * page to page and the blocks stay cached.
 */
const FACET_SAMPLE_SEED = 50;

interface Counted {
  /** Matches counted. */
  n: number;
  values: Partial<Record<FacetField, Array<{ value: string; count: number }>>>;
}

/**
 * The FACET_VALUES_LIMIT most frequent values of each field over the assets matching `conditions`
 * (the whole result, not the page). Up to FACET_EXACT_LIMIT matches the counts are exact. Above,
 * they are counted over a block sample of the table (TABLESAMPLE SYSTEM, fixed seed: every part of
 * the result alike, whatever its order on disk), sized from the planner's estimate
 * (`estimatedTotal`) to hold about FACET_SAMPLE_SIZE matches, within FACET_SAMPLE_MAX_PAGES pages
 * and FACET_SAMPLE_CACHED_PERCENT of a large table, and scaled by the sampled share: flagged
 * facetsAreEstimates. A sample suggesting at most 2 * FACET_EXACT_LIMIT matches is checked by the
 * exact statement. When no sample is taken (the planner expects at most FACET_EXACT_LIMIT matches,
 * or fewer than FACET_SAMPLE_MIN in the sample) and the exact statement finds more, its first
 * FACET_EXACT_LIMIT + 1 matches are scaled to the estimate.
 */
export async function countFacets(
  reads: RawReads,
  fields: readonly FacetField[],
  conditions: Prisma.Sql,
  estimatedTotal: () => Promise<number>,
): Promise<FacetsResult> {
  if (fields.length === 0) return {};
  const [estimate, table] = await Promise.all([estimatedTotal(), tableSize(reads)]);
  const percent = Math.min(
    (100 * FACET_SAMPLE_SIZE) / Math.max(estimate, 1),
    (100 * FACET_SAMPLE_MAX_PAGES) / Math.max(table.pages, 1),
    table.pages > table.buffers / 4 ? FACET_SAMPLE_CACHED_PERCENT : 100,
  );
  const sample =
    estimate > FACET_EXACT_LIMIT && (estimate * percent) / 100 >= FACET_SAMPLE_MIN
      ? await countMatches(
          reads,
          fields,
          Prisma.sql`assets TABLESAMPLE SYSTEM (${percent}::float4) REPEATABLE (${FACET_SAMPLE_SEED}) WHERE ${conditions}`,
        )
      : undefined;
  const sampledTotal = sample ? (sample.n * 100) / percent : 0;
  if (sample && sampledTotal > 2 * FACET_EXACT_LIMIT) return scaled(fields, sample, sampledTotal / sample.n);

  const exact = await countMatches(
    reads,
    fields,
    Prisma.sql`assets WHERE ${conditions} LIMIT ${FACET_EXACT_LIMIT + 1}`,
  );
  if (exact.n <= FACET_EXACT_LIMIT) return { facets: facetsOf(fields, exact, 1) };
  if (sample && sample.n > 0) return scaled(fields, sample, Math.max(sampledTotal, FACET_EXACT_LIMIT + 1) / sample.n);
  return scaled(fields, exact, Math.max(estimate, FACET_EXACT_LIMIT + 1) / exact.n);
}

/** The table's size in pages (from its file: no statistics needed) and shared_buffers, in pages. */
async function tableSize(reads: RawReads): Promise<{ pages: number; buffers: number }> {
  const rows = await reads.$queryRaw<Array<{ pages: number; buffers: number }>>`
    SELECT (pg_relation_size('assets') / current_setting('block_size')::int)::float8 AS pages,
           (SELECT setting::float8 FROM pg_settings WHERE name = 'shared_buffers') AS buffers`;
  return { pages: Number(rows[0]?.pages ?? 0), buffers: Number(rows[0]?.buffers ?? 0) };
}

/** The facet values of the rows `source` (FROM ... WHERE ..., on assets) yields, in one statement. */
async function countMatches(reads: RawReads, fields: readonly FacetField[], source: Prisma.Sql): Promise<Counted> {
  const columns = fields.map(
    (
      f,
    ) => Prisma.sql`(SELECT coalesce(json_agg(json_build_object('value', x.v, 'count', x.c) ORDER BY x.c DESC, x.v), '[]')
                         FROM (SELECT v, count(*)::int AS c FROM (${FACET_VALUES[f]}) vals
                                GROUP BY v ORDER BY c DESC, v LIMIT ${FACET_VALUES_LIMIT}) x) AS ${Prisma.raw(`"${f}"`)}`,
  );
  const rows = await reads.$queryRaw<Array<Record<string, unknown> & { n: number }>>`
    WITH m AS MATERIALIZED (SELECT user_tags, collection_id, format FROM ${source})
    SELECT (SELECT count(*)::int FROM m) AS n, ${Prisma.join(columns, ", ")}`;
  const row = rows[0]!;
  const values: Counted["values"] = {};
  for (const f of fields) values[f] = (row[f] as Array<{ value: string; count: number }> | null) ?? [];
  return { n: Number(row.n), values };
}

function facetsOf(fields: readonly FacetField[], counted: Counted, scale: number): NonNullable<FacetsResult["facets"]> {
  const facets: NonNullable<FacetsResult["facets"]> = {};
  for (const f of fields) {
    facets[f] = (counted.values[f] ?? []).map((v) => ({ value: v.value, count: Math.round(Number(v.count) * scale) }));
  }
  return facets;
}

const scaled = (fields: readonly FacetField[], counted: Counted, scale: number): FacetsResult => ({
  facets: facetsOf(fields, counted, scale),
  facetsAreEstimates: true,
});
