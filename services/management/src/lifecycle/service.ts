import { readFile } from "node:fs/promises";
import { actorOf, recordAudit } from "../audit/log";
import { assertWithinQuota } from "../usage/service";
import { buffer } from "node:stream/consumers";
import {
  MAX_TAGS,
  type AssetDto,
  type AssetVersionDto,
  type AssetFormat,
  type BatchRequest,
  type BatchResponse,
  type ListAssetVersionsResponse,
} from "@media-platform/contracts";
import type { BlobMetadata } from "@media-platform/storage";
import type { Principal } from "../auth/keys";
import type { AppContext } from "../context";
import { Prisma, type Asset } from "../generated/prisma/client";
import { ConflictError, InvalidInputError, MissingBlobError, NotFoundError } from "../domain-errors";
import { sanitizeFilename, type UploadedFile } from "../assets/service";
import { serializeAsset } from "../assets/serializer";
import { mediaLinksOf } from "../assets/media-links";
import { imageMetadataFromBytes } from "../assets/image-metadata";
import { analysedOriginal, asVersion, putOriginal, recordOriginal, type NewOriginal } from "../assets/original-write";
import { renderingSourceOf } from "@media-platform/contracts";
import { analyseImage } from "../assets/image-analysis";
import { recordEvents, type Tx, type WebhookEvent } from "../webhooks/outbox";
import { attributesKey, forEachLimited, originalKey, renderingSourceKey, trashKey, versionKey } from "../assets/blobs";
import { savedOriginalOfKilledReplace } from "../assets/orphans";

/**
 * Interactive transactions that also write or move blobs get more than Prisma's 5 s default.
 * Moves are renames (server-side on S3), so a batch of a few hundred takes well under this.
 */
const TX_OPTIONS = { timeout: 120_000, maxWait: 10_000 };
const BLOB_CONCURRENCY = 16;
/** Tries to put a blob back after a failed change before leaving it to the orphan sweep's log. */
const UNDO_ATTEMPTS = 3;
const DEFAULT_VERSIONS_KEPT = 10;

const idList = (ids: readonly string[]) => Prisma.join(ids.map((id) => Prisma.sql`${id}::uuid`));
const urls = (ctx: AppContext) => ctx.webhookUrls ?? [];

interface LockedRow {
  id: string;
  trashed: boolean;
}

/** Locks the workspace's rows among `ids` (live and trashed) for the rest of the transaction. */
async function lockAssets(tx: Tx, workspaceId: string, ids: readonly string[]): Promise<LockedRow[]> {
  if (ids.length === 0) return [];
  return tx.$queryRaw<LockedRow[]>`
    SELECT id::text AS id, deleted_at IS NOT NULL AS trashed
      FROM assets
     WHERE workspace_id = ${workspaceId} AND id IN (${idList(ids)})
     ORDER BY id
       FOR UPDATE`;
}

interface BlobMove {
  from: string;
  to: string;
}

/**
 * Blob moves of one transaction, undone when it does not commit. A move that failed is in an
 * unknown state (on S3 the copy may exist without the delete): undo looks where the blob is.
 */
class BlobMoves {
  private readonly done: BlobMove[] = [];
  private readonly failed: BlobMove[] = [];
  private closed = false;
  constructor(private readonly ctx: AppContext) {}

  /** No move starts after this: the transaction is over. */
  close(): void {
    this.closed = true;
  }

  async move(pairs: BlobMove[]): Promise<void> {
    await forEachLimited(pairs, BLOB_CONCURRENCY, async (pair) => {
      if (this.closed) throw new Error("blob move after the transaction ended");
      try {
        if (await this.ctx.blobStore.move(pair.from, pair.to)) this.done.push(pair);
      } catch (err) {
        this.failed.push(pair);
        throw err;
      }
    });
  }

  /** Puts every blob back where it was: `from` holds it again and `to` is empty. */
  async undo(): Promise<void> {
    const store = this.ctx.blobStore;
    const back = async ({ from, to }: BlobMove, done: boolean): Promise<void> => {
      // A failed move whose source is still there did not happen, or left a copy at `to` (S3),
      // which in a trash or restore is never a blob of its own: the row is on the other side.
      if (!done && (await store.head(from))) await store.delete(to);
      else await store.move(to, from);
    };
    const pending = [...this.done.map((m) => ({ m, done: true })), ...this.failed.map((m) => ({ m, done: false }))];
    await forEachLimited(pending, BLOB_CONCURRENCY, async ({ m, done }) => {
      for (let attempt = 1; ; attempt++) {
        try {
          await back(m, done);
          return;
        } catch (err) {
          if (attempt === UNDO_ATTEMPTS) {
            this.ctx.log.error({ err, from: m.to, to: m.from }, "could not move a blob back after a failed change");
            return;
          }
          await new Promise((r) => setTimeout(r, 100 * attempt));
        }
      }
    });
  }
}

/**
 * Runs `work` in a transaction whose blob moves are undone if it does not commit (the blob store
 * cannot join the transaction; moving first and undoing on failure keeps "row live <=> blob at
 * originals/<id>", which is all the media service looks at).
 */
async function withBlobMoves<T>(ctx: AppContext, work: (tx: Tx, moves: BlobMoves) => Promise<T>): Promise<T> {
  const moves = new BlobMoves(ctx);
  let running: Promise<T> | undefined;
  try {
    return await ctx.prisma.$transaction((tx) => (running = work(tx, moves)), TX_OPTIONS);
  } catch (err) {
    // A transaction that timed out does not stop `work`: wait for it, and let it start no further
    // move, so nothing moves after the undo.
    moves.close();
    await running?.catch(() => undefined);
    await moves.undo();
    throw err;
  }
}

export interface StateChange {
  matched: string[];
  changed: string[];
  notFound: string[];
}

/**
 * Moves the live assets among `ids` to the trash: original blob to trash/<id>, deleted_at set
 * (updatedAt untouched, so a restore brings the asset back exactly as it was), one asset.deleted
 * event each, in one transaction. `also` runs inside the same transaction (collection delete).
 */
export async function trashAssets(
  ctx: AppContext,
  workspaceId: string,
  ids: readonly string[],
  also?: (tx: Tx) => Promise<void>,
): Promise<StateChange> {
  const result = await withBlobMoves(ctx, async (tx, moves) => {
    const rows = await lockAssets(tx, workspaceId, ids);
    const live = rows.filter((r) => !r.trashed).map((r) => r.id);
    await moves.move(live.map((id) => ({ from: originalKey(id), to: trashKey(id) })));
    if (live.length > 0) {
      await tx.$executeRaw`UPDATE assets SET deleted_at = now() WHERE id IN (${idList(live)})`;
      await recordEvents(
        tx,
        urls(ctx),
        live.map((id) => ({ type: "asset.deleted", workspaceId, data: { id, permanent: false } })),
      );
    }
    await also?.(tx);
    return stateChange(ids, rows, live);
  });
  await ctx.propagator?.assetsChanged(result.changed);
  return result;
}

/** Brings trashed assets among `ids` back (blob to originals/<id>, deleted_at cleared), one asset.restored each. */
export async function restoreAssets(
  ctx: AppContext,
  workspaceId: string,
  ids: readonly string[],
): Promise<StateChange> {
  return withBlobMoves(ctx, async (tx, moves) => {
    const rows = await lockAssets(tx, workspaceId, ids);
    const trashed = rows.filter((r) => r.trashed).map((r) => r.id);
    await moves.move(trashed.map((id) => ({ from: trashKey(id), to: originalKey(id) })));
    if (trashed.length > 0) {
      // Its collection is null already if that was deleted meanwhile (ON DELETE SET NULL).
      await tx.$executeRaw`UPDATE assets SET deleted_at = NULL WHERE id IN (${idList(trashed)})`;
      const restored = await tx.asset.findMany({ where: { id: { in: trashed } } });
      await recordEvents(
        tx,
        urls(ctx),
        restored.map((a) => ({ type: "asset.restored", workspaceId, data: assetData(ctx, a) })),
      );
    }
    return stateChange(ids, rows, trashed);
  });
}

function stateChange(ids: readonly string[], rows: LockedRow[], changed: string[]): StateChange {
  const found = new Set(rows.map((r) => r.id));
  return { matched: [...found], changed, notFound: ids.filter((id) => !found.has(id)) };
}

const assetData = (ctx: AppContext, asset: Asset): Record<string, unknown> =>
  serializeAsset(asset, mediaLinksOf(ctx)) as unknown as Record<string, unknown>;

/** DELETE /v1/assets/:id: a live asset to the trash; 404 when there is none (trashed included). */
export async function trashAsset(ctx: AppContext, principal: Principal, id: string): Promise<void> {
  const result = await trashAssets(ctx, principal.workspaceId, [id]);
  if (result.changed.length === 0) throw new NotFoundError("Asset not found");
}

/** POST /v1/assets/:id/restore: 404 unknown, 409 when the asset is not in the trash. */
export async function restoreAsset(ctx: AppContext, principal: Principal, id: string): Promise<AssetDto> {
  const result = await restoreAssets(ctx, principal.workspaceId, [id]);
  if (result.matched.length === 0) throw new NotFoundError("Asset not found");
  if (result.changed.length === 0) throw new ConflictError("The asset is not in the trash");
  const asset = await ctx.prisma.asset.findFirst({ where: { id, workspaceId: principal.workspaceId } });
  if (!asset) throw new NotFoundError("Asset not found");
  return serializeAsset(asset, mediaLinksOf(ctx));
}

/**
 * Removes assets for good (live or trashed): the rows (versions cascade) and an asset.deleted
 * event in one transaction, then every blob (original, trashed original, versions, attributes), then the
 * caches. Used by DELETE ?permanent=true and by the trash retention job (`where` picks the rows;
 * the job passes expired ones and SKIP LOCKED so that concurrent replicas never take the same).
 */
export async function purgeAssets(
  ctx: AppContext,
  select: (tx: Tx) => Promise<Array<{ id: string; workspace_id: string }>>,
): Promise<string[]> {
  const removed = await ctx.prisma.$transaction(async (tx) => {
    const rows = await select(tx);
    if (rows.length === 0) return [];
    const ids = rows.map((r) => r.id);
    const versions = await tx.assetVersion.findMany({
      where: { assetId: { in: ids } },
      select: { assetId: true, version: true },
    });
    const current = await tx.asset.findMany({ where: { id: { in: ids } }, select: { id: true, version: true } });
    await tx.$executeRaw`DELETE FROM assets WHERE id IN (${idList(ids)})`;
    await recordEvents(
      tx,
      urls(ctx),
      rows.map((r): WebhookEvent => ({
        type: "asset.deleted",
        workspaceId: r.workspace_id,
        data: { id: r.id, permanent: true },
      })),
    );
    return rows.map((r) => ({
      id: r.id,
      keys: [
        originalKey(r.id),
        trashKey(r.id),
        attributesKey(r.id),
        ...versions.filter((v) => v.assetId === r.id).map((v) => versionKey(r.id, v.version)),
        // Rendering sources (HEIC, camera RAW) of the current original and of each version; a
        // delete of one that never existed succeeds.
        ...current.filter((a) => a.id === r.id).map((a) => renderingSourceKey(r.id, a.version)),
        ...versions.filter((v) => v.assetId === r.id).map((v) => renderingSourceKey(r.id, v.version)),
      ],
    }));
  }, TX_OPTIONS);
  // After the commit: a blob that cannot be deleted now is an orphan (logged), never a row without its blob.
  await forEachLimited(
    removed.flatMap((r) => r.keys),
    BLOB_CONCURRENCY,
    (key) =>
      ctx.blobStore
        .delete(key)
        .catch((err: unknown) => ctx.log.error({ err, key }, "could not delete the blob of a removed asset")),
  );
  const ids = removed.map((r) => r.id);
  await ctx.propagator?.assetsChanged(ids);
  return ids;
}

/** DELETE /v1/assets/:id?permanent=true. */
export async function deleteAssetPermanently(ctx: AppContext, principal: Principal, id: string): Promise<void> {
  const removed = await purgeAssets(
    ctx,
    (tx) => tx.$queryRaw`
      SELECT id::text AS id, workspace_id FROM assets
       WHERE id = ${id}::uuid AND workspace_id = ${principal.workspaceId}
         FOR UPDATE`,
  );
  if (removed.length === 0) throw new NotFoundError("Asset not found");
  await recordAudit(ctx.prisma, {
    workspaceId: principal.workspaceId,
    action: "asset.deleted-permanently",
    actor: actorOf(principal),
    target: id,
  });
}

// ---------------------------------------------------------------------------------------------
// Replace and versions

/** The next original of a replace or a version restore, with its bytes. */
interface NextOriginal {
  bytes: Buffer;
  original: NewOriginal;
}

/**
 * Makes `next` the current original of a live asset: the current one is kept as version
 * <version> (blob versions/<id>/v<version> + a row), the new bytes go to originals/<id>, the row
 * gets the new format, size, digests and version+1 (metadata, tags, collection and the focal point
 * with its attributes/<id> blob stay: it is a fraction of the image, so it carries over), versions
 * beyond ASSET_VERSIONS_KEPT are dropped, and asset.replaced is recorded: one transaction, with the
 * asset row locked so concurrent replaces queue. If it does not commit, the previous bytes are put
 * back at originals/<id>.
 */
async function swapOriginal(
  ctx: AppContext,
  workspaceId: string,
  id: string,
  load: (tx: Tx, current: Asset) => Promise<NextOriginal>,
  extra: Record<string, unknown> = {},
): Promise<AssetDto> {
  let previous: { bytes: Buffer; mimeType: string; metadata: BlobMetadata | undefined } | undefined;
  let overwritten = false;
  /** The new original's rendering source, once written (deleted again if the swap does not commit). */
  let newSource: string | undefined;
  let pruned: string[] = [];
  let updated: Asset;
  try {
    updated = await ctx.prisma.$transaction(async (tx) => {
      const locked = await tx.$queryRaw<Array<{ id: string }>>`
        SELECT id::text AS id FROM assets
         WHERE id = ${id}::uuid AND workspace_id = ${workspaceId} AND deleted_at IS NULL
           FOR UPDATE`;
      if (locked.length === 0) throw new NotFoundError("Asset not found");
      const current = await tx.asset.findUniqueOrThrow({ where: { id } });
      const loaded = await load(tx, current);
      // The new original is version+1: its rendering source (if any) is that version's.
      const next = { ...loaded, original: asVersion(id, current.version + 1, loaded.original) };
      // After a replace killed before its commit (and no sweep since), originals/<id> holds its
      // uncommitted bytes and versions/<id>/v<version> the ones this row describes: those are the
      // previous original, or this swap would overwrite them with the uncommitted ones for good.
      const blob =
        (await savedOriginalOfKilledReplace(ctx.blobStore, id, current.version)) ??
        (await ctx.blobStore.get(originalKey(id)));
      if (!blob) throw new MissingBlobError("The original of this asset is missing from the blob store");
      previous = { bytes: await buffer(blob.body), mimeType: blob.contentType, metadata: blob.metadata };
      await ctx.blobStore.put(versionKey(id, current.version), previous.bytes, current.mimeType, previous.metadata);
      const lastVersion = await tx.assetVersion.findFirst({
        where: { assetId: id },
        orderBy: { version: "desc" },
        select: { replacedAt: true },
      });
      await tx.assetVersion.create({
        data: {
          assetId: id,
          version: current.version,
          originalFilename: current.originalFilename,
          mimeType: current.mimeType,
          format: current.format,
          width: current.width,
          height: current.height,
          bytes: current.bytes,
          sha256: current.sha256,
          phash: current.phash,
          // It became current when the version before it was replaced, or at upload.
          createdAt: lastVersion?.replacedAt ?? current.createdAt,
        },
      });
      overwritten = true;
      newSource = next.original.renderingSource ? renderingSourceOf(next.original.blobMetadata) : undefined;
      await putOriginal(ctx, id, next.bytes, next.original);
      return recordOriginal(tx, ctx, {
        workspaceId,
        original: next.original,
        row: async (columns) => {
          const row = await tx.asset.update({ where: { id }, data: { ...columns, version: { increment: 1 } } });
          pruned = await pruneVersions(ctx, tx, id);
          return row;
        },
        event: (row) => ({
          type: "asset.replaced",
          workspaceId,
          data: { ...assetData(ctx, row), previousVersion: current.version, ...extra },
        }),
      });
    }, TX_OPTIONS);
  } catch (err) {
    if (overwritten && previous) {
      const { bytes, mimeType, metadata } = previous;
      await ctx.blobStore
        .put(originalKey(id), bytes, mimeType, metadata)
        .catch((putErr: unknown) => ctx.log.error({ err: putErr, id }, "could not put the previous original back"));
    }
    // Left behind, the orphan sweep would remove it (no row names its version).
    if (newSource) {
      const key = newSource;
      await ctx.blobStore
        .delete(key)
        .catch((deleteErr: unknown) => ctx.log.error({ err: deleteErr, key }, "could not delete a rendering source"));
    }
    throw err;
  }
  await forEachLimited(pruned, BLOB_CONCURRENCY, (key) =>
    ctx.blobStore.delete(key).catch((err: unknown) => ctx.log.error({ err, key }, "could not delete a pruned version")),
  );
  await ctx.propagator?.assetsChanged([id]);
  // After the purge, so the eager renders normally follow it (the request purges first anyway).
  ctx.eagerRenders?.wake();
  return serializeAsset(updated, mediaLinksOf(ctx));
}

/** Drops the versions of `id` beyond ASSET_VERSIONS_KEPT; returns the keys of their blobs. */
async function pruneVersions(ctx: AppContext, tx: Tx, id: string): Promise<string[]> {
  const kept = ctx.assetVersionsKept ?? DEFAULT_VERSIONS_KEPT;
  const old = await tx.assetVersion.findMany({
    where: { assetId: id },
    orderBy: { version: "desc" },
    skip: kept,
    select: { version: true },
  });
  if (old.length === 0) return [];
  await tx.assetVersion.deleteMany({ where: { assetId: id, version: { in: old.map((v) => v.version) } } });
  return old.flatMap((v) => [versionKey(id, v.version), renderingSourceKey(id, v.version)]);
}

/** PUT /v1/assets/:id/original: validated exactly like an upload (analyseImage), before anything changes. */
export async function replaceOriginal(
  ctx: AppContext,
  principal: Principal,
  id: string,
  file: UploadedFile,
): Promise<AssetDto> {
  // Refuse a foreign/unknown/trashed id before decoding a large file.
  const exists = await ctx.prisma.asset.count({ where: { id, workspaceId: principal.workspaceId, deletedAt: null } });
  if (exists === 0) throw new NotFoundError("Asset not found");
  // The replaced original stays as a version: the workspace stores the new bytes on top.
  await assertWithinQuota(ctx, principal.workspaceId, { bytes: file.size, assets: 0 });
  const image = await analyseImage(file, ctx.limitInputPixels, {
    keepGps: ctx.keepGps ?? false,
    originalMetadata: ctx.originalMetadata ?? "private",
  });
  if (!image.metadata) throw new Error("analyseImage returned no metadata");
  // The replaced original is swapped inside the row lock, and the previous one must be restorable
  // if the transaction fails, so both are held as buffers here (at most MAX_UPLOAD_BYTES each).
  const bytes = await readFile(file.path);
  const original = analysedOriginal(image, sanitizeFilename(file.originalname), principal.workspaceId);
  // The row's size is that of the bytes stored (as analysed: the spool file is what is stored).
  return swapOriginal(ctx, principal.workspaceId, id, async () => ({
    bytes,
    original: { ...original, bytes: bytes.length },
  }));
}

/** POST /v1/assets/:id/versions/:version/restore: that version's bytes become a new current version. */
export async function restoreVersion(
  ctx: AppContext,
  principal: Principal,
  id: string,
  version: number,
): Promise<AssetDto> {
  return swapOriginal(
    ctx,
    principal.workspaceId,
    id,
    async (tx) => {
      const v = await tx.assetVersion.findUnique({ where: { assetId_version: { assetId: id, version } } });
      if (!v) throw new NotFoundError(`Asset version ${version} not found`);
      const blob = await ctx.blobStore.get(versionKey(id, version));
      if (!blob) throw new MissingBlobError(`The stored bytes of version ${version} are missing from the blob store`);
      const bytes = await buffer(blob.body);
      // A HEIC or camera RAW version renders from its own rendering source: copied as the new
      // version's (swapOriginal names it), its placeholder and colours recomputed from it.
      const sourceKey = renderingSourceOf(blob.metadata);
      const sourceBlob = sourceKey ? await ctx.blobStore.get(sourceKey) : null;
      if (sourceKey && !sourceBlob) {
        throw new MissingBlobError(`The rendering source of version ${version} is missing from the blob store`);
      }
      const renderingSource = sourceBlob ? await buffer(sourceBlob.body) : undefined;
      // asset_versions keeps no metadata columns: it is recomputed from the restored bytes.
      const metadata = await imageMetadataFromBytes(renderingSource ?? bytes, ctx.limitInputPixels, {
        keepGps: ctx.keepGps ?? false,
      });
      // The source carries no EXIF: the current row's is the asset's camera's (a replace keeps none of a version's).
      if (renderingSource) metadata.exif = null;
      return {
        bytes,
        original: {
          renderingSource,
          originalFilename: v.originalFilename,
          mimeType: v.mimeType,
          format: v.format,
          width: v.width,
          height: v.height,
          bytes: bytes.length,
          sha256: v.sha256,
          phash: v.phash,
          metadata,
          // The version's blob kept the header facts it was stored with.
          blobMetadata: blob.metadata,
        },
      };
    },
    { restoredFromVersion: version },
  );
}

export async function listVersions(
  ctx: AppContext,
  principal: Principal,
  id: string,
): Promise<ListAssetVersionsResponse> {
  const asset = await ctx.prisma.asset.findFirst({
    where: { id, workspaceId: principal.workspaceId, deletedAt: null },
    select: { version: true, versions: { orderBy: { version: "desc" } } },
  });
  if (!asset) throw new NotFoundError("Asset not found");
  const versions = asset.versions.map((v): AssetVersionDto => ({
    version: v.version,
    originalFilename: v.originalFilename,
    mimeType: v.mimeType,
    format: v.format as AssetFormat,
    width: v.width,
    height: v.height,
    bytes: Number(v.bytes),
    sha256: v.sha256,
    createdAt: v.createdAt.toISOString(),
    replacedAt: v.replacedAt.toISOString(),
  }));
  return { currentVersion: asset.version, count: versions.length, versions };
}

// ---------------------------------------------------------------------------------------------
// Batch

/** POST /v1/assets/batch: one action over the workspace's assets among `ids`, in one transaction. */
export async function runBatch(ctx: AppContext, principal: Principal, request: BatchRequest): Promise<BatchResponse> {
  const { workspaceId } = principal;
  const { ids } = request;
  let change: StateChange;
  switch (request.action) {
    case "delete":
      change = await trashAssets(ctx, workspaceId, ids);
      break;
    case "restore":
      change = await restoreAssets(ctx, workspaceId, ids);
      break;
    case "addTags":
    case "removeTags":
    case "setCollection":
      change = await updateLiveAssets(ctx, workspaceId, request);
      break;
  }
  return { matched: change.matched.length, changed: change.changed.length, notFound: change.notFound };
}

/** Tag and collection actions apply to live assets: a trashed one is not found, as for GET. */
async function updateLiveAssets(
  ctx: AppContext,
  workspaceId: string,
  request: Extract<BatchRequest, { action: "addTags" | "removeTags" | "setCollection" }>,
): Promise<StateChange> {
  return ctx.prisma.$transaction(async (tx) => {
    const rows = (await lockAssets(tx, workspaceId, request.ids)).filter((r) => !r.trashed);
    const live = rows.map((r) => r.id);
    let changed: Array<{ id: string }> = [];
    if (live.length > 0) {
      switch (request.action) {
        case "addTags": {
          const tags = request.value;
          // The whole batch is refused when one asset would end up above the tag limit.
          const over = await tx.$queryRaw<Array<{ id: string }>>`
            SELECT id::text AS id FROM assets
             WHERE id IN (${idList(live)})
               AND cardinality(user_tags) + (SELECT count(*) FROM unnest(${tags}::text[]) t WHERE NOT t = ANY(user_tags)) > ${MAX_TAGS}
             LIMIT 1`;
          if (over.length > 0) {
            throw new InvalidInputError(
              `Adding these tags would give asset ${over[0]!.id} more than ${MAX_TAGS} tags`,
              [{ path: "body.value", message: `an asset may carry at most ${MAX_TAGS} tags` }],
            );
          }
          changed = await tx.$queryRaw`
            UPDATE assets
               SET user_tags = user_tags || ARRAY(SELECT t FROM unnest(${tags}::text[]) WITH ORDINALITY u(t, o)
                                                   WHERE NOT t = ANY(user_tags) ORDER BY o),
                   updated_at = now()
             WHERE id IN (${idList(live)}) AND NOT (user_tags @> ${tags}::text[])
         RETURNING id::text AS id`;
          break;
        }
        case "removeTags": {
          const tags = request.value;
          changed = await tx.$queryRaw`
            UPDATE assets
               SET user_tags = ARRAY(SELECT t FROM unnest(user_tags) WITH ORDINALITY u(t, o)
                                      WHERE NOT t = ANY(${tags}::text[]) ORDER BY o),
                   updated_at = now()
             WHERE id IN (${idList(live)}) AND user_tags && ${tags}::text[]
         RETURNING id::text AS id`;
          break;
        }
        case "setCollection": {
          const collectionId = request.value;
          if (collectionId !== null) {
            const found = await tx.collection.count({ where: { id: collectionId, workspaceId } });
            if (found === 0) {
              throw new InvalidInputError("Unknown collection", [
                { path: "body.value", message: "no such collection in this workspace" },
              ]);
            }
          }
          changed = await tx.$queryRaw`
            UPDATE assets SET collection_id = ${collectionId}::uuid, updated_at = now()
             WHERE id IN (${idList(live)}) AND collection_id IS DISTINCT FROM ${collectionId}::uuid
         RETURNING id::text AS id`;
          break;
        }
      }
    }
    if (changed.length > 0) {
      const assets = await tx.asset.findMany({ where: { id: { in: changed.map((c) => c.id) } } });
      await recordEvents(
        tx,
        urls(ctx),
        assets.map((a) => ({ type: "asset.updated", workspaceId, data: assetData(ctx, a) })),
      );
    }
    const found = new Set(live);
    return {
      matched: live,
      changed: changed.map((c) => c.id),
      notFound: request.ids.filter((id) => !found.has(id)),
    };
  }, TX_OPTIONS);
}
