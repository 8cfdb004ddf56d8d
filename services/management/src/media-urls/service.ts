import {
  mediaAssetIdOf,
  signedMediaUrl,
  type SignMediaUrlRequest,
  type SignMediaUrlResponse,
} from "@media-platform/contracts";
import type { Principal } from "../auth/keys";
import type { AppContext } from "../context";
import { NotFoundError } from "../domain-errors";

/**
 * The absolute media URL of `path`, signed with MEDIA_SIGNING_KEY when the server holds one.
 * Only a live asset of the caller's workspace gets a URL: a signature is a capability, and the
 * key must never sign for another workspace's ids.
 */
export async function signMediaUrl(
  ctx: AppContext,
  principal: Principal,
  input: SignMediaUrlRequest,
): Promise<SignMediaUrlResponse> {
  const assetId = mediaAssetIdOf(input.path);
  // Same answer for a path without an id as for another workspace's id: nothing to sign.
  if (!assetId) throw new NotFoundError("The path names no asset (expected /<steps>/<assetId>.<ext>)");
  const asset = await ctx.prisma.asset.findFirst({
    where: { id: assetId, workspaceId: principal.workspaceId, deletedAt: null },
    select: { id: true },
  });
  if (!asset) throw new NotFoundError("Asset not found");
  const key = ctx.mediaSigningKey;
  if (!key) return { url: `${ctx.mediaPublicUrl}${input.path}`, signed: false };
  return {
    url: `${ctx.mediaPublicUrl}${signedMediaUrl(input.path, key, { expiresAt: input.expiresAt })}`,
    signed: true,
  };
}
