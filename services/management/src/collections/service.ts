import { randomUUID } from "node:crypto";
import type {
  CollectionDto,
  CreateCollection,
  DeleteCollectionQuery,
  ListCollectionsResponse,
} from "@media-platform/contracts";
import type { AppContext } from "../context";
import type { Principal } from "../auth/keys";
import { Prisma, type Collection } from "../generated/prisma/client";
import { ConflictError, NotFoundError } from "../domain-errors";
import { trashAssets } from "../lifecycle/service";
import { recordEvents, type Tx } from "../webhooks/outbox";

export function serializeCollection(c: Collection, assetCount: number): CollectionDto {
  return {
    id: c.id,
    name: c.name,
    assetCount,
    createdAt: c.createdAt.toISOString(),
    updatedAt: c.updatedAt.toISOString(),
  };
}

export async function listCollections(ctx: AppContext, principal: Principal): Promise<ListCollectionsResponse> {
  const rows = await ctx.prisma.collection.findMany({
    where: { workspaceId: principal.workspaceId },
    orderBy: [{ name: "asc" }, { id: "asc" }],
    include: { _count: { select: { assets: { where: { deletedAt: null } } } } },
  });
  return { count: rows.length, collections: rows.map((r) => serializeCollection(r, r._count.assets)) };
}

export async function createCollection(
  ctx: AppContext,
  principal: Principal,
  input: CreateCollection,
): Promise<CollectionDto> {
  try {
    return await ctx.prisma.$transaction(async (tx) => {
      const created = await tx.collection.create({
        data: { id: randomUUID(), workspaceId: principal.workspaceId, name: input.name },
      });
      const dto = serializeCollection(created, 0);
      await recordEvents(tx, ctx.webhookUrls ?? [], [
        { type: "collection.created", workspaceId: principal.workspaceId, data: { ...dto } },
      ]);
      return dto;
    });
  } catch (err) {
    if (err instanceof Prisma.PrismaClientKnownRequestError && err.code === "P2002") {
      // The name stays out of the detail: details are logged, and a name is what a user wrote.
      throw new ConflictError("A collection of this name already exists in this workspace", [
        { path: "body.name", message: "must be unique within the workspace" },
      ]);
    }
    throw err;
  }
}

/**
 * Deletes the collection; its assets stay, with collectionId null (and a new updatedAt). With
 * `withAssets`, its live assets go to the trash first, in the same transaction.
 */
export async function deleteCollection(
  ctx: AppContext,
  principal: Principal,
  id: string,
  options: DeleteCollectionQuery = {},
): Promise<void> {
  const { workspaceId } = principal;
  const remove = async (tx: Tx): Promise<boolean> => {
    const found = await tx.collection.findFirst({ where: { id, workspaceId }, select: { id: true } });
    if (!found) return false;
    await tx.asset.updateMany({ where: { workspaceId, collectionId: id }, data: { collectionId: null } });
    await tx.collection.delete({ where: { id } });
    await recordEvents(tx, ctx.webhookUrls ?? [], [{ type: "collection.deleted", workspaceId, data: { id } }]);
    return true;
  };
  let deleted = false;
  if (options.withAssets) {
    const exists = await ctx.prisma.collection.count({ where: { id, workspaceId } });
    if (exists > 0) {
      const members = await ctx.prisma.asset.findMany({
        where: { workspaceId, collectionId: id, deletedAt: null },
        select: { id: true },
      });
      await trashAssets(
        ctx,
        workspaceId,
        members.map((m) => m.id),
        async (tx) => {
          deleted = await remove(tx);
        },
      );
    }
  } else {
    deleted = await ctx.prisma.$transaction(remove);
  }
  if (!deleted) throw new NotFoundError("Collection not found");
}
