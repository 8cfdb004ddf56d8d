import { buffer } from "node:stream/consumers";
import type { Logger } from "pino";
import { USAGE_REPORT_PREFIX, usageReportSchema, type UsageReport } from "@media-platform/contracts";
import type { BlobStore } from "@media-platform/storage";
import type { PrismaClient } from "../generated/prisma/client";
import type { ManagementMetrics } from "../metrics";

export interface IngestDeps {
  prisma: PrismaClient;
  blobStore: BlobStore;
  log: Logger;
}

/** Reports read per run: a backlog is worked off over several runs. */
const REPORTS_PER_RUN = 500;

/**
 * Counts the media service's usage reports (renders and bytes sent per asset and day) into
 * usage_daily, per workspace of each asset. Each report is counted exactly once, also with several
 * replicas ingesting: its name is inserted into usage_reports in the same transaction as the
 * counts, and a name already there is skipped. The blob is deleted afterwards; a leftover one is
 * skipped and deleted by the next run. Assets purged before their report arrives are not counted.
 */
export async function ingestUsageReports(deps: IngestDeps): Promise<number> {
  if (!deps.blobStore.list) return 0;
  let counted = 0;
  let seen = 0;
  for await (const blob of deps.blobStore.list(USAGE_REPORT_PREFIX)) {
    if (seen++ >= REPORTS_PER_RUN) break;
    const id = blob.key;
    const object = await deps.blobStore.get(id);
    if (!object) continue;
    let report: UsageReport;
    try {
      report = usageReportSchema.parse(JSON.parse((await buffer(object.body)).toString("utf8")));
    } catch (err) {
      deps.log.warn({ err, key: id }, "unreadable usage report removed");
      await deps.blobStore.delete(id);
      continue;
    } finally {
      object.release();
    }
    if (await countReport(deps.prisma, id, report)) counted++;
    await deps.blobStore.delete(id);
  }
  return counted;
}

async function countReport(prisma: PrismaClient, id: string, report: UsageReport): Promise<boolean> {
  const assetIds = new Set<string>();
  for (const assets of Object.values(report.days)) for (const assetId of Object.keys(assets)) assetIds.add(assetId);
  const uuids = [...assetIds].filter((a) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(a));
  return prisma.$transaction(async (tx) => {
    const inserted = await tx.$executeRaw`INSERT INTO usage_reports (id) VALUES (${id}) ON CONFLICT DO NOTHING`;
    if (inserted === 0) return false;
    const owners = await tx.asset.findMany({ where: { id: { in: uuids } }, select: { id: true, workspaceId: true } });
    const ownerOf = new Map(owners.map((o) => [o.id, o.workspaceId]));
    for (const [day, assets] of Object.entries(report.days)) {
      const totals = new Map<string, [number, number]>();
      for (const [assetId, [renders, egress]] of Object.entries(assets)) {
        const ws = ownerOf.get(assetId);
        if (!ws) continue;
        const t = totals.get(ws) ?? [0, 0];
        totals.set(ws, [t[0] + renders, t[1] + egress]);
      }
      for (const [ws, [renders, egress]] of totals) {
        await tx.$executeRaw`
          INSERT INTO usage_daily (workspace_id, day, renders, egress_bytes)
          VALUES (${ws}, ${day}::date, ${renders}, ${egress})
          ON CONFLICT (workspace_id, day) DO UPDATE
            SET renders = usage_daily.renders + EXCLUDED.renders,
                egress_bytes = usage_daily.egress_bytes + EXCLUDED.egress_bytes`;
      }
    }
    return true;
  });
}

/** Sets the per-workspace gauges (WORKSPACE_USAGE_METRICS) from one grouped query. */
export async function refreshUsageGauges(
  prisma: PrismaClient,
  gauges: Pick<ManagementMetrics, "workspaceStorageBytes" | "workspaceAssets">,
): Promise<void> {
  const rows = await prisma.$queryRaw<Array<{ workspace_id: string; bytes: bigint; assets: bigint }>>`
    SELECT a.workspace_id,
           (sum(a.bytes) + COALESCE(sum(v.bytes), 0))::bigint AS bytes,
           count(*)::bigint AS assets
      FROM assets a
      LEFT JOIN LATERAL (SELECT sum(bytes) AS bytes FROM asset_versions WHERE asset_id = a.id) v ON true
     GROUP BY a.workspace_id`;
  gauges.workspaceStorageBytes.reset();
  gauges.workspaceAssets.reset();
  for (const r of rows) {
    gauges.workspaceStorageBytes.set({ workspace: r.workspace_id }, Number(r.bytes));
    gauges.workspaceAssets.set({ workspace: r.workspace_id }, Number(r.assets));
  }
}
