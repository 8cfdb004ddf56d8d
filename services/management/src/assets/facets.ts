import {
  FACET_EXACT_LIMIT,
  FACET_VALUES_LIMIT,
  type FacetField,
  type ListAssetsResponse,
} from "@media-platform/contracts";
import { Prisma, type PrismaClient } from "../generated/prisma/client";

export type FacetsResult = Pick<ListAssetsResponse, "facets" | "facetsAreEstimates">;

/** The SQL value of each facet field, one row per value an asset has. */
const FACET_VALUES: Record<FacetField, Prisma.Sql> = {
  tags: Prisma.sql`SELECT t AS v FROM m, unnest(m.user_tags) AS t`,
  collectionId: Prisma.sql`SELECT m.collection_id::text AS v FROM m WHERE m.collection_id IS NOT NULL`,
  format: Prisma.sql`SELECT m.format AS v FROM m`,
};

/**
 * The FACET_VALUES_LIMIT most frequent values of each field over the assets matching `conditions`
 * (the whole result, not the page), in one statement. Up to FACET_EXACT_LIMIT matches the counts
 * are exact; above, they are counted over the first FACET_EXACT_LIMIT matches the database finds
 * (not a random sample) and scaled by `estimatedTotal` / FACET_EXACT_LIMIT, flagged
 * facetsAreEstimates.
 */
export async function countFacets(
  prisma: PrismaClient,
  fields: readonly FacetField[],
  conditions: Prisma.Sql,
  estimatedTotal: () => Promise<number>,
): Promise<FacetsResult> {
  if (fields.length === 0) return {};
  const columns = fields.map(
    (
      f,
    ) => Prisma.sql`(SELECT coalesce(json_agg(json_build_object('value', x.v, 'count', x.c) ORDER BY x.c DESC, x.v), '[]')
                         FROM (SELECT v, count(*)::int AS c FROM (${FACET_VALUES[f]}) vals
                                GROUP BY v ORDER BY c DESC, v LIMIT ${FACET_VALUES_LIMIT}) x) AS ${Prisma.raw(`"${f}"`)}`,
  );
  const rows = await prisma.$queryRaw<Array<Record<string, unknown> & { n: number }>>`
    WITH m AS MATERIALIZED (
      SELECT user_tags, collection_id, format FROM assets WHERE ${conditions} LIMIT ${FACET_EXACT_LIMIT + 1})
    SELECT (SELECT count(*)::int FROM m) AS n, ${Prisma.join(columns, ", ")}`;
  const row = rows[0]!;
  const sampled = Number(row.n) > FACET_EXACT_LIMIT;
  const scale = sampled ? Math.max(await estimatedTotal(), FACET_EXACT_LIMIT + 1) / (FACET_EXACT_LIMIT + 1) : 1;
  const facets: NonNullable<FacetsResult["facets"]> = {};
  for (const f of fields) {
    const values = (row[f] as Array<{ value: string; count: number }> | null) ?? [];
    facets[f] = values.map((v) => ({ value: v.value, count: Math.round(Number(v.count) * scale) }));
  }
  return sampled ? { facets, facetsAreEstimates: true } : { facets };
}
