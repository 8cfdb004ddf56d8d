import type { RawReads } from "../db/direct-reads";
import { Prisma, type Asset } from "../generated/prisma/client";

/**
 * Every scalar column of `assets`, named as Prisma's Asset fields (`workspace_id AS "workspaceId"`):
 * the schema maps each field to its snake_case column. Derived from Prisma's own field list, so a
 * new field is selected too (a field mapped otherwise fails loudly: test/asset-rows.test.ts).
 */
export const ASSET_COLUMNS = Object.values(Prisma.AssetScalarFieldEnum)
  .map((field) => `"${field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}" AS "${field}"`)
  .join(", ");

/**
 * The live assets of a workspace among `ids`, as the Asset rows findMany returns (same fields and
 * types), in no particular order. One plain statement: findMany through Prisma's query compiler
 * cost 0.4 ms more at the median and 2 ms more at p95 for a page of 25 (1M assets), a page of
 * search results being fetched on every full-text request.
 */
export function liveAssetsByIds(reads: RawReads, workspaceId: string, ids: string[]): Promise<Asset[]> {
  return reads.$queryRaw<Asset[]>`
    SELECT ${Prisma.raw(ASSET_COLUMNS)} FROM assets
     WHERE workspace_id = ${workspaceId} AND deleted_at IS NULL AND id = ANY(${ids}::uuid[])`;
}
