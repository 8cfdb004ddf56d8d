import { buffer } from "node:stream/consumers";
import sharp from "sharp";
import type { BlobStore } from "@media-platform/storage";
import type { PrismaClient } from "../generated/prisma/client";
import { originalKey, trashKey, versionKey } from "./blobs";
import { formatOfMimeType, RASTER_FORMATS } from "@media-platform/contracts";
import { displayedSize, extractImageMetadata, metadataColumns } from "./image-metadata";
import { metadataContainerOf, withoutPrivateMetadata, type OriginalPrivacyOptions } from "./original-privacy";

export interface BackfillOptions {
  /** Rows read and processed per batch. */
  batchSize: number;
  limitInputPixels: number;
  keepGps: boolean;
  /** Called after each batch (progress output). */
  onBatch?: (progress: BackfillSummary) => void;
}

export interface BackfillSummary {
  /** Rows whose columns were filled. */
  filled: number;
  /** Rows whose width/height were stored before the EXIF orientation and are now as displayed. */
  reoriented: number;
  /** Rows left as they were: original missing or undecodable (listed in `failures`). */
  failed: number;
  failures: Array<{ assetId: string; reason: string }>;
}

/** Rows older than the asset_metadata migration, or animated rows older than durationMs. */
const NEEDS_METADATA = { OR: [{ placeholder: null }, { animated: true, durationMs: null }] };

/**
 * Fills the placeholder and metadata columns of assets that have none (rows older than the
 * asset_metadata migration), in every workspace, from the stored original (`originals/<id>`, or
 * `trash/<id>` for an asset in the trash). Keyset batches over the primary key, so a failed row is
 * reported once and never retried in the same run. Idempotent: only rows whose placeholder is still
 * null (or that are animated without a duration) are read, and the update is conditional on that
 * and on the sha256 being the one decoded, so a replace that ran meanwhile is never overwritten.
 */
export async function backfillMetadata(
  prisma: PrismaClient,
  blobStore: BlobStore,
  options: BackfillOptions,
): Promise<BackfillSummary> {
  const summary: BackfillSummary = { filled: 0, reoriented: 0, failed: 0, failures: [] };
  let after: string | undefined;
  for (;;) {
    const rows = await prisma.asset.findMany({
      where: { ...NEEDS_METADATA, ...(after ? { id: { gt: after } } : {}) },
      orderBy: { id: "asc" },
      take: options.batchSize,
      select: { id: true, sha256: true, deletedAt: true },
    });
    if (rows.length === 0) break;
    for (const row of rows) {
      try {
        const blob = await blobStore.get(row.deletedAt ? trashKey(row.id) : originalKey(row.id));
        if (!blob) throw new Error("original missing from the blob store");
        const bytes = await buffer(blob.body);
        const meta = await sharp(bytes, { limitInputPixels: options.limitInputPixels, failOn: "error" }).metadata();
        const metadata = await extractImageMetadata(bytes, meta, options.limitInputPixels, options);
        const { count } = await prisma.asset.updateMany({
          where: { id: row.id, sha256: row.sha256, ...NEEDS_METADATA },
          data: { ...metadataColumns(metadata), ...displayedSize(meta) },
        });
        summary.filled += count;
      } catch (err) {
        summary.failed++;
        summary.failures.push({ assetId: row.id, reason: err instanceof Error ? err.message : String(err) });
      }
    }
    after = rows[rows.length - 1]!.id;
    options.onBatch?.(summary);
  }
  await reorientDimensions(prisma, blobStore, options, summary);
  return summary;
}

/** EXIF orientations that turn the image a quarter turn (width and height swap when displayed). */
const QUARTER_TURNS = [5, 6, 7, 8];

/**
 * Rows whose EXIF orientation is 5-8 get width/height as displayed, read from the original's
 * header (no pixel decode). Rows stored with the un-oriented size are the ones corrected; the
 * update is conditional on the sha256 read, so a concurrent replace is never overwritten, and a
 * second run changes nothing.
 */
async function reorientDimensions(
  prisma: PrismaClient,
  blobStore: BlobStore,
  options: BackfillOptions,
  summary: BackfillSummary,
): Promise<void> {
  let after: string | undefined;
  for (;;) {
    const rows = await prisma.asset.findMany({
      where: {
        OR: QUARTER_TURNS.map((o) => ({ exif: { path: ["orientation"], equals: o } })),
        // A HEIC or camera RAW reports the size of its rendering source, already turned upright.
        format: { in: [...RASTER_FORMATS] },
        ...(after ? { id: { gt: after } } : {}),
      },
      orderBy: { id: "asc" },
      take: options.batchSize,
      select: { id: true, sha256: true, deletedAt: true, width: true, height: true },
    });
    if (rows.length === 0) break;
    for (const row of rows) {
      try {
        const blob = await blobStore.get(row.deletedAt ? trashKey(row.id) : originalKey(row.id));
        if (!blob) throw new Error("original missing from the blob store");
        const meta = await sharp(await buffer(blob.body), { limitInputPixels: false }).metadata();
        const size = displayedSize(meta);
        if (size.width === row.width && size.height === row.height) continue;
        const { count } = await prisma.asset.updateMany({ where: { id: row.id, sha256: row.sha256 }, data: size });
        summary.reoriented += count;
      } catch (err) {
        summary.failed++;
        summary.failures.push({ assetId: row.id, reason: err instanceof Error ? err.message : String(err) });
      }
    }
    after = rows[rows.length - 1]!.id;
    options.onBatch?.(summary);
  }
}

export interface PrivacySummary {
  /** Stored originals (current, trashed or earlier versions) rewritten without private metadata. */
  cleaned: number;
  failed: number;
  failures: Array<{ key: string; reason: string }>;
}

/**
 * Removes from every stored original (current, trashed, and kept versions, in every workspace)
 * what ORIGINAL_METADATA and KEEP_GPS say must not be stored: originals uploaded before the upload
 * did it. Losslessly, keeping each blob's content type and header facts; the current row's
 * `bytes` follows the new size. Idempotent: a clean original is read and left alone.
 */
export async function backfillPrivacy(
  prisma: PrismaClient,
  blobStore: BlobStore,
  options: OriginalPrivacyOptions & { batchSize: number; onBatch?: (progress: PrivacySummary) => void },
): Promise<PrivacySummary> {
  const summary: PrivacySummary = { cleaned: 0, failed: 0, failures: [] };
  let after: string | undefined;
  for (;;) {
    const rows = await prisma.asset.findMany({
      where: after ? { id: { gt: after } } : {},
      orderBy: { id: "asc" },
      take: options.batchSize,
      select: { id: true, deletedAt: true, versions: { select: { version: true } } },
    });
    if (rows.length === 0) break;
    for (const row of rows) {
      const current = row.deletedAt ? trashKey(row.id) : originalKey(row.id);
      const keys = [current, ...row.versions.map((v) => versionKey(row.id, v.version))];
      for (const key of keys) {
        try {
          const size = await cleanBlob(blobStore, key, options);
          if (size === undefined) continue;
          summary.cleaned++;
          if (key === current) await prisma.asset.updateMany({ where: { id: row.id }, data: { bytes: size } });
        } catch (err) {
          summary.failed++;
          summary.failures.push({ key, reason: err instanceof Error ? err.message : String(err) });
        }
      }
    }
    after = rows[rows.length - 1]!.id;
    options.onBatch?.(summary);
  }
  return summary;
}

async function cleanBlob(
  blobStore: BlobStore,
  key: string,
  options: OriginalPrivacyOptions,
): Promise<number | undefined> {
  const blob = await blobStore.get(key);
  if (!blob) return undefined;
  const bytes = await buffer(blob.body);
  const format = formatOfMimeType(blob.contentType);
  if (!format) return undefined;
  const container = metadataContainerOf(format);
  const cleaned = container && withoutPrivateMetadata(bytes, container, options);
  if (!cleaned) return undefined;
  await blobStore.put(key, cleaned.bytes, blob.contentType, blob.metadata);
  return cleaned.bytes.length;
}
