import { attributesKey, originalKey, type BlobStore } from "@media-platform/storage";

/**
 * Blob layout of the lifecycle. The media service reads `originals/<assetId>` (the current
 * original of a live asset) and `attributes/<assetId>` (its focal point), so it needs no database
 * to know what exists:
 *  - trash moves the original to `trash/<assetId>` (media answers 404), restore moves it back;
 *    the attributes stay where they are (useless to media while the original is away);
 *  - a replace keeps the previous original at `versions/<assetId>/v<version>`, and the attributes
 *    (the focal point is kept: its fractions apply to the new original);
 *  - a permanent delete removes all of them.
 */
export const trashKey = (assetId: string): string => `trash/${assetId}`;
export const versionKey = (assetId: string, version: number): string => `versions/${assetId}/v${version}`;
export { attributesKey, originalKey };

/** Copies `from` to `to` (bytes, content type and metadata), then deletes `from`. False when `from` does not exist. */
export async function moveBlob(store: BlobStore, from: string, to: string): Promise<boolean> {
  const blob = await store.get(from);
  if (!blob) return false;
  // With its metadata (the media service's header facts), so the blob reads the same where it lands.
  await store.put(to, blob.body, blob.contentType, blob.metadata);
  await store.delete(from);
  return true;
}

/** Runs `fn` over `items` with at most `concurrency` at once; rejects with the first failure. */
export async function forEachLimited<T>(items: readonly T[], concurrency: number, fn: (item: T) => Promise<void>) {
  let next = 0;
  const workers = Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]!);
  });
  await Promise.all(workers);
}
