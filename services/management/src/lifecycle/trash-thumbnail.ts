import sharp from "sharp";
import { UndecodableImageError } from "@media-platform/contracts";
import { trashKey } from "../assets/blobs";
import type { Principal } from "../auth/keys";
import type { AppContext } from "../context";
import { MissingBlobError, NotFoundError } from "../domain-errors";

/** The trash view's thumbnails: squares of this many pixels, as the library's grid shows them. */
export const TRASH_THUMBNAIL_SIZE = 256;

export interface TrashThumbnail {
  body: Buffer;
  contentType: "image/webp";
}

/**
 * A thumbnail of a trashed asset of the caller's workspace. The media service cannot show one:
 * a trashed original lives at `trash/<id>`, out of its reach, so that no public URL (signed or
 * not) reaches it. This renders from that blob for the authenticated owner only: cropped to a
 * square around the centre, upright (EXIF orientation), first frame, WebP.
 */
export async function trashThumbnail(ctx: AppContext, principal: Principal, assetId: string): Promise<TrashThumbnail> {
  const row = await ctx.prisma.asset.findFirst({
    where: { id: assetId, workspaceId: principal.workspaceId, deletedAt: { not: null } },
    select: { id: true },
  });
  if (!row) throw new NotFoundError("No asset with this id in the trash");
  const blob = await ctx.blobStore.get(trashKey(row.id));
  if (!blob) throw new MissingBlobError("The trashed original is missing from the blob store");
  let original: Buffer;
  try {
    original = Buffer.concat(await blob.body.toArray());
  } finally {
    blob.release();
  }
  try {
    const body = await sharp(original, { limitInputPixels: ctx.limitInputPixels, pages: 1 })
      .rotate()
      .resize(TRASH_THUMBNAIL_SIZE, TRASH_THUMBNAIL_SIZE, { fit: "cover" })
      .webp({ quality: 75 })
      .toBuffer();
    return { body, contentType: "image/webp" };
  } catch (err) {
    throw new UndecodableImageError("The trashed original could not be decoded for a thumbnail", { cause: err });
  }
}
