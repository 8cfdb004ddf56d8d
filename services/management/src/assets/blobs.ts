import { attributesKey, originalKey, renderingSourceKey } from "@media-platform/storage";

/**
 * Blob layout of an asset. The media service reads `originals/<assetId>` (the current
 * original of a live asset) and `attributes/<assetId>` (its focal point), so it needs no database
 * to know what exists:
 *  - trash moves the original to `trash/<assetId>` (media answers 404), restore moves it back;
 *    the attributes stay where they are (useless to media while the original is away);
 *  - a replace keeps the previous original at `versions/<assetId>/v<version>`, and the attributes
 *    (the focal point is kept: its fractions apply to the new original);
 *  - a HEIC or camera RAW original has a rendering source, `sources/<assetId>/v<version>` (the
 *    JPEG renders read, named in the original's blob metadata): written with its original, never
 *    moved (media reaches it only through the live original, so a trashed asset's is out of
 *    reach), kept while its version is the current one or a kept version, deleted with it;
 *  - a permanent delete removes all of them.
 */
export const trashKey = (assetId: string): string => `trash/${assetId}`;
export const versionKey = (assetId: string, version: number): string => `versions/${assetId}/v${version}`;
export { attributesKey, originalKey, renderingSourceKey };

/**
 * Runs `fn` over `items` with at most `concurrency` at once. After the first failure no further
 * item starts; it rejects with that failure once every started call has settled, so nothing is
 * still running when the caller reacts (e.g. undoes what was done).
 */
export async function forEachLimited<T>(items: readonly T[], concurrency: number, fn: (item: T) => Promise<void>) {
  let next = 0;
  let failure: { err: unknown } | undefined;
  const workers = Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (!failure && next < items.length) {
      try {
        await fn(items[next++]!);
      } catch (err) {
        failure ??= { err };
      }
    }
  });
  await Promise.all(workers);
  if (failure) throw failure.err;
}
