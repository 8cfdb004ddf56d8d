import { randomUUID } from "node:crypto";
import type { CollectionDto, CreateCollection, ListCollectionsResponse } from "@media-platform/contracts";
import type { AppContext } from "../context";
import type { Principal } from "../auth/keys";
import { Prisma, type Collection } from "../generated/prisma/client";
import { ProblemError, notFound } from "../problem";

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
    include: { _count: { select: { assets: true } } },
  });
  return { count: rows.length, collections: rows.map((r) => serializeCollection(r, r._count.assets)) };
}

export async function createCollection(
  ctx: AppContext,
  principal: Principal,
  input: CreateCollection,
): Promise<CollectionDto> {
  try {
    const created = await ctx.prisma.collection.create({
      data: { id: randomUUID(), workspaceId: principal.workspaceId, name: input.name },
    });
    return serializeCollection(created, 0);
  } catch (err) {
    if (err instanceof Prisma.PrismaClientKnownRequestError && err.code === "P2002") {
      throw new ProblemError(
        409,
        "conflict",
        `A collection named ${JSON.stringify(input.name)} already exists in this workspace`,
        {
          errors: [{ path: "body.name", message: "must be unique within the workspace" }],
        },
      );
    }
    throw err;
  }
}

/** Deletes the collection; its assets stay, with collectionId null (and a new updatedAt). */
export async function deleteCollection(ctx: AppContext, principal: Principal, id: string): Promise<void> {
  const { workspaceId } = principal;
  const deleted = await ctx.prisma.$transaction(async (tx) => {
    const found = await tx.collection.findFirst({ where: { id, workspaceId }, select: { id: true } });
    if (!found) return false;
    await tx.asset.updateMany({ where: { workspaceId, collectionId: id }, data: { collectionId: null } });
    await tx.collection.delete({ where: { id } });
    return true;
  });
  if (!deleted) throw notFound("Collection not found");
}
