import { USAGE_DAYS, type PutQuotas, type UsageResponse } from "@media-platform/contracts";
import { actorOf, recordAudit } from "../audit/log";
import type { Principal } from "../auth/keys";
import type { AppContext } from "../context";
import { QuotaExceededError } from "../domain-errors";
import type { Prisma } from "../generated/prisma/client";

interface Stored {
  storageBytes: number;
  assets: number;
}

type Limits = UsageResponse["quotas"];

/** Bytes (current originals, versions, the trash) and assets (the trash included) a workspace holds. */
export async function storedUsage(ctx: AppContext, workspaceId: string): Promise<Stored> {
  const [row] = await ctx.prisma.$queryRaw<Array<{ bytes: bigint; assets: bigint; versions: bigint }>>`
    SELECT COALESCE((SELECT sum(bytes) FROM assets WHERE workspace_id = ${workspaceId}), 0)::bigint AS bytes,
           (SELECT count(*) FROM assets WHERE workspace_id = ${workspaceId})::bigint AS assets,
           COALESCE((SELECT sum(v.bytes) FROM asset_versions v JOIN assets a ON a.id = v.asset_id
                      WHERE a.workspace_id = ${workspaceId}), 0)::bigint AS versions`;
  return { storageBytes: Number(row!.bytes) + Number(row!.versions), assets: Number(row!.assets) };
}

async function limitsOf(ctx: AppContext, workspaceId: string): Promise<Limits> {
  const own = await ctx.prisma.workspaceQuota.findUnique({ where: { workspaceId } });
  const defaults = ctx.quotas ?? {};
  const pick = (override: number | null | undefined, fallback: number | undefined) =>
    override !== null && override !== undefined
      ? { limit: override, source: "workspace" as const }
      : fallback !== undefined
        ? { limit: fallback, source: "default" as const }
        : { limit: null, source: "none" as const };
  return {
    storageBytes: pick(own?.storageBytes == null ? null : Number(own.storageBytes), defaults.storageBytes),
    assets: pick(own?.assets, defaults.assets),
  };
}

const utcDay = (d: Date) => d.toISOString().slice(0, 10);

export async function getUsage(ctx: AppContext, workspaceId: string): Promise<UsageResponse> {
  const [stored, quotas] = await Promise.all([storedUsage(ctx, workspaceId), limitsOf(ctx, workspaceId)]);
  const today = new Date(`${utcDay(new Date())}T00:00:00Z`);
  const first = new Date(today.getTime() - (USAGE_DAYS - 1) * 86_400_000);
  const rows = await ctx.prisma.usageDaily.findMany({ where: { workspaceId, day: { gte: first } } });
  const byDay = new Map(rows.map((r) => [utcDay(r.day), r]));
  const days: UsageResponse["days"] = [];
  for (let i = 0; i < USAGE_DAYS; i++) {
    const date = utcDay(new Date(first.getTime() + i * 86_400_000));
    const r = byDay.get(date);
    days.push({
      date,
      uploads: r?.uploads ?? 0,
      renders: Number(r?.renders ?? 0),
      egressBytes: Number(r?.egressBytes ?? 0),
    });
  }
  return { workspaceId, ...stored, quotas, days };
}

/**
 * Refuses (QuotaExceededError) what would take the workspace past a quota: `bytes` more stored
 * and `assets` more assets. Checked before the bytes are stored; uploads running at the same
 * moment may each pass it, so a workspace can end above its limit by what those add.
 */
export async function assertWithinQuota(
  ctx: AppContext,
  workspaceId: string,
  adding: { bytes: number; assets: number },
): Promise<void> {
  const defaults = ctx.quotas;
  const anyDefault = defaults?.storageBytes !== undefined || defaults?.assets !== undefined;
  const limits = await limitsOf(ctx, workspaceId);
  if (!anyDefault && limits.storageBytes.limit === null && limits.assets.limit === null) return;
  const stored = await storedUsage(ctx, workspaceId);
  const assetLimit = limits.assets.limit;
  if (assetLimit !== null && adding.assets > 0 && stored.assets + adding.assets > assetLimit)
    throw new QuotaExceededError("assets", stored.assets, assetLimit);
  const byteLimit = limits.storageBytes.limit;
  if (byteLimit !== null && stored.storageBytes + adding.bytes > byteLimit)
    throw new QuotaExceededError("storageBytes", stored.storageBytes, byteLimit);
}

/** Counts an upload or replace in today's row, in the transaction that records it. */
export async function countUpload(tx: Prisma.TransactionClient, workspaceId: string): Promise<void> {
  await tx.$executeRaw`
    INSERT INTO usage_daily (workspace_id, day, uploads) VALUES (${workspaceId}, (now() AT TIME ZONE 'UTC')::date, 1)
    ON CONFLICT (workspace_id, day) DO UPDATE SET uploads = usage_daily.uploads + 1`;
}

/** PUT /v1/usage/quotas: the workspace's own limits (null = back to the default), audited. */
export async function putQuotas(ctx: AppContext, principal: Principal, input: PutQuotas): Promise<UsageResponse> {
  const { workspaceId } = principal;
  await ctx.prisma.$transaction(async (tx) => {
    const before = await tx.workspaceQuota.findUnique({ where: { workspaceId } });
    const data = {
      ...(input.storageBytes !== undefined && {
        storageBytes: input.storageBytes === null ? null : BigInt(input.storageBytes),
      }),
      ...(input.assets !== undefined && { assets: input.assets }),
      updatedAt: new Date(),
    };
    await tx.workspaceQuota.upsert({ where: { workspaceId }, create: { workspaceId, ...data }, update: data });
    await recordAudit(tx, {
      workspaceId,
      action: "quota.changed",
      actor: actorOf(principal),
      details: {
        before: {
          storageBytes: before?.storageBytes == null ? null : Number(before.storageBytes),
          assets: before?.assets ?? null,
        },
        set: input,
      },
    });
  });
  return getUsage(ctx, workspaceId);
}
