import fsp from "node:fs/promises";
import path from "node:path";
import { originalKey, type BlobObject, type BlobStore } from "@media-platform/storage";
import type { Logger } from "pino";
import type { PrismaClient } from "../generated/prisma/client";
import type { ChangePropagation } from "../context";
import { trashKey, versionKey } from "./blobs";
import { SPOOL_PREFIX } from "../config/uploads";

/**
 * "No blob without an asset, every row's blob where and what the row says", also after a crash,
 * at start-up and on a timer. An upload writes `originals/<id>` and then inserts the row; a process
 * killed between the two (or mid-write) leaves a blob without a row, a driver temp file or a spool
 * file. The sweep removes each of them once it is older than the grace period (far longer than the
 * gap between blob write and insert, so uploads in flight, in this process or another replica, are
 * never touched). What a trash, restore or replace killed before its commit leaves is repaired
 * under the row's lock instead, without waiting for the grace period: an original on the wrong
 * side of the trash is moved back, and the previous original a replace had saved is put back.
 */
export interface OrphanSweepOptions {
  /** Leftovers younger than this are left alone. */
  graceMs: number;
  /** The upload spool folder (its `upload-*` files). */
  spoolDir: string;
}

export interface OrphanSweepDeps {
  prisma: PrismaClient;
  blobStore: BlobStore;
  /** Purges media caches and the CDN of the assets whose original was put back (renditions of uncommitted bytes). */
  propagator?: ChangePropagation;
}

export interface OrphanSweepResult {
  /**
   * Blobs under originals/ and attributes/ without an asset row, under versions/ without a
   * version row, and under sources/ that no row's version names, deleted.
   */
  blobs: number;
  /**
   * Originals put back from the version blob of a replace killed between overwriting the original
   * and its commit (the row still describes the saved bytes, the original held the new ones).
   */
  restored: number;
  /**
   * Originals on the wrong side of the trash, put back where their row says: a trash or restore
   * killed between its blob move and its commit (the transaction rolled back, the move did not).
   */
  moved: number;
  /** Driver temp files / incomplete multipart uploads removed. */
  incompleteWrites: number;
  /** Upload spool files removed. */
  spoolFiles: number;
}

/**
 * Per-asset blobs that can outlive their row: `originals/<id>` (written before the upload's insert)
 * and `attributes/<id>` (PATCH focalPoint; left behind when a permanent delete could not remove it,
 * since the row goes first). Swept by prefix, so a stray blob never waits for a row that will not come.
 */
const ASSET_PREFIXES = ["originals", "attributes"] as const;
const ASSET_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const BATCH = 500;

export async function sweepOrphans(deps: OrphanSweepDeps, options: OrphanSweepOptions): Promise<OrphanSweepResult> {
  const cutoff = new Date(Date.now() - options.graceMs);
  const result: OrphanSweepResult = { blobs: 0, restored: 0, moved: 0, incompleteWrites: 0, spoolFiles: 0 };

  if (deps.blobStore.list) {
    // First: an original moved to its row's side is then the one a saved original replaces.
    const reconciled = await reconcileTrash(deps);
    result.moved = reconciled.moved;
    result.blobs += reconciled.removed;
    for (const prefix of ASSET_PREFIXES) result.blobs += await sweepPrefix(deps, prefix, cutoff);
    result.blobs += await sweepRenderingSources(deps, cutoff);
    const versions = await sweepVersions(deps, cutoff);
    result.blobs += versions.removed;
    result.restored = versions.restored.length;
    await deps.propagator?.assetsChanged(versions.restored);
  }
  if (deps.blobStore.removeIncompleteWrites)
    result.incompleteWrites = await deps.blobStore.removeIncompleteWrites(cutoff);

  let entries: string[] = [];
  try {
    entries = await fsp.readdir(options.spoolDir);
  } catch {
    /* no spool folder yet */
  }
  for (const name of entries) {
    if (!name.startsWith(SPOOL_PREFIX)) continue;
    const file = path.join(options.spoolDir, name);
    const stat = await fsp.stat(file).catch(() => null);
    if (stat && stat.mtime < cutoff) {
      await fsp.rm(file, { force: true });
      result.spoolFiles++;
    }
  }
  return result;
}

/** Deletes the blobs `<prefix>/<asset id>` older than `cutoff` whose asset has no row; returns how many. */
async function sweepPrefix(
  deps: { prisma: PrismaClient; blobStore: BlobStore },
  prefix: string,
  cutoff: Date,
): Promise<number> {
  let removed = 0;
  let batch: string[] = [];
  const flush = async () => {
    if (batch.length === 0) return;
    const ids = batch;
    batch = [];
    // Trashed rows count: their attributes stay until the permanent delete.
    const rows = await deps.prisma.asset.findMany({ where: { id: { in: ids } }, select: { id: true } });
    const known = new Set(rows.map((r) => r.id));
    for (const id of ids) {
      if (known.has(id)) continue;
      await deps.blobStore.delete(`${prefix}/${id}`);
      removed++;
    }
  };
  for await (const blob of deps.blobStore.list?.(prefix) ?? []) {
    const id = blob.key.slice(prefix.length + 1);
    // Only keys an asset's writes make; anything else under the prefix is not ours to judge.
    if (!ASSET_ID.test(id) || blob.modifiedAt >= cutoff) continue;
    batch.push(id);
    if (batch.length >= BATCH) await flush();
  }
  await flush();
  return removed;
}

/**
 * A trash or restore moves `originals/<id>` <-> `trash/<id>` inside the transaction that flips the
 * row, and undoes the move if it does not commit; a process killed in between leaves the blob on
 * the side the row does not say. Candidates are found without locks, then each is re-checked and
 * fixed under its row lock, which a trash or restore in flight holds from before its move to its
 * commit: one in progress is waited for, never undone. A blob on both sides (S3: a copy whose
 * delete did not happen) keeps the one the row names.
 */
async function reconcileTrash(deps: {
  prisma: PrismaClient;
  blobStore: BlobStore;
}): Promise<{ moved: number; removed: number }> {
  const out = { moved: 0, removed: 0 };
  const candidates = new Set<string>();
  // Where a blob is a candidate: under trash/ when its row is not trashed, under originals/ when it is.
  for (const [prefix, wantTrashed] of [
    ["trash", false],
    ["originals", true],
  ] as const) {
    let batch: string[] = [];
    const flush = async () => {
      if (batch.length === 0) return;
      const ids = batch;
      batch = [];
      const rows = await deps.prisma.asset.findMany({
        where: { id: { in: ids } },
        select: { id: true, deletedAt: true },
      });
      const trashed = new Map(rows.map((r) => [r.id, r.deletedAt !== null]));
      // trash/: a live row, or none (a permanent delete killed after its commit); originals/: a trashed row.
      for (const id of ids) if ((trashed.get(id) === true) === wantTrashed) candidates.add(id);
    };
    for await (const blob of deps.blobStore.list?.(prefix) ?? []) {
      const id = blob.key.slice(prefix.length + 1);
      if (!ASSET_ID.test(id)) continue;
      batch.push(id);
      if (batch.length >= BATCH) await flush();
    }
    await flush();
  }
  for (const id of candidates) {
    await deps.prisma.$transaction(async (tx) => {
      const rows = await tx.$queryRaw<Array<{ trashed: boolean }>>`
        SELECT deleted_at IS NOT NULL AS trashed FROM assets WHERE id = ${id}::uuid FOR UPDATE`;
      const [live, trashed] = [await deps.blobStore.head(originalKey(id)), await deps.blobStore.head(trashKey(id))];
      if (rows.length === 0) {
        // No row: the originals/ blob is the orphan sweep's (after its grace period); trash/ is ours.
        if (trashed) {
          await deps.blobStore.delete(trashKey(id));
          out.removed++;
        }
        return;
      }
      const [from, to] = rows[0]!.trashed ? [originalKey(id), trashKey(id)] : [trashKey(id), originalKey(id)];
      const [atFrom, atTo] = rows[0]!.trashed ? [live, trashed] : [trashed, live];
      if (!atFrom) return;
      if (atTo) {
        await deps.blobStore.delete(from);
        out.removed++;
      } else if (await deps.blobStore.move(from, to)) out.moved++;
    });
  }
  return out;
}

const SOURCE_KEY = /^sources\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\/v(\d{1,9})$/;

/**
 * Rendering sources (`sources/<asset id>/v<n>`, blobs.ts) older than `cutoff` that no row names:
 * neither the asset at version n nor its version row n. An upload or a replace writes one before
 * its commit, so a crash in between leaves such a blob; so does a permanent delete that could
 * not remove it. Returns how many were deleted.
 */
async function sweepRenderingSources(
  deps: { prisma: PrismaClient; blobStore: BlobStore },
  cutoff: Date,
): Promise<number> {
  let removed = 0;
  let batch: StrayVersion[] = [];
  const flush = async () => {
    if (batch.length === 0) return;
    const found = batch;
    batch = [];
    const ids = [...new Set(found.map((v) => v.assetId))];
    const [assets, versions] = await Promise.all([
      deps.prisma.asset.findMany({ where: { id: { in: ids } }, select: { id: true, version: true } }),
      deps.prisma.assetVersion.findMany({ where: { assetId: { in: ids } }, select: { assetId: true, version: true } }),
    ]);
    const named = new Set([
      ...assets.map((a) => `${a.id}/${a.version}`),
      ...versions.map((v) => `${v.assetId}/${v.version}`),
    ]);
    for (const v of found) {
      if (named.has(`${v.assetId}/${v.version}`)) continue;
      await deps.blobStore.delete(v.key);
      removed++;
    }
  };
  for await (const blob of deps.blobStore.list?.("sources") ?? []) {
    const m = SOURCE_KEY.exec(blob.key);
    if (!m || blob.modifiedAt >= cutoff) continue;
    batch.push({ key: blob.key, assetId: m[1]!, version: Number(m[2]) });
    if (batch.length >= BATCH) await flush();
  }
  await flush();
  return removed;
}

const VERSION_KEY = /^versions\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\/v(\d{1,9})$/;
/** A repair may wait for a replace in flight, which holds the row lock up to its own 120 s limit. */
const REPAIR_TX = { timeout: 150_000, maxWait: 10_000 };

interface StrayVersion {
  key: string;
  assetId: string;
  version: number;
}

/**
 * `versions/<asset id>/v<n>` blobs without their version row. A replace locks the row, writes the
 * current original there, inserts the version row, overwrites `originals/<id>` and commits; killed
 * before the commit, it leaves such a blob. When the row is still at version n, the blob holds the
 * bytes the row describes and the original may hold the uncommitted new ones: the blob is put back
 * as the original (`trash/<id>` if the row was trashed since), at once, re-checked under the row
 * lock, so a replace in flight (which holds it from before it writes the blob to its commit) is
 * waited for, never undone. Any other such blob is deleted once older than `cutoff`.
 * Returns how many were deleted, and the assets whose original was put back.
 */
async function sweepVersions(deps: OrphanSweepDeps, cutoff: Date): Promise<{ removed: number; restored: string[] }> {
  let removed = 0;
  const saved: StrayVersion[] = [];
  let batch: Array<StrayVersion & { old: boolean }> = [];
  const flush = async () => {
    if (batch.length === 0) return;
    const found = batch;
    batch = [];
    const [versionRows, assetRows] = await Promise.all([
      deps.prisma.assetVersion.findMany({
        where: { OR: found.map(({ assetId, version }) => ({ assetId, version })) },
        select: { assetId: true, version: true },
      }),
      deps.prisma.asset.findMany({
        where: { id: { in: [...new Set(found.map((v) => v.assetId))] } },
        select: { id: true, version: true },
      }),
    ]);
    const known = new Set(versionRows.map((r) => `${r.assetId}/${r.version}`));
    const current = new Map(assetRows.map((r) => [r.id, r.version]));
    for (const v of found) {
      if (known.has(`${v.assetId}/${v.version}`)) continue;
      if (current.get(v.assetId) === v.version) saved.push(v);
      else if (v.old) {
        await deps.blobStore.delete(v.key);
        removed++;
      }
    }
  };
  for await (const blob of deps.blobStore.list?.("versions") ?? []) {
    const m = VERSION_KEY.exec(blob.key);
    if (!m) continue;
    // Young ones too: a saved original is put back at once (under the lock, so not one in flight).
    batch.push({ key: blob.key, assetId: m[1]!, version: Number(m[2]), old: blob.modifiedAt < cutoff });
    if (batch.length >= BATCH) await flush();
  }
  await flush();

  const restored: string[] = [];
  for (const v of saved) if (await restoreSavedOriginal(deps, v)) restored.push(v.assetId);
  return { removed, restored };
}

/**
 * The original a replace killed between overwriting `originals/<id>` and its commit had saved: the
 * blob `versions/<id>/v<version>`, `version` the row's current one, which holds the bytes the row
 * describes while `originals/<id>` may hold uncommitted ones. A committed replace writes the version
 * row of the version it replaces and moves the asset on in one transaction, so no version row ever
 * exists for the current version: the blob alone tells. Null when there is none. The caller holds
 * the row lock (so no replace is in flight) and reads or releases the blob.
 */
export function savedOriginalOfKilledReplace(
  blobStore: BlobStore,
  assetId: string,
  version: number,
): Promise<BlobObject | null> {
  return blobStore.get(versionKey(assetId, version));
}

/** Puts the saved original `v` back where its row says the original lives, if still called for under the row lock. */
async function restoreSavedOriginal(deps: OrphanSweepDeps, v: StrayVersion): Promise<boolean> {
  return deps.prisma.$transaction(async (tx) => {
    const rows = await tx.$queryRaw<Array<{ version: number; trashed: boolean }>>`
      SELECT version, deleted_at IS NOT NULL AS trashed FROM assets WHERE id = ${v.assetId}::uuid FOR UPDATE`;
    const row = rows[0];
    // A replace that committed meanwhile moved the row on (or wrote the version row): nothing to undo.
    if (!row || row.version !== v.version) return false;
    const blob = await savedOriginalOfKilledReplace(deps.blobStore, v.assetId, v.version);
    if (!blob) return false;
    // A trash after the crash moved the uncommitted bytes to trash/.
    const to = row.trashed ? trashKey(v.assetId) : originalKey(v.assetId);
    try {
      await deps.blobStore.put(to, blob.body, blob.contentType, blob.metadata);
    } finally {
      blob.release();
    }
    // Only once the original is back: killed in between, the next sweep puts it back again.
    await deps.blobStore.delete(v.key);
    return true;
  }, REPAIR_TX);
}

/**
 * Runs the sweep now and then every `intervalMs` (0 = start-up only), logging what it removed or repaired.
 * A failure (database or blob store down) is logged and retried at the next run. Returns a stop
 * function (awaits a sweep in progress).
 */
export function scheduleOrphanSweep(
  deps: OrphanSweepDeps & { log: Logger },
  options: OrphanSweepOptions & { intervalMs: number },
): () => Promise<void> {
  let running: Promise<void> | undefined;
  let stopped = false;
  const run = () => {
    if (running || stopped) return;
    running = sweepOrphans(deps, options)
      .then(
        (result) => deps.log.info({ ...result, graceMs: options.graceMs }, "orphan sweep done"),
        (err: unknown) => deps.log.warn({ err }, "orphan sweep failed; retrying at the next run"),
      )
      .finally(() => {
        running = undefined;
      });
  };
  run();
  const timer = options.intervalMs > 0 ? setInterval(run, options.intervalMs) : undefined;
  timer?.unref();
  return async () => {
    stopped = true;
    if (timer) clearInterval(timer);
    await running;
  };
}
