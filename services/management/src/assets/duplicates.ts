import type { DuplicateMatch } from "@media-platform/contracts";
import type { PrismaClient } from "../generated/prisma/client";

/** At most this many duplicates are reported. */
export const MAX_DUPLICATES = 50;

/**
 * Assets of the workspace with the same sha256 (exact) or a perceptual hash within `threshold`
 * bits (similar), closest first. The Hamming distance is computed in Postgres: bit_count of the XOR.
 */
export async function findDuplicates(
  prisma: PrismaClient,
  workspaceId: string,
  image: { sha256: string; phash: bigint },
  threshold: number,
): Promise<DuplicateMatch[]> {
  const rows = await prisma.$queryRaw<Array<{ id: string; exact: boolean; distance: number }>>`
    SELECT id::text AS id,
           (sha256 = ${image.sha256}) AS exact,
           bit_count((phash # ${image.phash}::bigint)::bit(64))::int AS distance
      FROM assets
     WHERE workspace_id = ${workspaceId}
       AND deleted_at IS NULL
       AND (sha256 = ${image.sha256} OR bit_count((phash # ${image.phash}::bigint)::bit(64)) <= ${threshold})
     ORDER BY exact DESC, distance ASC, created_at ASC, id ASC
     LIMIT ${MAX_DUPLICATES}`;
  return rows.map((r) => ({ assetId: r.id, match: r.exact ? "exact" : "similar", distance: Number(r.distance) }));
}
