import {
  mediaAssetIdOf,
  type SignMediaUrlRequest,
  type SignMediaUrlResponse,
  type SignMediaUrlsRequest,
  type SignMediaUrlsResponse,
} from "@media-platform/contracts";
import { mediaLinksOf } from "../assets/media-links";
import type { Principal } from "../auth/keys";
import type { AppContext } from "../context";
import { NotFoundError } from "../domain-errors";

/** The ids of `ids` that are live assets of the workspace: a signature is a capability. */
async function liveIds(ctx: AppContext, principal: Principal, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await ctx.prisma.asset.findMany({
    where: { id: { in: ids }, workspaceId: principal.workspaceId, deletedAt: null },
    select: { id: true },
  });
  return new Set(rows.map((r) => r.id));
}

/**
 * The absolute media URL of `path`, signed with MEDIA_SIGNING_KEY when the server holds one.
 * Only a live asset of the caller's workspace gets a URL: the key must never sign for another
 * workspace's ids. Without `expiresAt`, MEDIA_URL_LIFETIME_SECONDS' windowed exp applies.
 */
export async function signMediaUrl(
  ctx: AppContext,
  principal: Principal,
  input: SignMediaUrlRequest,
): Promise<SignMediaUrlResponse> {
  const assetId = mediaAssetIdOf(input.path);
  // Same answer for a path without an id as for another workspace's id: nothing to sign.
  if (!assetId) throw new NotFoundError("The path names no asset (expected /<steps>/<assetId>.<ext>)");
  if (!(await liveIds(ctx, principal, [assetId])).has(assetId)) throw new NotFoundError("Asset not found");
  const links = mediaLinksOf(ctx);
  return { url: links.url(input.path, input.expiresAt ?? links.expiresAt), signed: links.signed };
}

/**
 * Many paths at once (a page of the library's grid and its srcset sizes): one query for every
 * id, and the paths of assets that are not live in the workspace listed in `notFound` rather
 * than failing the page.
 */
export async function signMediaUrls(
  ctx: AppContext,
  principal: Principal,
  input: SignMediaUrlsRequest,
): Promise<SignMediaUrlsResponse> {
  const paths = [...new Set(input.paths)];
  const idOf = new Map(paths.map((p) => [p, mediaAssetIdOf(p)]));
  const live = await liveIds(ctx, principal, [
    ...new Set([...idOf.values()].filter((id): id is string => id !== undefined)),
  ]);
  const links = mediaLinksOf(ctx);
  const expiresAt = links.signed ? (input.expiresAt ?? links.expiresAt) : undefined;
  const urls: Record<string, string> = {};
  const notFound: string[] = [];
  for (const [path, id] of idOf) {
    if (id !== undefined && live.has(id)) urls[path] = links.url(path, expiresAt);
    else notFound.push(path);
  }
  return { urls, notFound, signed: links.signed, expiresAt: expiresAt ?? null };
}
