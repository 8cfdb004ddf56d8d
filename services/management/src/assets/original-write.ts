import type { Readable } from "node:stream";
import { countUpload } from "../usage/service";
import { originalBlobMetadata, renderingSourceOf, RENDERING_SOURCE_METADATA } from "@media-platform/contracts";
import type { BlobMetadata } from "@media-platform/storage";
import type { AppContext } from "../context";
import type { Asset } from "../generated/prisma/client";
import { recordEagerRenders, recordEvents, type Tx, type WebhookEvent } from "../webhooks/outbox";
import { originalKey, renderingSourceKey } from "./blobs";
import type { AnalysedImage } from "./image-analysis";
import { metadataColumns } from "./image-metadata";

/**
 * Writing a new current original of an asset, the same for an upload, a replace and a version
 * restore: the blob at originals/<id> with the header facts the media service plans from, the
 * row's columns of the original, and in the row's transaction its webhook event and (with
 * MEDIA_EAGER_RENDERS) the eager-render request. When the blob is written is the caller's: an
 * upload streams it before its transaction (no transaction is held while up to MAX_UPLOAD_BYTES
 * travel to the store), a replace writes it under the row lock, after keeping the previous one.
 */
export type NewOriginal = Omit<AnalysedImage, "header" | "format" | "renderingSource"> & {
  /** HEIC, camera RAW: the JPEG renders read instead (blobs.ts), written with the original. */
  renderingSource?: Buffer;
  originalFilename: string;
  /** The asset's format column (an upload's AssetFormat, or a version row's). */
  format: string;
  /** Stored with the blob: the media service's header facts, when known. */
  blobMetadata: BlobMetadata | undefined;
};

/** The original of an analysed upload (image-analysis.ts) by `workspaceId`. */
export function analysedOriginal(image: AnalysedImage, originalFilename: string, workspaceId: string): NewOriginal {
  return {
    renderingSource: image.renderingSource,
    originalFilename,
    mimeType: image.mimeType,
    format: image.format,
    width: image.width,
    height: image.height,
    bytes: image.bytes,
    sha256: image.sha256,
    phash: image.phash,
    metadata: image.metadata,
    blobMetadata: originalBlobMetadata(image.header, workspaceId),
  };
}

/**
 * `original` as version `version` of asset `id`: with a rendering source, its blob metadata names
 * the source's key, sources/<id>/v<version> (the original's header facts are the source's).
 */
export function asVersion(id: string, version: number, original: NewOriginal): NewOriginal {
  if (!original.renderingSource) return original;
  return {
    ...original,
    blobMetadata: { ...original.blobMetadata, [RENDERING_SOURCE_METADATA]: renderingSourceKey(id, version) },
  };
}

/**
 * The blobs of the original: its rendering source first (so the original never names a source
 * that is not there), then originals/<id>, which the media service serves from.
 */
export async function putOriginal(
  ctx: AppContext,
  id: string,
  body: Readable | Buffer,
  original: NewOriginal,
): Promise<void> {
  const sourceKey = renderingSourceOf(original.blobMetadata);
  if (original.renderingSource && sourceKey) {
    const { [RENDERING_SOURCE_METADATA]: _named, ...metadata } = original.blobMetadata ?? {};
    await ctx.blobStore.put(sourceKey, original.renderingSource, "image/jpeg", metadata);
  }
  await ctx.blobStore.put(originalKey(id), body, original.mimeType, original.blobMetadata);
}

/** The asset row's columns that describe its current original. */
export type OriginalColumns = ReturnType<typeof originalColumns>;

function originalColumns(original: NewOriginal) {
  return {
    originalFilename: original.originalFilename,
    mimeType: original.mimeType,
    format: original.format,
    width: original.width,
    height: original.height,
    bytes: BigInt(original.bytes),
    sha256: original.sha256,
    phash: original.phash,
    ...(original.metadata ? metadataColumns(original.metadata) : {}),
  };
}

export interface OriginalRecord {
  workspaceId: string;
  original: NewOriginal;
  /** Creates (upload) or updates (replace) the row with the original's columns. */
  row: (columns: OriginalColumns) => Promise<Asset>;
  /** The webhook event of the written row: asset.created or asset.replaced. */
  event: (row: Asset) => WebhookEvent & { type: "asset.created" | "asset.replaced" };
}

/**
 * Inside the caller's transaction: the row with the new original, its event and the eager-render
 * request (outbox), so both exist exactly when the original committed. Returns the row.
 */
export async function recordOriginal(tx: Tx, ctx: AppContext, record: OriginalRecord): Promise<Asset> {
  const row = await record.row(originalColumns(record.original));
  const event = record.event(row);
  await recordEvents(tx, ctx.webhookUrls ?? [], [event]);
  await countUpload(tx, record.workspaceId);
  // `replaced`: media purges the asset before rendering, whichever of this and the purge comes first.
  await recordEagerRenders(
    tx,
    ctx.eagerRenders?.mediaUrls ?? [],
    record.workspaceId,
    row,
    event.type === "asset.replaced",
  );
  return row;
}
