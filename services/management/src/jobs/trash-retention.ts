import type { AppContext } from "../context";
import { purgeAssets } from "../lifecycle/service";
import { Periodic } from "./periodic";

/** Assets removed per transaction; the job loops until nothing is due. */
const BATCH = 100;

/**
 * Removes assets that have been in the trash for longer than TRASH_RETENTION_DAYS: rows, every
 * blob, caches (lifecycle/service.ts purgeAssets). Every replica runs it; the expired rows are
 * taken with FOR UPDATE SKIP LOCKED inside the deleting transaction, so two replicas never pick
 * the same asset and each asset is removed (and announced) exactly once.
 */
export async function sweepTrash(ctx: AppContext, retentionDays: number): Promise<number> {
  const cutoff = new Date(Date.now() - retentionDays * 86_400_000);
  let total = 0;
  for (;;) {
    const removed = await purgeAssets(
      ctx,
      (tx) => tx.$queryRaw`
        SELECT id::text AS id, workspace_id FROM assets
         WHERE deleted_at IS NOT NULL AND deleted_at < ${cutoff}
         ORDER BY deleted_at
         LIMIT ${BATCH}
           FOR UPDATE SKIP LOCKED`,
    );
    total += removed.length;
    if (removed.length > 0) ctx.log.info({ removed: removed.length }, "trash retention: expired assets removed");
    if (removed.length < BATCH) return total;
  }
}

export function trashRetentionJob(ctx: AppContext, retentionDays: number, intervalMs: number): Periodic {
  return new Periodic(intervalMs, () => sweepTrash(ctx, retentionDays), ctx.log, "trash retention");
}
