import { z } from "zod";

/**
 * The media service's internal purge endpoint: management calls it after an asset is deleted or its
 * original replaced, so that no cached rendition outlives its original (see README, "Change
 * propagation"). Authenticated with a shared secret (MEDIA_PURGE_SECRET) as a bearer token.
 */
export const PURGE_PATH = "/internal/purge";
/** File in DATA_DIR holding the generated secret when MEDIA_PURGE_SECRET is unset (embedded mode). */
export const PURGE_SECRET_FILE = "purge-secret";
export const MAX_PURGE_ASSETS = 1000;

export const purgeRequestSchema = z
  .object({
    assetIds: z
      .array(
        z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, "must be a lowercase UUID"),
      )
      .min(1)
      .max(MAX_PURGE_ASSETS),
  })
  .strict();
export type PurgeRequest = z.infer<typeof purgeRequestSchema>;

/**
 * The media service's internal eager-render endpoint: management calls it (through its outbox, at
 * least once) after an upload or replace commits, and the media service renders the asset's eager
 * presets (MEDIA_PRESETS_FILE) into its cache tiers. Same bearer secret as the purge endpoint.
 * `extension` is the one the asset's media URLs use; `replaced` purges the asset first, so no
 * rendition of the previous original survives the eager renders.
 */
export const EAGER_PATH = "/internal/eager";

export const eagerRequestSchema = z
  .object({
    assetId: z
      .string()
      .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, "must be a lowercase UUID"),
    extension: z.string().regex(/^[a-z0-9]{1,8}$/, "must be a lowercase file extension"),
    replaced: z.boolean().optional(),
  })
  .strict();
export type EagerRequest = z.infer<typeof eagerRequestSchema>;
