import type { AppContext } from "../context";

/**
 * Receipts of finished resumable uploads: the asset an upload became, so a client that lost the
 * completing answer learns it with HEAD. Scoped by workspace like every other query.
 */
export interface UploadReceipt {
  assetId: string;
  size: number;
}

export async function recordUploadReceipt(
  ctx: Pick<AppContext, "prisma">,
  receipt: { uploadId: string; workspaceId: string; assetId: string; size: number },
): Promise<void> {
  await ctx.prisma.uploadReceipt.upsert({
    where: { uploadId: receipt.uploadId },
    create: receipt,
    update: {},
  });
}

export async function findUploadReceipt(
  ctx: Pick<AppContext, "prisma">,
  workspaceId: string,
  uploadId: string,
): Promise<UploadReceipt | null> {
  return ctx.prisma.uploadReceipt.findFirst({
    where: { uploadId, workspaceId },
    select: { assetId: true, size: true },
  });
}

/** Removes receipts older than `olderThanMs` (an upload's expiry); returns how many. */
export async function sweepUploadReceipts(ctx: Pick<AppContext, "prisma">, olderThanMs: number): Promise<number> {
  const { count } = await ctx.prisma.uploadReceipt.deleteMany({
    where: { createdAt: { lt: new Date(Date.now() - olderThanMs) } },
  });
  return count;
}
