import { z } from "zod";
import { focalPointSchema } from "./asset-attributes";
import { ASSET_FORMATS } from "./image-formats";

/**
 * Request and response schemas of the management API (/v1). The service validates every input
 * with these, and they are the source for the OpenAPI document.
 */

export const uuidSchema = z
  .string()
  .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, "must be a UUID")
  .transform((s) => s.toLowerCase())
  .describe("Identifier: a random UUIDv4");

/**
 * User text is stored NFC-normalised (so "café" typed either way matches) and refused with a 400
 * when it holds a lone UTF-16 surrogate (not representable in UTF-8) or a control character:
 * NUL (Postgres text cannot hold it), C0 except tab/newline/carriage return, DEL and C1.
 * Single-line text (tags, names, filenames) refuses tab and line breaks too.
 */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/;
// eslint-disable-next-line no-control-regex
const LINE_CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const LONE_SURROGATE = /\p{Cs}/u;
/** Only a type error says "must be a string": length and format issues keep their own message. */
const stringType = () =>
  z.string({ error: (issue) => (issue.code === "invalid_type" ? "must be a string" : undefined) });
const unicodeText = (control: RegExp) =>
  stringType()
    .refine((s) => !LONE_SURROGATE.test(s), "must be valid Unicode (no lone surrogates)")
    .refine((s) => !control.test(s), "must not contain control characters")
    .overwrite((s) => s.normalize("NFC"));
const userText = () => unicodeText(CONTROL);
const singleLine = () => unicodeText(LINE_CONTROL);

export const MAX_FILENAME_LENGTH = 255;
/** A client file name after its directories are stripped: single-line Unicode, stored NFC. */
export const filenameSchema = singleLine()
  .max(MAX_FILENAME_LENGTH, `must be at most ${MAX_FILENAME_LENGTH} characters`)
  .describe("Client file name without directories");

export const MAX_TAGS = 50;
export const MAX_TAG_LENGTH = 64;
export const MAX_TEXT_LENGTH = 10_000;
export const MAX_TITLE_LENGTH = 500;
export const MAX_COLLECTION_NAME_LENGTH = 200;

export const assetFormatSchema = z
  .enum(ASSET_FORMATS)
  .describe(
    "Format sniffed from the uploaded bytes. svg: stored sanitised, width and height are its intrinsic size (width/height attributes, else viewBox) at 72 dpi, renditions are PNG. heic (HEVC): stored as uploaded, width and height of its primary image as displayed, renditions are JPEG. dng, cr2, cr3, nef, arw, raf, rw2, orf (camera RAW): stored as uploaded, width, height and placeholder of its largest embedded JPEG preview, EXIF of the camera, renditions are JPEG. pdf: stored as uploaded, width and height of page 1 in points (72 dpi), renditions are PNG pages (page:index)",
  );

// ---------------------------------------------------------------------------------------------
// Asset

export const assetExifSchema = z
  .object({
    make: z.string().nullable().describe("Camera make (EXIF Make)"),
    model: z.string().nullable().describe("Camera model (EXIF Model)"),
    lens: z.string().nullable().describe("Lens model (EXIF LensModel, else LensMake)"),
    takenAt: z
      .string()
      .datetime()
      .nullable()
      .describe("Capture time (DateTimeOriginal): the camera's wall-clock time written as UTC, EXIF has no zone"),
    orientation: z.number().int().nullable().describe("EXIF orientation 1-8 of the original"),
    exposureTime: z.number().nullable().describe("Exposure time in seconds"),
    fNumber: z.number().nullable().describe("Aperture f-number"),
    iso: z.number().nullable().describe("ISO speed"),
    gps: z
      .object({
        latitude: z.number().describe("Decimal degrees, negative = south"),
        longitude: z.number().describe("Decimal degrees, negative = west"),
        altitude: z.number().nullable().describe("Metres, negative = below sea level"),
      })
      .optional()
      .describe("GPS position; present only when the management service runs with KEEP_GPS=true"),
  })
  .describe("Selected EXIF fields of the original");
export type AssetExif = z.infer<typeof assetExifSchema>;

export const assetSchema = z
  .object({
    id: z.string().uuid().describe("Asset identifier (UUIDv4)"),
    workspaceId: z.string().describe("Workspace that owns the asset"),
    collectionId: z.string().uuid().nullable().describe("Collection the asset belongs to, or null"),
    userTitle: z.string().nullable().describe("User-managed title"),
    userTags: z.array(z.string()).describe("User-managed tags"),
    userCaption: z.string().nullable().describe("User-managed caption"),
    userDescription: z.string().nullable().describe("User-managed description"),
    originalFilename: z.string().describe("File name given by the client at upload"),
    mimeType: z.string().describe("Content type of the stored original, from the sniffed format"),
    format: assetFormatSchema,
    width: z
      .number()
      .int()
      .describe(
        "Width in pixels as displayed: after the EXIF orientation (5-8 swap the stored width and height), of the first frame or page",
      ),
    height: z
      .number()
      .int()
      .describe("Height in pixels as displayed: after the EXIF orientation, of the first frame or page"),
    bytes: z.number().int().describe("Size of the original in bytes"),
    sha256: z.string().length(64).describe("SHA-256 of the original bytes, lowercase hex"),
    createdAt: z.string().datetime().describe("Creation time (ISO 8601)"),
    updatedAt: z.string().datetime().describe("Last update time (ISO 8601)"),
    version: z
      .number()
      .int()
      .min(1)
      .describe("Version of the current original: 1 at upload, +1 on each replace or version restore"),
    deletedAt: z
      .string()
      .datetime()
      .nullable()
      .describe("When the asset was moved to the trash; null for a live asset"),
    mediaUrl: z
      .string()
      .url()
      .describe("Example transformation URL of this asset on the media service: a 256 px thumbnail"),
    placeholder: z
      .string()
      .nullable()
      .describe(
        "ThumbHash (base64) of the original, for a blurred placeholder while the image loads; null until computed (pnpm run backfill:metadata)",
      ),
    placeholderDataUrl: z
      .string()
      .nullable()
      .describe(
        "The placeholder decoded to a small PNG data URL (~1-2.5 KB), ready for an <img> src or a CSS background",
      ),
    dominantColor: z
      .string()
      .regex(/^#[0-9a-f]{6}$/)
      .nullable()
      .describe("Dominant colour of the original as #rrggbb"),
    hasAlpha: z.boolean().nullable().describe("The original has an alpha channel"),
    animated: z.boolean().nullable().describe("The original has more than one frame (animated GIF/WebP)"),
    pages: z.number().int().min(1).nullable().describe("Number of frames or pages of the original"),
    durationMs: z
      .number()
      .int()
      .min(0)
      .nullable()
      .describe(
        "Total duration of an animated original in milliseconds (sum of its frame delays); null for a still image",
      ),
    exif: assetExifSchema
      .nullable()
      .describe("Selected EXIF fields; null when the original has no EXIF or metadata is not computed yet"),
    focalPoint: focalPointSchema
      .nullable()
      .describe(
        "Point of interest as fractions (0-1) of the image as displayed (after EXIF orientation), or null: thumbnail, avatar and crop:gravity=focal centre on it; kept when the original is replaced",
      ),
  })
  .describe("Serialized asset with its metadata fields");
export type AssetDto = z.infer<typeof assetSchema>;

export const duplicateMatchSchema = z
  .object({
    assetId: z.string().uuid().describe("Existing asset of the same workspace"),
    match: z.enum(["exact", "similar"]).describe("exact: same sha256; similar: perceptual hash within the threshold"),
    distance: z.number().int().min(0).max(64).describe("Hamming distance of the 64-bit perceptual hashes"),
  })
  .describe("A possible duplicate found at upload");
export type DuplicateMatch = z.infer<typeof duplicateMatchSchema>;

export const uploadResponseSchema = assetSchema
  .extend({
    duplicates: z
      .array(duplicateMatchSchema)
      .optional()
      .describe("Present when warnAboutDuplicateImages was set: exact and similar assets, closest first"),
  })
  .describe("The created asset (201)");
export type UploadResponse = z.infer<typeof uploadResponseSchema>;

const booleanFlag = z
  .enum(["true", "false", "1", "0"], { message: "must be one of true, false, 1, 0" })
  .transform((v) => v === "true" || v === "1");

/** Text fields of the multipart upload (the `file` part is handled by the upload middleware). */
export const uploadFieldsSchema = z
  .object({
    collectionId: uuidSchema.optional().describe("Assign the new asset to this collection of the workspace"),
    warnAboutDuplicateImages: booleanFlag
      .optional()
      .describe("true/false/1/0: list exact and similar assets of the workspace in the response"),
  })
  .strict()
  .describe("multipart/form-data fields besides the required `file` part");
export type UploadFields = z.infer<typeof uploadFieldsSchema>;

const nullableText = (max: number, what: string) =>
  userText()
    .trim()
    .max(max, `must be at most ${max} characters`)
    .transform((s) => (s.length === 0 ? null : s))
    .nullable()
    .describe(`${what}; null or an empty string clears it`);

export const userTagsSchema = z
  .array(
    singleLine()
      .trim()
      .min(1, "tags must not be empty")
      .max(MAX_TAG_LENGTH, `tags must be at most ${MAX_TAG_LENGTH} characters`),
  )
  .transform((tags) => [...new Set(tags)])
  .refine((tags) => tags.length <= MAX_TAGS, { message: `at most ${MAX_TAGS} tags` })
  .describe(`Replaces the whole tag list: trimmed, deduplicated, each 1-${MAX_TAG_LENGTH} chars, at most ${MAX_TAGS}`);

export const patchAssetSchema = z
  .object({
    userTitle: nullableText(MAX_TITLE_LENGTH, "User-managed title").optional(),
    userTags: userTagsSchema.optional(),
    userCaption: nullableText(MAX_TEXT_LENGTH, "User-managed caption").optional(),
    userDescription: nullableText(MAX_TEXT_LENGTH, "User-managed description").optional(),
    collectionId: uuidSchema
      .nullable()
      .optional()
      .describe("Collection of the same workspace; null removes the asset from its collection"),
    focalPoint: focalPointSchema
      .nullable()
      .optional()
      .describe(
        "Point of interest {x, y}, fractions 0-1 of the image as displayed (after EXIF orientation), x from the left, y from the top; null clears it. thumbnail and avatar centre on it (avatar skips face detection), crop:gravity=focal too; a change purges the asset's cached renditions",
      ),
  })
  .strict()
  .describe("PATCH /v1/assets/:assetId body: only given fields change; unknown fields are rejected");
export type PatchAsset = z.infer<typeof patchAssetSchema>;

export const ASSET_SORTS = [
  "createdAt",
  "-createdAt",
  "updatedAt",
  "-updatedAt",
  "userTitle",
  "-userTitle",
  "bytes",
  "-bytes",
] as const;
export const assetSortSchema = z.enum(ASSET_SORTS).describe("Sort field; a leading - sorts descending");
export type AssetSort = z.infer<typeof assetSortSchema>;

/** ISO 8601 with a four-digit year (Date.parse also takes `-000001-...` and `+275760-...`, which no column holds). */
const ISO_DATE_TIME =
  /^[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,9})?)?(Z|[+-][0-9]{2}:[0-9]{2})?)?$/;
const isoDate = (what: string) =>
  z
    .string()
    .refine(
      (s) => ISO_DATE_TIME.test(s) && !Number.isNaN(Date.parse(s)) && new Date(s).getUTCFullYear() >= 1,
      "must be an ISO 8601 date or date-time (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ)",
    )
    .transform((s) => new Date(s))
    .describe(what);

/**
 * A page size from a query string: decimal digits only, so `0x10`, `1e1`, ` 5` or `+5` are a 400
 * rather than whatever Number() makes of them.
 */
const pageLimit = (what: string) =>
  z
    .preprocess(
      (v) => (typeof v === "string" && /^[0-9]{1,6}$/.test(v) ? Number(v) : v),
      z
        .number({ error: "must be an integer 1-100" })
        .int("must be an integer 1-100")
        .min(1, "must be an integer 1-100")
        .max(100, "must be an integer 1-100")
        .default(25),
    )
    .describe(what);

/**
 * Fields a list leaves out unless asked for (`?include=placeholderDataUrl,exif`): the data URL
 * alone was 75% of a list page, and the ThumbHash string (`placeholder`) draws the same image.
 */
export const LIST_INCLUDE_FIELDS = ["placeholderDataUrl", "exif"] as const;
export type ListIncludeField = (typeof LIST_INCLUDE_FIELDS)[number];

export const listIncludeSchema = z
  .preprocess(
    // `?include=exif&include=placeholderDataUrl` means the same as `?include=exif,placeholderDataUrl`.
    (v) => (Array.isArray(v) && v.every((s) => typeof s === "string") ? v.join(",") : v),
    z.string().max(200, "must be at most 200 characters"),
  )
  .transform((value, ctx) => {
    const names = value
      .split(",")
      .map((n) => n.trim())
      .filter((n) => n.length > 0);
    const unknown = names.filter((n) => !(LIST_INCLUDE_FIELDS as readonly string[]).includes(n));
    if (unknown.length > 0) {
      ctx.addIssue({
        code: "custom",
        message: `unknown field ${JSON.stringify(unknown[0])}; must be a comma-separated list of ${LIST_INCLUDE_FIELDS.join(", ")}`,
      });
      return z.NEVER;
    }
    return [...new Set(names)] as ListIncludeField[];
  })
  .describe(
    `Comma-separated heavy fields to add to each listed asset: ${LIST_INCLUDE_FIELDS.join(", ")} (left out by default; GET /v1/assets/:assetId always has them)`,
  );

/** Fields a list or a full-text search can count its whole result by (`facets=`). */
export const FACET_FIELDS = ["tags", "collectionId", "format"] as const;
export type FacetField = (typeof FACET_FIELDS)[number];
/** Values returned per facet, most frequent first. */
export const FACET_VALUES_LIMIT = 20;
/**
 * Facet counts are exact when at most this many assets match; above it they are counted over a
 * sample of the matches and scaled to the result's size (then facetsAreEstimates is true).
 */
export const FACET_EXACT_LIMIT = 10_000;

const facetsSchema = z
  .preprocess(
    // `?facets=tags&facets=format` means the same as `?facets=tags,format`.
    (v) => (Array.isArray(v) && v.every((s) => typeof s === "string") ? v.join(",") : v),
    z.string().max(200, "must be at most 200 characters"),
  )
  .transform((raw, ctx) => {
    const names = raw
      .split(",")
      .map((n) => n.trim())
      .filter((n) => n.length > 0);
    const unknown = names.filter((n) => !(FACET_FIELDS as readonly string[]).includes(n));
    if (unknown.length > 0) {
      ctx.addIssue({
        code: "custom",
        message: `unknown facet ${JSON.stringify(unknown[0])}; must be a comma-separated list of ${FACET_FIELDS.join(", ")}`,
      });
      return z.NEVER;
    }
    return [...new Set(names)] as FacetField[];
  })
  .describe(
    `Comma-separated fields to count the whole result by: ${FACET_FIELDS.join(", ")}; the ${FACET_VALUES_LIMIT} most frequent values of each come back in facets`,
  );

const facetValueSchema = z
  .object({
    value: z.string().describe("The tag, collection id or format"),
    count: z.number().int().describe("Matching assets with this value (scaled when facetsAreEstimates)"),
  })
  .describe("One facet value and its count");

const facetsResultSchema = {
  facets: z
    .object({
      tags: z.array(facetValueSchema).optional(),
      collectionId: z.array(facetValueSchema).optional(),
      format: z.array(facetValueSchema).optional(),
    })
    .optional()
    .describe(
      `Present when the facets parameter asks for it: per facet, its ${FACET_VALUES_LIMIT} most frequent values over the whole result (all pages), most frequent first, then by value`,
    ),
  facetsAreEstimates: z
    .literal(true)
    .optional()
    .describe(
      `Present (true) when more than ${FACET_EXACT_LIMIT} assets match and the facet counts come from a sample of them, scaled to the whole result; absent when they are exact`,
    ),
};

export const listAssetsQuerySchema = z
  .object({
    search: userText()
      .trim()
      .max(200, "must be at most 200 characters")
      .optional()
      .describe("Case-insensitive substring of title, tags, caption, description or filename"),
    collectionId: uuidSchema.optional().describe("Only assets of this collection"),
    tag: singleLine()
      .trim()
      .min(1, "must not be empty")
      .max(MAX_TAG_LENGTH, `must be at most ${MAX_TAG_LENGTH} characters`)
      .optional()
      .describe("Only assets carrying this exact tag"),
    format: assetFormatSchema.optional(),
    createdAfter: isoDate("Only assets created at or after this time").optional(),
    createdBefore: isoDate("Only assets created before this time").optional(),
    sort: assetSortSchema.default("-createdAt"),
    limit: pageLimit("Page size, 1-100"),
    cursor: z.string().max(1000).optional().describe("Opaque cursor from a previous page's nextCursor"),
    trashed: booleanFlag
      .optional()
      .describe("true/false/1/0: list the assets in the trash (each with deletedAt) instead of the live ones"),
    include: listIncludeSchema.optional(),
    facets: facetsSchema.optional(),
  })
  .strict()
  .describe("GET /v1/assets query");
export type ListAssetsQuery = z.infer<typeof listAssetsQuerySchema>;

/**
 * GET /v1/assets counts matches exactly up to this many; above it, count is the query planner's
 * estimate (counting a million rows on every page would cost more than the page itself).
 */
export const LIST_EXACT_COUNT_LIMIT = 10_000;

/** An asset in a list: the fields of {@link LIST_INCLUDE_FIELDS} only when `include` names them. */
export const listedAssetSchema = assetSchema
  .extend({
    placeholderDataUrl: assetSchema.shape.placeholderDataUrl.optional(),
    exif: assetSchema.shape.exif.optional(),
  })
  .describe("Asset in a list: placeholderDataUrl and exif present only when the include parameter names them");
export type ListedAssetDto = z.infer<typeof listedAssetSchema>;

export const listAssetsResponseSchema = z
  .object({
    count: z
      .number()
      .int()
      .describe(
        `Number of assets matching the filters (all pages): exact up to ${LIST_EXACT_COUNT_LIMIT}; above that, an estimate (then countIsEstimate is true)`,
      ),
    countIsEstimate: z
      .literal(true)
      .optional()
      .describe(
        `Present (true) when more than ${LIST_EXACT_COUNT_LIMIT} assets match and count is the database's estimate; absent when count is exact`,
      ),
    assets: z.array(listedAssetSchema).describe("This page"),
    nextCursor: z.string().nullable().describe("Pass as cursor for the next page; null on the last page"),
    ...facetsResultSchema,
  })
  .describe("GET /v1/assets result");
export type ListAssetsResponse = z.infer<typeof listAssetsResponseSchema>;

export const fullTextQuerySchema = z
  .object({
    q: userText()
      .trim()
      .min(1, "must not be empty")
      .max(200, "must be at most 200 characters")
      .describe('Web-search syntax: words, "quoted phrases", -excluded, or'),
    limit: pageLimit("Maximum number of results, 1-100"),
    include: listIncludeSchema.optional(),
    facets: facetsSchema.optional(),
  })
  .strict()
  .describe("GET /v1/assets/search/full-text query");
export type FullTextQuery = z.infer<typeof fullTextQuerySchema>;

export const scoredAssetSchema = listedAssetSchema
  .extend({
    score: z.number().describe("Relevance, higher is better"),
  })
  .describe("Asset with its full-text relevance score");
export const fullTextResponseSchema = z
  .object({
    count: z.number().int().describe("Number of assets returned"),
    assets: z.array(scoredAssetSchema).describe("Matches, best first"),
    ...facetsResultSchema,
  })
  .describe("GET /v1/assets/search/full-text result");
export type FullTextResponse = z.infer<typeof fullTextResponseSchema>;

export const assetIdParamsSchema = z.object({ assetId: uuidSchema }).describe("Path parameters");

// ---------------------------------------------------------------------------------------------
// Collections

export const collectionSchema = z
  .object({
    id: z.string().uuid().describe("Collection identifier (UUIDv4)"),
    name: z.string().describe("Name, unique within the workspace"),
    assetCount: z.number().int().describe("Number of assets currently in the collection"),
    createdAt: z.string().datetime().describe("Creation time (ISO 8601)"),
    updatedAt: z.string().datetime().describe("Last update time (ISO 8601)"),
  })
  .describe("Collection");
export type CollectionDto = z.infer<typeof collectionSchema>;

export const createCollectionSchema = z
  .object({
    name: singleLine()
      .trim()
      .min(1, "must not be empty")
      .max(MAX_COLLECTION_NAME_LENGTH, `must be at most ${MAX_COLLECTION_NAME_LENGTH} characters`)
      .describe("Name, trimmed, 1-200 characters, unique within the workspace"),
  })
  .strict()
  .describe("POST /v1/asset-collections body");
export type CreateCollection = z.infer<typeof createCollectionSchema>;

export const listCollectionsResponseSchema = z
  .object({
    count: z.number().int().describe("Number of collections"),
    collections: z.array(collectionSchema).describe("Collections of the workspace, by name"),
  })
  .describe("GET /v1/asset-collections result");
export type ListCollectionsResponse = z.infer<typeof listCollectionsResponseSchema>;

export const collectionIdParamsSchema = z.object({ id: uuidSchema }).describe("Path parameters");

export const deleteCollectionQuerySchema = z
  .object({
    withAssets: booleanFlag
      .optional()
      .describe("true/false/1/0: move the collection's assets to the trash first (default: they stay, unassigned)"),
  })
  .strict()
  .describe("DELETE /v1/asset-collections/:id query");
export type DeleteCollectionQuery = z.infer<typeof deleteCollectionQuerySchema>;

// ---------------------------------------------------------------------------------------------
// Asset lifecycle: trash, restore, replace, versions, batch

export const deleteAssetQuerySchema = z
  .object({
    permanent: booleanFlag
      .optional()
      .describe(
        "true/false/1/0: remove the row, every stored original and version and every cached rendition at once (live or trashed asset) instead of moving it to the trash",
      ),
  })
  .strict()
  .describe("DELETE /v1/assets/:assetId query");
export type DeleteAssetQuery = z.infer<typeof deleteAssetQuerySchema>;

export const assetVersionSchema = z
  .object({
    version: z.number().int().min(1).describe("Version number"),
    originalFilename: z.string().describe("File name given by the client"),
    mimeType: z.string().describe("Content type of that original"),
    format: assetFormatSchema,
    width: z.number().int().describe("Width in pixels as displayed (after the EXIF orientation)"),
    height: z.number().int().describe("Height in pixels as displayed (after the EXIF orientation)"),
    bytes: z.number().int().describe("Size in bytes"),
    sha256: z.string().length(64).describe("SHA-256 of the bytes, lowercase hex"),
    createdAt: z.string().datetime().describe("When this original became current"),
    replacedAt: z.string().datetime().describe("When it was replaced"),
  })
  .describe("A previous original of an asset");
export type AssetVersionDto = z.infer<typeof assetVersionSchema>;

export const listAssetVersionsResponseSchema = z
  .object({
    currentVersion: z.number().int().min(1).describe("Version of the current original (the asset's version)"),
    count: z.number().int().describe("Number of kept previous versions"),
    versions: z.array(assetVersionSchema).describe("Previous originals, newest first (at most ASSET_VERSIONS_KEPT)"),
  })
  .describe("GET /v1/assets/:assetId/versions result");
export type ListAssetVersionsResponse = z.infer<typeof listAssetVersionsResponseSchema>;

export const assetVersionParamsSchema = z
  .object({
    assetId: uuidSchema,
    version: z.coerce
      .number({ message: "must be a positive integer" })
      .int("must be a positive integer")
      .min(1)
      .max(2_147_483_647)
      .describe("Version number"),
  })
  .describe("Path parameters");

/** Most ids one batch request may name. */
export const MAX_BATCH_IDS = 1000;
export const BATCH_ACTIONS = ["delete", "restore", "addTags", "removeTags", "setCollection"] as const;

const batchIds = z
  .array(uuidSchema)
  .min(1, "at least one id")
  .max(MAX_BATCH_IDS, `at most ${MAX_BATCH_IDS} ids`)
  .transform((ids) => [...new Set(ids)])
  .describe(`Asset ids, 1-${MAX_BATCH_IDS} (duplicates count once)`);

export const batchRequestSchema = z
  .discriminatedUnion("action", [
    z
      .object({ action: z.literal("delete"), ids: batchIds })
      .strict()
      .describe("Move the assets to the trash"),
    z
      .object({ action: z.literal("restore"), ids: batchIds })
      .strict()
      .describe("Restore the assets from the trash"),
    z
      .object({ action: z.literal("addTags"), ids: batchIds, value: userTagsSchema })
      .strict()
      .describe("Add tags (the result must stay within the tag limit)"),
    z
      .object({ action: z.literal("removeTags"), ids: batchIds, value: userTagsSchema })
      .strict()
      .describe("Remove tags"),
    z
      .object({
        action: z.literal("setCollection"),
        ids: batchIds,
        value: uuidSchema.nullable().describe("Collection of the workspace, or null to unassign"),
      })
      .strict()
      .describe("Assign the assets to a collection (or none)"),
  ])
  .describe("POST /v1/assets/batch body: one action over up to 1000 assets of the workspace, in one transaction");
export type BatchRequest = z.infer<typeof batchRequestSchema>;

export const batchResponseSchema = z
  .object({
    matched: z.number().int().describe("Ids that name an asset of the workspace the action applies to"),
    changed: z.number().int().describe("Assets the action actually changed"),
    notFound: z.array(z.string()).describe("Ids with no such asset in the workspace (another workspace's included)"),
  })
  .describe("POST /v1/assets/batch result");
export type BatchResponse = z.infer<typeof batchResponseSchema>;

/** PUT /v1/assets/:assetId/original: no text fields besides the `file` part. */
export const replaceFieldsSchema = z.object({}).strict().describe("multipart/form-data: only the required `file` part");

const mediaPathSchema = z
  .string()
  .max(2000, "must be at most 2000 characters")
  .regex(
    /^\/[\x21-\x7e]+$/,
    "must be a media path starting with / (e.g. /thumbnail:size=256/<assetId>.png), printable ASCII without spaces",
  )
  .refine((p) => !p.includes("?") && !p.includes("#"), "must not carry a query or fragment: expiresAt adds exp")
  .describe("Media path as the media service receives it, e.g. /resize:width=800/<assetId>.jpg");

const signExpirySchema = z
  .number()
  .int("must be whole unix seconds")
  .positive("must be whole unix seconds")
  .optional()
  .describe(
    "Unix seconds after which the signed URL answers 403 (covered by the signature); absent: the server's MEDIA_URL_LIFETIME_SECONDS applies",
  );

/** POST /v1/media-urls/sign: a media path of one of the caller's assets, to be signed server-side. */
export const signMediaUrlRequestSchema = z
  .object({ path: mediaPathSchema, expiresAt: signExpirySchema })
  .strict()
  .describe("POST /v1/media-urls/sign body");
export type SignMediaUrlRequest = z.infer<typeof signMediaUrlRequestSchema>;

export const signMediaUrlResponseSchema = z
  .object({
    url: z.string().url().describe("Absolute media URL: signed (?sig=, with exp when asked) when signed is true"),
    signed: z
      .boolean()
      .describe("true when the server holds MEDIA_SIGNING_KEY and signed the URL; false: the URL is returned unsigned"),
  })
  .describe("A media URL of the caller's asset");
export type SignMediaUrlResponse = z.infer<typeof signMediaUrlResponseSchema>;

/** Most paths one POST /v1/media-urls/sign-batch may name: a page of a grid with its srcset sizes. */
export const MAX_SIGN_BATCH_PATHS = 500;

/** POST /v1/media-urls/sign-batch: many media paths at once (a page of a grid). */
export const signMediaUrlsRequestSchema = z
  .object({
    paths: z
      .array(mediaPathSchema)
      .min(1, "at least one path")
      .max(MAX_SIGN_BATCH_PATHS, `at most ${MAX_SIGN_BATCH_PATHS} paths`)
      .describe(`Media paths, 1-${MAX_SIGN_BATCH_PATHS}`),
    expiresAt: signExpirySchema,
  })
  .strict()
  .describe("POST /v1/media-urls/sign-batch body");
export type SignMediaUrlsRequest = z.infer<typeof signMediaUrlsRequestSchema>;

export const signMediaUrlsResponseSchema = z
  .object({
    urls: z
      .record(z.string(), z.string().url())
      .describe("Each path of a live asset of the workspace -> its absolute media URL"),
    notFound: z.array(z.string()).describe("Paths naming no live asset of the workspace (another's, trashed, none)"),
    signed: z.boolean().describe("true when the server holds MEDIA_SIGNING_KEY and signed the URLs"),
    expiresAt: z
      .number()
      .int()
      .nullable()
      .describe("Unix seconds the signed URLs stop working at (their exp); null: they do not expire, or are unsigned"),
  })
  .describe("Media URLs of the caller's assets");
export type SignMediaUrlsResponse = z.infer<typeof signMediaUrlsResponseSchema>;

/** POST /library/dev-token (embedded authentication only): a token for the development sign-in. */
export const devTokenRequestSchema = z
  .object({
    workspaceId: singleLine()
      .trim()
      .min(1, "must not be empty")
      .max(200, "must be at most 200 characters")
      .default("default")
      .describe("Workspace the token is for (default: default)"),
  })
  .strict()
  .describe("POST /library/dev-token body");

export const devTokenResponseSchema = z
  .object({
    token: z.string().describe("Bearer token (HS256, embedded secret)"),
    workspaceId: z.string(),
    expiresAt: z.string().datetime().describe("When the token stops working"),
  })
  .describe("A development bearer token");
export type DevTokenResponse = z.infer<typeof devTokenResponseSchema>;

/**
 * A resumable (tus) upload's `Upload-Metadata` pairs, decoded: what a multipart upload's file part
 * and fields carry. Tags are comma-separated (one metadata value per key).
 */
export const resumableUploadMetadataSchema = z
  .object({
    filename: singleLine().trim().min(1, "must not be empty").max(255, "must be at most 255 characters").optional(),
    filetype: singleLine().trim().max(255, "must be at most 255 characters").optional(),
    collectionId: uuidSchema.optional(),
    title: singleLine().trim().min(1, "must not be empty").max(MAX_TITLE_LENGTH).optional(),
    tags: z
      .string()
      .transform((s) =>
        s
          .split(",")
          .map((t) => t.trim())
          .filter((t) => t.length > 0),
      )
      .pipe(userTagsSchema)
      .optional(),
  })
  .describe("Upload-Metadata of POST /v1/assets/tus: filename, filetype, and optionally collectionId, title, tags");
export type ResumableUploadMetadata = z.infer<typeof resumableUploadMetadataSchema>;

/** POST /v1/assets/import: the asset is fetched from `url` by the service. */
export const importFromUrlSchema = z
  .object({
    url: z
      .string()
      .max(4096, "must be at most 4096 characters")
      .refine((u) => URL.canParse(u) && /^https?:$/.test(new URL(u).protocol), "must be an http or https URL")
      .describe(
        "http or https URL of the image; its host must resolve to a public address (IMPORT_ALLOWED_HOSTS aside)",
      ),
    filename: singleLine().trim().min(1).max(255).optional().describe("Stored file name (default: from the URL)"),
    collectionId: uuidSchema.optional().describe("Assign the new asset to this collection of the workspace"),
  })
  .strict()
  .describe("Import an image from a URL");
export type ImportFromUrlRequest = z.infer<typeof importFromUrlSchema>;

/** The id segment of a resumable upload's URL (`Location` of its creation). */
export const resumableUploadParamsSchema = z
  .object({
    uploadId: z
      .string()
      .regex(/^[0-9a-f]{32}$/)
      .describe("The upload's id: the last segment of the Location its creation answered"),
  })
  .describe("The path of a resumable upload");

/** S3's multipart bounds: every part but the last at least 5 MiB, at most 10,000 parts. */
export const DIRECT_UPLOAD_MIN_PART_BYTES = 5 * 1024 * 1024;
export const DIRECT_UPLOAD_MAX_PARTS = 10_000;

/** POST /v1/assets/direct-uploads: a direct-to-S3 multipart upload of one file. */
export const createDirectUploadSchema = z
  .object({
    filename: singleLine().trim().min(1, "must not be empty").max(255, "must be at most 255 characters"),
    size: z.number().int().positive().describe("The file's exact size in bytes (at most MAX_UPLOAD_BYTES)"),
    contentType: singleLine().trim().min(1).max(255).describe("The file's media type (the bytes are sniffed anyway)"),
    parts: z
      .number()
      .int()
      .min(1)
      .max(DIRECT_UPLOAD_MAX_PARTS)
      .optional()
      .describe(
        "How many parts to send (default: as few as the size allows); every part but the last is max(5 MiB, size / parts)",
      ),
    collectionId: uuidSchema.optional().describe("Assign the new asset to this collection of the workspace"),
  })
  .strict()
  .describe("Start a direct upload: the part URLs are presigned for the bucket");
export type CreateDirectUploadRequest = z.infer<typeof createDirectUploadSchema>;

export const directUploadSchema = z
  .object({
    id: z.string().describe("The direct upload's id (a UUID)"),
    partSize: z.number().int().describe("Bytes of every part but the last"),
    parts: z
      .array(
        z.object({
          partNumber: z.number().int().min(1),
          url: z
            .string()
            .describe("Presigned URL: PUT the part's bytes here; its ETag answer header is the part's etag"),
        }),
      )
      .describe("One URL per part, in order"),
    expiresAt: z.string().datetime().describe("When the URLs and the upload expire (DIRECT_UPLOAD_EXPIRY)"),
  })
  .describe("A direct upload's presigned part URLs");
export type DirectUploadDto = z.infer<typeof directUploadSchema>;

/** POST /v1/assets/direct-uploads/{id}/complete */
export const completeDirectUploadSchema = z
  .object({
    parts: z
      .array(
        z
          .object({
            partNumber: z.number().int().min(1).max(DIRECT_UPLOAD_MAX_PARTS),
            etag: z.string().min(1).max(200).describe("The ETag header the part's PUT answered"),
          })
          .strict(),
      )
      .min(1)
      .max(DIRECT_UPLOAD_MAX_PARTS),
  })
  .strict()
  .describe("Every part of the direct upload with its ETag");
export type CompleteDirectUploadRequest = z.infer<typeof completeDirectUploadSchema>;

export const directUploadParamsSchema = z
  .object({ uploadId: uuidSchema.describe("The direct upload's id") })
  .describe("The path of a direct upload");

/** Single-line user text (no control characters, NFC), for the schemas of other modules. */
export const singleLineText = singleLine;
