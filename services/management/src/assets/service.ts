import { randomUUID } from "node:crypto";
import { assertWithinQuota } from "../usage/service";
import fs from "node:fs";
import type {
  AssetDto,
  FullTextQuery,
  FullTextResponse,
  ListAssetsQuery,
  ListAssetsResponse,
  PatchAsset,
  UploadFields,
  UploadResponse,
} from "@media-platform/contracts";
import {
  filenameSchema,
  LIST_EXACT_COUNT_LIMIT,
  MAX_FILENAME_LENGTH,
  type FocalPoint,
} from "@media-platform/contracts";
import { originalKey } from "@media-platform/storage";
import type { AppContext } from "../context";
import type { Principal } from "../auth/keys";
import { LRUCache } from "lru-cache";
import { Prisma, type Asset } from "../generated/prisma/client";
import { InvalidInputError, NotFoundError, zodErrors } from "../domain-errors";
import { afterCursor, cursorValue, decodeCursor, encodeCursor, listOrder, type SortField } from "./cursor";
import { attributesOf, focalPointOf, sameFocalPoint, storeAssetAttributes } from "./attributes";
import { findDuplicates } from "./duplicates";
import { isDatabaseUnavailable } from "../db/availability";
import { countFacets } from "./facets";
import { rankFullText } from "./search";
import { ASSET_COLUMNS, liveAssetsByIds } from "./rows";
import { serializeAsset, serializeListedAsset } from "./serializer";
import { mediaLinksOf } from "./media-links";
import { analyseImage, type SpooledFile } from "./image-analysis";
import { recordEvents, type Tx } from "../webhooks/outbox";
import { analysedOriginal, asVersion, putOriginal, recordOriginal } from "./original-write";
import { renderingSourceKey } from "./blobs";

/** A PATCH that writes the attributes blob holds its transaction across a blob store call. */
const BLOB_TX_OPTIONS = { timeout: 30_000, maxWait: 10_000 };

const isPrismaError = (err: unknown, code: string): boolean =>
  err instanceof Prisma.PrismaClientKnownRequestError && err.code === code;

export async function assertCollectionInWorkspace(
  ctx: AppContext,
  workspaceId: string,
  collectionId: string,
  path: string,
) {
  const found = await ctx.prisma.collection.findFirst({
    where: { id: collectionId, workspaceId },
    select: { id: true },
  });
  if (!found)
    throw new InvalidInputError("Unknown collection", [{ path, message: "no such collection in this workspace" }]);
}

export interface UploadedFile extends SpooledFile {
  originalname: string;
}

/**
 * Upload: sniff + decode + digests, write the original blob, then insert the row. If the insert
 * fails the blob is deleted again, so there is never a blob without an asset or an asset without
 * its blob.
 */
export async function uploadAsset(
  ctx: AppContext,
  principal: Principal,
  file: UploadedFile,
  fields: UploadFields,
): Promise<UploadResponse> {
  const { workspaceId } = principal;
  const originalFilename = sanitizeFilename(file.originalname);
  if (fields.collectionId !== undefined) {
    await assertCollectionInWorkspace(ctx, workspaceId, fields.collectionId, "body.collectionId");
  }
  // Before any decode and before the bytes are stored (the spool file goes with the request).
  await assertWithinQuota(ctx, workspaceId, { bytes: file.size, assets: 1 });
  const image = await analyseImage(file, ctx.limitInputPixels, {
    keepGps: ctx.keepGps ?? false,
    originalMetadata: ctx.originalMetadata ?? "private",
  });
  const duplicates = fields.warnAboutDuplicateImages
    ? await findDuplicates(ctx.prisma, workspaceId, image, ctx.duplicateHammingThreshold)
    : undefined;

  const id = randomUUID();
  const key = originalKey(id);
  // A new asset's original is its version 1.
  const original = asVersion(id, 1, analysedOriginal(image, originalFilename, workspaceId));
  // Streamed from the spool file (S3: multipart above the part size), never whole in memory. The
  // file is opened first: a stream's own open failing before the store reads it would be an
  // unhandled error event, which ends the process.
  const body = (await fs.promises.open(file.path, "r")).createReadStream();
  try {
    await putOriginal(ctx, id, body, original);
  } finally {
    body.destroy();
  }
  let asset: Asset;
  try {
    // The asset.created webhook event is written in the same transaction (outbox).
    asset = await ctx.prisma.$transaction((tx) =>
      recordOriginal(tx, ctx, {
        workspaceId,
        original,
        row: (columns) =>
          tx.asset.create({
            data: {
              id,
              workspaceId,
              collectionId: fields.collectionId ?? null,
              ...columns,
              createdBy: principal.userId,
            },
          }),
        event: (row) => ({
          type: "asset.created",
          workspaceId,
          data: { ...serializeAsset(row, mediaLinksOf(ctx)) },
        }),
      }),
    );
    // Sent now rather than at the next poll; the row stays due if this replica stops first.
    ctx.eagerRenders?.wake();
  } catch (err) {
    // A connection lost during the transaction may have lost only COMMIT's answer: the row may
    // exist. Its blob is kept then (a blob without a row is swept by assets/orphans.ts; a row
    // without its blob would be lost data).
    if (isDatabaseUnavailable(err)) {
      ctx.log.warn(
        { key },
        "upload's transaction outcome unknown (database unavailable): blob kept for the orphan sweep",
      );
    } else {
      const keys = original.renderingSource ? [key, renderingSourceKey(id, 1)] : [key];
      for (const blobKey of keys) {
        await ctx.blobStore.delete(blobKey).catch((deleteErr: unknown) => {
          ctx.log.error({ err: deleteErr, key: blobKey }, "could not delete the blob of a failed upload");
        });
      }
    }
    // The collection was deleted between the check and the insert.
    if (isPrismaError(err, "P2003")) {
      throw new InvalidInputError("Unknown collection", [
        { path: "body.collectionId", message: "no such collection in this workspace" },
      ]);
    }
    throw err;
  }
  const dto: UploadResponse = serializeAsset(asset, mediaLinksOf(ctx));
  if (duplicates) dto.duplicates = duplicates;
  return dto;
}

/**
 * Client file names are metadata only (never a path): directories stripped, NFC, single-line
 * Unicode (400 for control characters or lone surrogates), cut to 255 UTF-16 units on a code point.
 */
export function sanitizeFilename(name: string): string {
  const base = (name.split(/[\\/]/).pop() ?? "").trim();
  let cut = "";
  for (const ch of base) {
    if (cut.length + ch.length > MAX_FILENAME_LENGTH) break;
    cut += ch;
  }
  const parsed = filenameSchema.safeParse(cut);
  if (!parsed.success) {
    throw new InvalidInputError("Invalid body.file.filename", zodErrors(parsed.error, "body.file.filename"));
  }
  return parsed.data || "upload";
}

async function loadAsset(ctx: AppContext, workspaceId: string, id: string): Promise<Asset> {
  const asset = await ctx.prisma.asset.findFirst({ where: { id, workspaceId, deletedAt: null } });
  if (!asset) throw new NotFoundError("Asset not found");
  return asset;
}

export async function getAsset(ctx: AppContext, principal: Principal, id: string): Promise<AssetDto> {
  return serializeAsset(await loadAsset(ctx, principal.workspaceId, id), mediaLinksOf(ctx));
}

/**
 * PATCH /v1/assets/:id. A focalPoint is also written to the blob attributes/<id> (what the media
 * service reads) inside the transaction, after the row is locked and updated: a failed write rolls
 * the row back (503), and concurrent PATCHes write the blob in the order they commit. When the
 * focal point actually changed, the asset's cached renditions are purged before answering.
 */
export async function patchAsset(
  ctx: AppContext,
  principal: Principal,
  id: string,
  patch: PatchAsset,
): Promise<AssetDto> {
  const { workspaceId } = principal;
  const existing = await loadAsset(ctx, workspaceId, id);
  if (patch.collectionId) await assertCollectionInWorkspace(ctx, workspaceId, patch.collectionId, "body.collectionId");
  const data: Prisma.AssetUncheckedUpdateInput = {};
  if (patch.userTitle !== undefined) data.userTitle = patch.userTitle;
  if (patch.userTags !== undefined) data.userTags = { set: patch.userTags };
  if (patch.userCaption !== undefined) data.userCaption = patch.userCaption;
  if (patch.userDescription !== undefined) data.userDescription = patch.userDescription;
  if (patch.collectionId !== undefined) data.collectionId = patch.collectionId;
  const focalPoint = patch.focalPoint;
  if (focalPoint !== undefined) {
    data.focalX = focalPoint?.x ?? null;
    data.focalY = focalPoint?.y ?? null;
  }
  if (Object.keys(data).length === 0) return serializeAsset(existing, mediaLinksOf(ctx));
  let focalChanged = false;
  let blobWritten = false;
  let dto: AssetDto;
  try {
    dto = await ctx.prisma.$transaction(async (tx) => {
      const before = focalPoint !== undefined ? await lockedFocalPoint(tx, workspaceId, id) : undefined;
      const updated = await tx.asset.update({ where: { id, workspaceId, deletedAt: null }, data });
      const serialized = serializeAsset(updated, mediaLinksOf(ctx));
      await recordEvents(tx, ctx.webhookUrls ?? [], [{ type: "asset.updated", workspaceId, data: { ...serialized } }]);
      if (focalPoint !== undefined) {
        focalChanged = !sameFocalPoint(before ?? null, focalPoint);
        // Written even when unchanged, so a blob a crash left behind is brought back to the row.
        // Last before the commit: only the commit itself can fail after it (repaired below).
        await storeAssetAttributes(ctx.blobStore, id, attributesOf(updated));
        blobWritten = true;
      }
      return serialized;
    }, BLOB_TX_OPTIONS);
  } catch (err) {
    if (blobWritten) await repairAttributes(ctx, id);
    if (isPrismaError(err, "P2025")) throw new NotFoundError("Asset not found");
    if (isPrismaError(err, "P2003")) {
      throw new InvalidInputError("Unknown collection", [
        { path: "body.collectionId", message: "no such collection in this workspace" },
      ]);
    }
    throw err;
  }
  // As a replace does: media and CDN drop the renditions before the client hears back.
  if (focalChanged) await ctx.propagator?.assetsChanged([id]);
  return dto;
}

/** Locks the live row (404 when there is none) and returns its focal point before the change. */
async function lockedFocalPoint(tx: Tx, workspaceId: string, id: string): Promise<FocalPoint | null> {
  const rows = await tx.$queryRaw<Array<{ focal_x: number | null; focal_y: number | null }>>`
    SELECT focal_x, focal_y FROM assets
     WHERE id = ${id}::uuid AND workspace_id = ${workspaceId} AND deleted_at IS NULL
       FOR UPDATE`;
  const row = rows[0];
  if (!row) throw new NotFoundError("Asset not found");
  return focalPointOf({ focalX: row.focal_x, focalY: row.focal_y });
}

/**
 * The commit failed after the blob was written: rewrite the blob from the committed row, under
 * the row lock so that it cannot overwrite a concurrent PATCH's blob. Best effort (the database
 * may be what failed); logged.
 */
async function repairAttributes(ctx: AppContext, id: string): Promise<void> {
  try {
    await ctx.prisma.$transaction(async (tx) => {
      const rows = await tx.$queryRaw<Array<{ focal_x: number | null; focal_y: number | null }>>`
        SELECT focal_x, focal_y FROM assets WHERE id = ${id}::uuid FOR UPDATE`;
      const row = rows[0];
      await storeAssetAttributes(
        ctx.blobStore,
        id,
        row ? attributesOf({ focalX: row.focal_x, focalY: row.focal_y }) : {},
      );
    }, BLOB_TX_OPTIONS);
  } catch (err) {
    ctx.log.error({ err, id }, "could not bring attributes/<id> back to the asset row after a failed PATCH");
  }
}

// ---------------------------------------------------------------------------------------------
// Listing with keyset pagination

function escapeLike(s: string): string {
  return s.replace(/[\\%_]/g, (c) => `\\${c}`);
}

export async function listAssets(
  ctx: AppContext,
  principal: Principal,
  query: ListAssetsQuery,
): Promise<ListAssetsResponse> {
  const desc = query.sort.startsWith("-");
  const field = query.sort.replace(/^-/, "") as SortField;
  const cursor = query.cursor ? decodeCursor(query.cursor, query.sort) : undefined;
  const conditions = Prisma.join(listConditions(principal.workspaceId, query), " AND ");
  const estimate = () => estimateListCount(ctx, conditions);
  // The capped count rides along with the page (one statement, one round trip; PGlite runs
  // statements one at a time). The planner's estimate is asked only when more than
  // LIST_EXACT_COUNT_LIMIT rows match, and then mostly answered from estimateListCount's cache.
  // Both are SQL from the same filters, not Prisma's count({ take }): that one orders its
  // subquery by id, which makes Postgres walk the primary key (13 ms at 1M).
  const [listed, facets] = await Promise.all([
    listPage(ctx, conditions, cursor && afterCursor(field, desc, cursor), listOrder(field, desc), query.limit + 1),
    countFacets(ctx.reads, query.facets ?? [], conditions, estimate),
  ]);
  const { rows } = listed;
  const page = rows.slice(0, query.limit);
  const last = page[page.length - 1];
  const nextCursor =
    rows.length > query.limit && last
      ? encodeCursor({ s: query.sort, v: cursorValue(last, field), id: last.id })
      : null;
  const links = mediaLinksOf(ctx);
  const assets = page.map((a) => serializeListedAsset(a, links, query.include));
  const capped = listed.capped ?? (await countCapped(ctx, conditions));
  if (capped <= LIST_EXACT_COUNT_LIMIT) return { count: capped, assets, nextCursor, ...facets };
  return {
    count: Math.max(await estimate(), LIST_EXACT_COUNT_LIMIT + 1),
    countIsEstimate: true,
    assets,
    nextCursor,
    ...facets,
  };
}

/**
 * listAssets' filters (without the cursor) as SQL, the same as its Prisma `where`: the workspace,
 * live assets or with ?trashed=true the trash, and each filter given.
 */
function listConditions(workspaceId: string, query: ListAssetsQuery): Prisma.Sql[] {
  const conditions: Prisma.Sql[] = [
    Prisma.sql`workspace_id = ${workspaceId}`,
    query.trashed ? Prisma.sql`deleted_at IS NOT NULL` : Prisma.sql`deleted_at IS NULL`,
  ];
  if (query.collectionId) conditions.push(Prisma.sql`collection_id = ${query.collectionId}::uuid`);
  if (query.tag) conditions.push(Prisma.sql`user_tags @> ARRAY[${query.tag}]::text[]`);
  if (query.format) conditions.push(Prisma.sql`format = ${query.format}`);
  if (query.createdAfter) conditions.push(Prisma.sql`created_at >= ${query.createdAfter}`);
  if (query.createdBefore) conditions.push(Prisma.sql`created_at < ${query.createdBefore}`);
  if (query.search) {
    conditions.push(Prisma.sql`search_text LIKE ${`%${escapeLike(query.search.toLowerCase())}%`}`);
  }
  return conditions;
}

/** How many assets match `conditions`, counting no further than LIST_EXACT_COUNT_LIMIT + 1. */
const cappedCountSql = (conditions: Prisma.Sql): Prisma.Sql =>
  Prisma.sql`SELECT count(*)::int FROM (SELECT 1 FROM assets WHERE ${conditions} LIMIT ${LIST_EXACT_COUNT_LIMIT + 1}) AS sub`;

async function countCapped(ctx: AppContext, conditions: Prisma.Sql): Promise<number> {
  const rows = await ctx.reads.$queryRaw<Array<{ n: number }>>`SELECT (${cappedCountSql(conditions)}) AS n`;
  return Number(rows[0]?.n ?? 0);
}

/**
 * The page's rows (as findMany returns them: ASSET_COLUMNS) in `order` after the cursor, with the
 * capped count of every row matching `conditions` on each row (an uncorrelated subquery: counted
 * once). An empty page carries no count: null, then counted on its own (without a cursor it is 0,
 * but a cursor may point past the last row).
 */
async function listPage(
  ctx: AppContext,
  conditions: Prisma.Sql,
  after: Prisma.Sql | undefined,
  order: Prisma.Sql,
  take: number,
): Promise<{ rows: Asset[]; capped: number | null }> {
  const rows = await ctx.reads.$queryRaw<Array<Asset & { listCapped: number }>>`
    SELECT ${Prisma.raw(ASSET_COLUMNS)}, (${cappedCountSql(conditions)}) AS "listCapped"
      FROM assets WHERE ${conditions}${after ? Prisma.sql` AND ${after}` : Prisma.empty}
     ORDER BY ${order} LIMIT ${take}`;
  const capped = rows[0] ? Number(rows[0].listCapped) : after ? null : 0;
  return { rows: rows.map(({ listCapped: _, ...asset }) => asset), capped };
}

/** How long the planner's estimate of one listing's size is reused, and for how many listings. */
export const LIST_ESTIMATE_TTL_MS = 30_000;
const ESTIMATE_CACHE_SIZE = 1_000;

/** Per database (a PrismaClient each): the estimates asked lately, by statement and parameters. */
const estimateCaches = new WeakMap<object, LRUCache<string, number>>();

async function estimateListCount(ctx: AppContext, conditions: Prisma.Sql): Promise<number> {
  const statement = Prisma.sql`EXPLAIN (FORMAT JSON) SELECT 1 FROM assets WHERE ${conditions}`;
  let cache = estimateCaches.get(ctx.prisma);
  if (!cache) {
    cache = new LRUCache<string, number>({ max: ESTIMATE_CACHE_SIZE, ttl: LIST_ESTIMATE_TTL_MS });
    estimateCaches.set(ctx.prisma, cache);
  }
  const key = JSON.stringify([statement.sql, statement.values]);
  const cached = cache.get(key);
  if (cached !== undefined) return cached;
  const rows = await ctx.reads.$queryRaw<Array<{ "QUERY PLAN": unknown }>>(statement);
  const raw = rows[0]?.["QUERY PLAN"];
  const plan = (typeof raw === "string" ? JSON.parse(raw) : raw) as Array<{ Plan?: { "Plan Rows"?: number } }>;
  const estimate = Math.round(plan[0]?.Plan?.["Plan Rows"] ?? 0);
  cache.set(key, estimate);
  return estimate;
}

export async function searchAssetsFullText(
  ctx: AppContext,
  principal: Principal,
  query: FullTextQuery,
): Promise<FullTextResponse> {
  const { hits, tsquery } = await rankFullText(ctx.reads, principal.workspaceId, query.q, query.limit);
  // Facets of every match of the query that found the page (the corrected one after a typo).
  const matches = Prisma.sql`workspace_id = ${principal.workspaceId} AND deleted_at IS NULL AND search_vector @@ ${tsquery}`;
  const facets = query.facets
    ? await countFacets(ctx.reads, query.facets, matches, () => estimateListCount(ctx, matches))
    : {};
  if (hits.length === 0) return { count: 0, assets: [], ...facets };
  const rows = await liveAssetsByIds(
    ctx.reads,
    principal.workspaceId,
    hits.map((h) => h.id),
  );
  const byId = new Map(rows.map((r) => [r.id, r]));
  const links = mediaLinksOf(ctx);
  const assets = hits.flatMap((h) => {
    const row = byId.get(h.id);
    return row ? [{ ...serializeListedAsset(row, links, query.include), score: h.score }] : [];
  });
  return { count: assets.length, assets, ...facets };
}
