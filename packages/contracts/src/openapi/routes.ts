import { z } from "zod";
import {
  assetIdParamsSchema,
  assetSchema,
  collectionIdParamsSchema,
  collectionSchema,
  createCollectionSchema,
  fullTextQuerySchema,
  fullTextResponseSchema,
  listAssetsQuerySchema,
  listAssetsResponseSchema,
  listCollectionsResponseSchema,
  patchAssetSchema,
  uploadFieldsSchema,
  uploadResponseSchema,
  deleteAssetQuerySchema,
  deleteCollectionQuerySchema,
  assetVersionParamsSchema,
  listAssetVersionsResponseSchema,
  batchRequestSchema,
  batchResponseSchema,
  replaceFieldsSchema,
  signMediaUrlRequestSchema,
  signMediaUrlResponseSchema,
  signMediaUrlsRequestSchema,
  signMediaUrlsResponseSchema,
  importFromUrlSchema,
  completeDirectUploadSchema,
  createDirectUploadSchema,
  directUploadParamsSchema,
  directUploadSchema,
  resumableUploadParamsSchema,
} from "../management";
import {
  apiKeyIdParamsSchema,
  createApiKeySchema,
  createdApiKeySchema,
  listApiKeysResponseSchema,
  listAuditQuerySchema,
  listAuditResponseSchema,
  putQuotasSchema,
  usageResponseSchema,
  type ApiScope,
} from "../credentials";

/**
 * The management API's route table: every operation the Express app registers, with the zod
 * schemas of its inputs and outputs. The OpenAPI document is generated from it, and a test
 * checks it against the app's router in both directions.
 */

export type HttpMethod = "get" | "post" | "put" | "patch" | "delete" | "head" | "options";

/** Problem statuses an operation may answer with (application/problem+json). */
export type ProblemStatus = 400 | 401 | 403 | 404 | 409 | 410 | 412 | 413 | 415 | 422 | 423 | 429 | 460 | 502 | 504;

export interface RouteResponse {
  description: string;
  /** JSON body (application/json unless contentType says otherwise); absent = no body (204). */
  schema?: z.ZodType;
  /** A body that is not JSON, e.g. text/html, described by its content type only. */
  contentType?: string;
  /** Sends a Location header with the created resource's URL. */
  location?: boolean;
  /** Other response headers: name -> description. */
  headers?: Record<string, string>;
}

export type RouteBody =
  | { type: "json"; schema: z.ZodType; description: string }
  | {
      type: "multipart";
      /** Text fields besides the file part. */
      fields: z.ZodObject;
      /** Name of the (single, required) file part. */
      filePart: string;
      fileDescription: string;
      description: string;
    }
  | {
      /** Raw bytes (a resumable upload's chunk). */
      type: "binary";
      contentType: string;
      required: boolean;
      description: string;
    };

export interface ApiRoute {
  method: HttpMethod;
  /** Express-style path, e.g. /v1/assets/:assetId. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  /** Bearer token required (every /v1 route except the documentation). */
  auth: boolean;
  /**
   * The scope a credential needs for it (every authenticated route names one: a test fails when
   * one does not). The auth middleware enforces it from this table.
   */
  scope?: ApiScope;
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: RouteBody;
  /** Success responses by status code. */
  responses: Partial<Record<number, RouteResponse>>;
  /** Problem responses besides 401 (added for every authenticated route) and 500. */
  problems: ProblemStatus[];
}

export const TAGS = {
  assets: "Assets",
  collections: "Collections",
  mediaUrls: "Media URLs",
  credentials: "Credentials and usage",
  docs: "Documentation",
  operations: "Operations",
} as const;

const healthSchema = z.looseObject({ status: z.string().describe("ok") }).describe("Liveness");
const readinessSchema = z
  .object({
    status: z
      .enum(["ok", "unavailable", "draining"])
      .describe("ok; unavailable when a dependency fails; draining during shutdown"),
    failing: z.array(z.string()).describe("Names of the failing dependencies (database, storage, redis)"),
    checks: z
      .record(
        z.string(),
        z.looseObject({
          status: z.enum(["ok", "error"]),
          durationMs: z.number().optional(),
          error: z.string().optional(),
        }),
      )
      .describe("Result of each dependency check"),
  })
  .describe("Readiness of the database and blob store (and Redis when configured)");

export const managementRoutes: readonly ApiRoute[] = [
  {
    method: "get",
    path: "/v1/assets",
    operationId: "listAssets",
    summary: "List and filter assets",
    description:
      "Lists the workspace's assets, filtered, sorted and paginated. `search` is a case-insensitive substring match over title, tags, caption, description and filename. Pass `nextCursor` of a page as `cursor` to get the next one; `count` is the number of matching assets over all pages.",
    tag: TAGS.assets,
    auth: true,
    scope: "read",
    query: listAssetsQuerySchema,
    responses: { 200: { description: "A page of matching assets", schema: listAssetsResponseSchema } },
    problems: [400],
  },
  {
    method: "get",
    path: "/v1/assets/search/full-text",
    operationId: "searchAssetsFullText",
    summary: "Full-text search over the workspace library",
    description:
      'Postgres full-text search over title, tags, caption, description and filename (weighted in that order). Web-search syntax: words, "quoted phrases", -excluded, or. The last word also matches as a prefix; words are stemmed; when nothing matches, misspelled words are corrected against the workspace word list (trigram similarity) and the search runs again, so a small typo still finds the asset. Ranked best first.',
    tag: TAGS.assets,
    auth: true,
    scope: "read",
    query: fullTextQuerySchema,
    responses: {
      200: { description: "Matching assets, best first, each with a score", schema: fullTextResponseSchema },
    },
    problems: [400],
  },
  {
    method: "post",
    path: "/v1/assets/upload",
    operationId: "uploadAsset",
    summary: "Upload an image",
    description:
      "Uploads one image as multipart/form-data. The type is sniffed from the bytes (JPEG, PNG, WebP, GIF, AVIF, TIFF, SVG, HEIC, PDF, camera RAW: DNG, CR2, CR3, NEF, ARW, RAF, RW2, ORF). JPEG, PNG, WebP, GIF, AVIF and TIFF render in their own format; HEIC and camera RAW render as JPEG; SVG and PDF render as PNG. A HEIC (HEVC) is decoded once at upload (its primary image, for a burst or a Live Photo) and its renditions come from that decode; its original is stored as uploaded. A camera RAW is shown from its largest embedded JPEG preview (width, height and placeholder are the preview's, EXIF the camera's); one without a usable preview (at least 160 px on its longer side) is refused (415). A PDF is checked (at most 2000 pages, each side at most 14400 points) and reports page 1's size in points as width and height and its page count as pages; its renditions are the first page, or the one a page:index step selects, and its original downloads as an attachment. An SVG is stored sanitised: scripts, event handlers, `foreignObject` and references out of the document (other than raster `data:image/...` URIs) are removed, and one declaring `<!ENTITY>`s is refused (415); its width and height are its intrinsic size at 72 dpi, and its renditions are PNG. With `warnAboutDuplicateImages` the response lists exact (same SHA-256) and similar (perceptual hash) assets of the workspace; the upload succeeds either way.",
    tag: TAGS.assets,
    auth: true,
    scope: "write",
    body: {
      type: "multipart",
      fields: uploadFieldsSchema,
      filePart: "file",
      fileDescription: "The image file (exactly one part named file)",
      description: "The image and its optional fields",
    },
    responses: { 201: { description: "The created asset", schema: uploadResponseSchema, location: true } },
    problems: [400, 413, 415, 422],
  },
  {
    method: "post",
    path: "/v1/assets/import",
    operationId: "importFromUrl",
    summary: "Import an image from a URL",
    description:
      "The service fetches the URL itself (http or https, at most 5 redirects, within IMPORT_TIMEOUT_MS, at most MAX_UPLOAD_BYTES) and runs the same intake as an upload. Every host, the first and each redirect's, must be a public address, checked when the connection is made (in any spelling: decimal, octal, hex, short IPv4 forms, IPv4-mapped and -compatible IPv6, NAT64); loopback, private, link-local (cloud metadata), CGNAT, multicast and reserved addresses are refused (400 `import-refused`) unless the host is listed in IMPORT_ALLOWED_HOSTS. An answer that is not an image (an HTML page) is 415 `import-not-an-image`; an error status of the remote server is 502 `import-failed` naming it.",
    tag: TAGS.assets,
    auth: true,
    scope: "write",
    body: { type: "json", schema: importFromUrlSchema, description: "The URL and optional file name and collection" },
    responses: { 201: { description: "The created asset", schema: uploadResponseSchema, location: true } },
    problems: [400, 413, 415, 422, 502, 504],
  },
  ...resumableUploadRoutes(),
  ...directUploadRoutes(),
  {
    method: "get",
    path: "/v1/assets/:assetId",
    operationId: "getAsset",
    summary: "Get an asset with its metadata",
    tag: TAGS.assets,
    auth: true,
    scope: "read",
    params: assetIdParamsSchema,
    responses: { 200: { description: "The asset", schema: assetSchema } },
    problems: [404],
  },
  {
    method: "patch",
    path: "/v1/assets/:assetId",
    operationId: "updateAsset",
    summary: "Update an asset's metadata or collection",
    description:
      "Only the given fields change. `null` clears userTitle, userCaption, userDescription and collectionId; `userTags` replaces the whole list. `collectionId` must name a collection of the same workspace. Unknown fields are rejected.",
    tag: TAGS.assets,
    auth: true,
    scope: "write",
    params: assetIdParamsSchema,
    body: { type: "json", schema: patchAssetSchema, description: "Fields to change" },
    responses: { 200: { description: "The updated asset", schema: assetSchema } },
    problems: [400, 404, 415],
  },
  {
    method: "get",
    path: "/v1/asset-collections",
    operationId: "listCollections",
    summary: "List the workspace's collections",
    tag: TAGS.collections,
    auth: true,
    scope: "read",
    responses: { 200: { description: "All collections of the workspace", schema: listCollectionsResponseSchema } },
    problems: [],
  },
  {
    method: "post",
    path: "/v1/asset-collections",
    operationId: "createCollection",
    summary: "Create a collection",
    description: "The name is trimmed and must be unique within the workspace (exact match), else 409.",
    tag: TAGS.collections,
    auth: true,
    scope: "write",
    body: { type: "json", schema: createCollectionSchema, description: "The new collection" },
    responses: { 201: { description: "The created collection", schema: collectionSchema, location: true } },
    problems: [400, 409, 415],
  },
  {
    method: "delete",
    path: "/v1/asset-collections/:id",
    operationId: "deleteCollection",
    summary: "Delete a collection",
    description:
      "The collection's assets stay in place with collectionId null; with `withAssets=true` they are moved to the trash first (same transaction).",
    tag: TAGS.collections,
    auth: true,
    scope: "write",
    params: collectionIdParamsSchema,
    query: deleteCollectionQuerySchema,
    responses: { 204: { description: "The collection was deleted" } },
    problems: [400, 404],
  },
  {
    method: "delete",
    path: "/v1/assets/:assetId",
    operationId: "deleteAsset",
    summary: "Move an asset to the trash, or delete it permanently",
    description:
      "Without `permanent`, the live asset goes to the trash: GET answers 404 and it leaves lists, full-text search, duplicate checks and assetCount; it is removed for good after TRASH_RETENTION_DAYS. With `permanent=true` (live or trashed asset) the row, every stored original and version and every cached rendition are removed at once. Either way every media URL of the asset answers 404 once this returns.",
    tag: TAGS.assets,
    auth: true,
    scope: "write",
    params: assetIdParamsSchema,
    query: deleteAssetQuerySchema,
    responses: { 204: { description: "Trashed (or removed)" } },
    problems: [400, 404],
  },
  {
    method: "post",
    path: "/v1/assets/:assetId/restore",
    operationId: "restoreAsset",
    summary: "Restore an asset from the trash",
    description:
      "Brings the asset back exactly as it was, collection included; `collectionId` is null if its collection was deleted meanwhile. 409 when the asset is not in the trash.",
    tag: TAGS.assets,
    auth: true,
    scope: "write",
    params: assetIdParamsSchema,
    responses: { 200: { description: "The restored asset", schema: assetSchema } },
    problems: [404, 409],
  },
  {
    method: "get",
    path: "/v1/assets/:assetId/trash-thumbnail",
    operationId: "getTrashThumbnail",
    summary: "A thumbnail of an asset in the trash",
    description:
      "A 256 x 256 WebP of a trashed asset (centre crop, upright, first frame), for the owner only. The media service answers 404 for every URL of a trashed asset, signed or not, so the trash shows its assets through this route. 404 for a live asset (use its media URLs) or another workspace's. `Cache-Control: private`.",
    tag: TAGS.assets,
    auth: true,
    scope: "read",
    params: assetIdParamsSchema,
    responses: { 200: { description: "The thumbnail (image/webp)", contentType: "image/webp" } },
    problems: [404, 422],
  },
  {
    method: "put",
    path: "/v1/assets/:assetId/original",
    operationId: "replaceAssetOriginal",
    summary: "Replace an asset's original image",
    description:
      "Same validation and limits as an upload. Format, width, height, bytes, sha256 and perceptual hash are updated and `version` incremented; metadata, tags and collection are kept. The previous original is kept as a version (at most ASSET_VERSIONS_KEPT). Every media URL of the asset renders the new image once this returns.",
    tag: TAGS.assets,
    auth: true,
    scope: "write",
    params: assetIdParamsSchema,
    body: {
      type: "multipart",
      fields: replaceFieldsSchema,
      filePart: "file",
      fileDescription: "The new image file (exactly one part named file), checked and sanitised as at upload",
      description: "The new original",
    },
    responses: { 200: { description: "The updated asset", schema: assetSchema } },
    problems: [400, 404, 413, 415, 422],
  },
  {
    method: "get",
    path: "/v1/assets/:assetId/versions",
    operationId: "listAssetVersions",
    summary: "List an asset's previous originals",
    tag: TAGS.assets,
    auth: true,
    scope: "read",
    params: assetIdParamsSchema,
    responses: { 200: { description: "Previous versions, newest first", schema: listAssetVersionsResponseSchema } },
    problems: [404],
  },
  {
    method: "post",
    path: "/v1/assets/:assetId/versions/:version/restore",
    operationId: "restoreAssetVersion",
    summary: "Make a previous version current again",
    description:
      "The version's bytes become the current original as a new version (the current one is kept as a version).",
    tag: TAGS.assets,
    auth: true,
    scope: "write",
    params: assetVersionParamsSchema,
    responses: { 200: { description: "The updated asset", schema: assetSchema } },
    problems: [404],
  },
  {
    method: "post",
    path: "/v1/assets/batch",
    operationId: "batchAssets",
    summary: "Apply one action to many assets",
    description:
      "`delete` (to the trash), `restore`, `addTags`, `removeTags` (value: tags) or `setCollection` (value: collection id or null) over up to 1000 ids, in one transaction. Ids of another workspace, or unknown ones, are reported in `notFound`; tag and collection actions apply to live assets only.",
    tag: TAGS.assets,
    auth: true,
    scope: "write",
    body: { type: "json", schema: batchRequestSchema, description: "Action, ids and value" },
    responses: { 200: { description: "What matched and changed", schema: batchResponseSchema } },
    problems: [400, 415],
  },
  {
    method: "post",
    path: "/v1/media-urls/sign",
    operationId: "signMediaUrl",
    summary: "Sign a media URL of one of your assets",
    description:
      "Returns the absolute media URL of `path`, signed with the server's MEDIA_SIGNING_KEY (`signed: true`), or unsigned when no key is configured (`signed: false`). The path's asset must be a live asset of the caller's workspace (404 otherwise). Its steps are not validated here: the media service answers 400 for an invalid one.",
    tag: TAGS.mediaUrls,
    auth: true,
    scope: "read",
    body: { type: "json", schema: signMediaUrlRequestSchema, description: "Media path and optional expiry" },
    responses: { 200: { description: "The media URL", schema: signMediaUrlResponseSchema } },
    problems: [400, 404, 415],
  },
  {
    method: "post",
    path: "/v1/media-urls/sign-batch",
    operationId: "signMediaUrls",
    summary: "Sign many media URLs of your assets at once",
    description:
      "The batch form of `POST /v1/media-urls/sign`, for a page of a grid: up to 500 paths in one round trip. Paths naming no live asset of the caller's workspace are listed in `notFound` instead of failing the batch. Without `expiresAt` the URLs carry the server's expiry (MEDIA_URL_LIFETIME_SECONDS, rounded to a shared window), so every client asking within one window gets identical URLs and a CDN caches one copy per rendition.",
    tag: TAGS.mediaUrls,
    auth: true,
    scope: "read",
    body: { type: "json", schema: signMediaUrlsRequestSchema, description: "Media paths and optional expiry" },
    responses: { 200: { description: "The media URLs", schema: signMediaUrlsResponseSchema } },
    problems: [400, 415],
  },
  {
    method: "post",
    path: "/v1/api-keys",
    operationId: "createApiKey",
    summary: "Create an API key",
    description:
      "Creates a key for a machine (a CI job, an internal service) of the caller's workspace, with the scopes it may use and an optional expiry. The answer carries the secret (`mpk_...`) once: only its hash is stored. Send it as `Authorization: Bearer <key>`.",
    tag: TAGS.credentials,
    auth: true,
    scope: "admin",
    body: { type: "json", schema: createApiKeySchema, description: "Name, scopes and optional expiry" },
    responses: {
      201: { description: "The created key, with its secret", schema: createdApiKeySchema, location: true },
    },
    problems: [400, 403, 409, 415],
  },
  {
    method: "get",
    path: "/v1/api-keys",
    operationId: "listApiKeys",
    summary: "List the workspace's API keys",
    description: "Keys that are not revoked, expired ones included, without their secrets.",
    tag: TAGS.credentials,
    auth: true,
    scope: "admin",
    responses: { 200: { description: "The keys", schema: listApiKeysResponseSchema } },
    problems: [403],
  },
  {
    method: "delete",
    path: "/v1/api-keys/:id",
    operationId: "revokeApiKey",
    summary: "Revoke an API key",
    description:
      "The key answers 401 from then on: at once on this instance, within API_KEY_CACHE_SECONDS on the others.",
    tag: TAGS.credentials,
    auth: true,
    scope: "admin",
    params: apiKeyIdParamsSchema,
    responses: { 204: { description: "Revoked" } },
    problems: [403, 404],
  },
  {
    method: "get",
    path: "/v1/usage",
    operationId: "getUsage",
    summary: "What the workspace stores and uses",
    description:
      "Bytes stored (originals, versions and the trash until purged), assets, the quotas, and uploads, renders and egress bytes per UTC day for the last 90 days.",
    tag: TAGS.credentials,
    auth: true,
    scope: "read",
    responses: { 200: { description: "The workspace's usage", schema: usageResponseSchema } },
    problems: [],
  },
  {
    method: "put",
    path: "/v1/usage/quotas",
    operationId: "putQuotas",
    summary: "Set the workspace's quotas",
    description:
      "Overrides WORKSPACE_STORAGE_QUOTA_BYTES and WORKSPACE_ASSET_QUOTA for the caller's workspace; null goes back to the default. Recorded in the audit log.",
    tag: TAGS.credentials,
    auth: true,
    scope: "admin",
    body: { type: "json", schema: putQuotasSchema, description: "The limits to set" },
    responses: { 200: { description: "The workspace's usage with its new quotas", schema: usageResponseSchema } },
    problems: [400, 403, 415],
  },
  {
    method: "get",
    path: "/v1/audit-events",
    operationId: "listAuditEvents",
    summary: "The workspace's audit log",
    description:
      "Key events (created, used after a day or more unused, revoked), sign-ins, permanent deletes and quota changes, newest first. `format=ndjson` answers `application/x-ndjson`, one event per line, for export.",
    tag: TAGS.credentials,
    auth: true,
    scope: "admin",
    query: listAuditQuerySchema,
    responses: { 200: { description: "A page of events", schema: listAuditResponseSchema } },
    problems: [400, 403],
  },
  {
    method: "get",
    path: "/v1/openapi.json",
    operationId: "getOpenApiDocument",
    summary: "This OpenAPI 3.1 document",
    description: "Generated from the zod contracts. No authentication needed.",
    tag: TAGS.docs,
    auth: false,
    responses: { 200: { description: "The OpenAPI document", schema: z.record(z.string(), z.unknown()) } },
    problems: [],
  },
  {
    method: "get",
    path: "/docs",
    operationId: "getApiReference",
    summary: "Interactive API reference (HTML)",
    description: "Renders this document in the browser. No authentication needed.",
    tag: TAGS.docs,
    auth: false,
    responses: { 200: { description: "The API reference page", contentType: "text/html" } },
    problems: [],
  },
  {
    method: "get",
    path: "/healthz",
    operationId: "getHealth",
    summary: "Liveness probe",
    description: "The process is up. No authentication.",
    tag: TAGS.operations,
    auth: false,
    responses: { 200: { description: "Alive", schema: healthSchema } },
    problems: [],
  },
  {
    method: "get",
    path: "/readyz",
    operationId: "getReadiness",
    summary: "Readiness probe",
    description: "The database and the blob store (and Redis when configured) answer. No authentication.",
    tag: TAGS.operations,
    auth: false,
    responses: {
      200: { description: "Ready to serve", schema: readinessSchema },
      503: { description: "A dependency is unavailable", schema: readinessSchema },
    },
    problems: [],
  },
  {
    method: "get",
    path: "/metrics",
    operationId: "getMetrics",
    summary: "Prometheus metrics",
    description:
      "Request latency and counts by route and status, upload bytes, process metrics. Text exposition format.",
    tag: TAGS.operations,
    auth: false,
    responses: { 200: { description: "Metrics in the Prometheus text format", contentType: "text/plain" } },
    problems: [],
  },
];

/** `/v1/assets/:assetId` -> `/v1/assets/{assetId}` */
export function toOpenApiPath(expressPath: string): string {
  return expressPath.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
}

/** tus 1.0 at /v1/assets/tus (creation, creation-with-upload, termination, expiration, checksum). */
/** Direct-to-S3 multipart uploads: the parts go to presigned bucket URLs, never through the API. */
function directUploadRoutes(): ApiRoute[] {
  const s3Only = "Only with the S3 storage driver (409 `direct-uploads-need-s3` on the filesystem).";
  return [
    {
      method: "post",
      path: "/v1/assets/direct-uploads",
      operationId: "createDirectUpload",
      summary: "Start a direct-to-S3 multipart upload",
      description: `${s3Only} \`size\` is checked against MAX_UPLOAD_BYTES before anything is created (413). Answers one presigned URL per part (S3: every part but the last at least 5 MiB, at most 10,000 parts): PUT each part's bytes to its URL and keep the \`ETag\` each answers. The URLs and the upload expire after DIRECT_UPLOAD_EXPIRY. Browsers need a CORS rule on the bucket allowing PUT from their origin and exposing \`ETag\`.`,
      tag: TAGS.assets,
      auth: true,
      scope: "write",
      body: { type: "json", schema: createDirectUploadSchema, description: "The file's name, size and type" },
      responses: { 201: { description: "The upload's id and presigned part URLs", schema: directUploadSchema } },
      problems: [400, 404, 409, 413],
    },
    {
      method: "post",
      path: "/v1/assets/direct-uploads/:uploadId/complete",
      operationId: "completeDirectUpload",
      summary: "Complete a direct upload into an asset",
      description: `${s3Only} Completes the multipart upload with every part's ETag, checks the object's size against the declared one, and runs the same intake as an upload (sniffing, limits, privacy, duplicates); the staging object is then removed. Missing, extra or wrong parts, or a size mismatch, are 400 \`direct-upload-incomplete\`; an expired upload is 410; an intake refusal (415, 422) answers as for an upload. Each of these aborts the upload: nothing of it is kept. Another workspace's upload is a 404.`,
      tag: TAGS.assets,
      auth: true,
      scope: "write",
      params: directUploadParamsSchema,
      body: { type: "json", schema: completeDirectUploadSchema, description: "Every part with its ETag" },
      responses: { 201: { description: "The created asset", schema: uploadResponseSchema, location: true } },
      problems: [400, 404, 409, 410, 413, 415, 422],
    },
    {
      method: "delete",
      path: "/v1/assets/direct-uploads/:uploadId",
      operationId: "abortDirectUpload",
      summary: "Abort a direct upload",
      description: `${s3Only} The multipart upload is aborted (its parts removed from the bucket). Another workspace's upload is a 404.`,
      tag: TAGS.assets,
      auth: true,
      scope: "write",
      params: directUploadParamsSchema,
      responses: { 204: { description: "The upload was aborted" } },
      problems: [404, 409],
    },
  ];
}

function resumableUploadRoutes(): ApiRoute[] {
  const tus = "Tus-Resumable: 1.0.0 on every request but OPTIONS (412 without it).";
  const finished =
    'When the last byte arrives the same intake as an upload runs; its refusals (415, 422, 413) answer this request and nothing of the upload is kept. The finished upload answers `Asset-Id` and `Link: </v1/assets/{id}>; rel="asset"`.';
  const assetHeaders = {
    "Asset-Id": "The id of the asset the finished upload became (on the request that sent its last byte)",
    Link: '`</v1/assets/{id}>; rel="asset"` on the finishing request',
  };
  return [
    {
      method: "options",
      path: "/v1/assets/tus",
      operationId: "resumableUploadOptions",
      summary: "Resumable upload capabilities (tus), CORS preflight",
      description: "Answers without a token, so browsers' CORS preflights pass.",
      tag: TAGS.assets,
      auth: false,
      responses: {
        204: {
          description: "The server's tus capabilities",
          headers: {
            "Tus-Version": "1.0.0",
            "Tus-Extension": "creation,creation-with-upload,termination,expiration,checksum",
            "Tus-Max-Size": "MAX_UPLOAD_BYTES",
            "Tus-Checksum-Algorithm": "sha1,sha256",
          },
        },
      },
      problems: [],
    },
    {
      method: "options",
      path: "/v1/assets/tus/:uploadId",
      operationId: "resumableUploadPreflight",
      summary: "CORS preflight of an upload's URL",
      tag: TAGS.assets,
      auth: false,
      params: resumableUploadParamsSchema,
      responses: { 204: { description: "The server's tus capabilities" } },
      problems: [],
    },
    {
      method: "post",
      path: "/v1/assets/tus",
      operationId: "createResumableUpload",
      summary: "Create a resumable upload (tus creation)",
      description: `${tus} \`Upload-Length\` is required and checked against MAX_UPLOAD_BYTES before anything is stored (413). \`Upload-Metadata\` carries \`filename\`, \`filetype\` and optionally \`collectionId\`, \`title\` and \`tags\` (comma-separated). A body (\`Content-Type: application/offset+octet-stream\`) is the first bytes (creation-with-upload). An unfinished upload expires after TUS_UPLOAD_EXPIRY (\`Upload-Expires\`). ${finished}`,
      tag: TAGS.assets,
      auth: true,
      scope: "write",
      body: {
        type: "binary",
        contentType: "application/offset+octet-stream",
        required: false,
        description: "The first bytes of the file (optional)",
      },
      responses: {
        201: {
          description: "The upload's URL",
          location: true,
          headers: {
            "Upload-Offset": "Bytes stored",
            "Upload-Expires": "When an unfinished upload expires",
            ...assetHeaders,
          },
        },
      },
      problems: [400, 404, 412, 413, 415, 422, 460],
    },
    {
      method: "head",
      path: "/v1/assets/tus/:uploadId",
      operationId: "getResumableUploadOffset",
      summary: "The offset of a resumable upload",
      description: `${tus} Another workspace's upload is a 404. A finished upload still answers, with its \`Asset-Id\`, until it would have expired.`,
      tag: TAGS.assets,
      auth: true,
      scope: "write",
      params: resumableUploadParamsSchema,
      responses: {
        200: {
          description: "How much of the upload is stored",
          headers: { "Upload-Offset": "Bytes stored", "Upload-Length": "The upload's size", ...assetHeaders },
        },
      },
      problems: [404, 410, 412],
    },
    {
      method: "patch",
      path: "/v1/assets/tus/:uploadId",
      operationId: "appendResumableUpload",
      summary: "Send bytes of a resumable upload",
      description: `${tus} \`Upload-Offset\` must be the offset the service holds (409 otherwise). With \`Upload-Checksum: sha1|sha256 <base64>\` the bytes are checked first and a mismatch (460) stores none of them. ${finished}`,
      tag: TAGS.assets,
      auth: true,
      scope: "write",
      params: resumableUploadParamsSchema,
      body: {
        type: "binary",
        contentType: "application/offset+octet-stream",
        required: true,
        description: "The bytes from Upload-Offset on",
      },
      responses: { 204: { description: "Stored", headers: { "Upload-Offset": "Bytes stored", ...assetHeaders } } },
      problems: [400, 404, 409, 410, 412, 413, 415, 422, 423, 460],
    },
    {
      method: "delete",
      path: "/v1/assets/tus/:uploadId",
      operationId: "terminateResumableUpload",
      summary: "Abandon a resumable upload (tus termination)",
      description: `${tus} Its bytes are removed.`,
      tag: TAGS.assets,
      auth: true,
      scope: "write",
      params: resumableUploadParamsSchema,
      responses: { 204: { description: "Removed" } },
      problems: [404, 412],
    },
  ];
}
