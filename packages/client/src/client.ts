import type { z } from "zod";
import {
  createdApiKeySchema,
  listApiKeysResponseSchema,
  usageResponseSchema,
  type CreateApiKey,
  type CreatedApiKeyDto,
  type UsageResponse,
  assetSchema,
  formatOfExtension,
  IMAGE_FORMATS,
  collectionSchema,
  fullTextResponseSchema,
  listAssetsResponseSchema,
  listCollectionsResponseSchema,
  problemSchema,
  uploadResponseSchema,
  directUploadSchema,
  listAssetVersionsResponseSchema,
  batchResponseSchema,
  type batchRequestSchema,
  type BatchResponse,
  type ListAssetVersionsResponse,
  type AssetDto,
  type AssetFormat,
  type AssetSort,
  type CollectionDto,
  type FullTextResponse,
  type ListedAssetDto,
  type FacetField,
  type ListIncludeField,
  signMediaUrlResponseSchema,
  signMediaUrlsResponseSchema,
  type SignMediaUrlResponse,
  type SignMediaUrlsResponse,
  type ListAssetsResponse,
  type ListCollectionsResponse,
  type patchAssetSchema,
  type Problem,
  type UploadResponse,
} from "@media-platform/contracts";
import { ApiError, ResponseValidationError } from "./errors";

/** A bearer token, or a function returning the current one (called before every request). */
export type TokenSource = string | (() => string | Promise<string>);

export interface ClientOptions {
  /** Base URL of the management API, e.g. http://localhost:3000 (without /v1). */
  baseUrl: string;
  token: TokenSource;
  /** Check every 2xx body against the contracts' zod schemas (default true). */
  validateResponses?: boolean;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
  /** A fetch implementation (default: the global fetch of Node >= 18). */
  fetch?: typeof fetch;
}

/** GET /v1/assets parameters. Dates may be given as Date or ISO 8601 strings. */
export interface ListAssetsParams {
  search?: string;
  collectionId?: string;
  tag?: string;
  format?: AssetFormat;
  createdAfter?: Date | string;
  createdBefore?: Date | string;
  sort?: AssetSort;
  /** Page size 1-100 (default 25). */
  limit?: number;
  /** nextCursor of the previous page. */
  cursor?: string;
  /** List the trash instead of the live assets (each with deletedAt). */
  trashed?: boolean;
  /** Heavy fields to add to each listed asset (left out by default): placeholderDataUrl, exif. */
  include?: readonly ListIncludeField[];
  /** Count the whole result by these fields (tags, collectionId, format): `facets` in the response. */
  facets?: readonly FacetField[];
}

export interface FullTextParams {
  /** Maximum number of results, 1-100 (default 25). */
  limit?: number;
  /** Heavy fields to add to each result (left out by default): placeholderDataUrl, exif. */
  include?: readonly ListIncludeField[];
  /** Count every match by these fields (tags, collectionId, format): `facets` in the response. */
  facets?: readonly FacetField[];
}

/** PATCH body as a client writes it: only given fields change; null clears. */
export type AssetPatch = z.input<typeof patchAssetSchema>;

export interface UploadInput {
  /** The image: bytes, a Blob, or a path to a file (streamed from disk). */
  file: Buffer | Uint8Array | Blob | string;
  /** File name sent with the part (default: the path's base name, else "upload"). */
  filename?: string;
  /** Content type of the part (default: guessed from the file name; the server sniffs the bytes anyway). */
  contentType?: string;
  collectionId?: string;
  /** Ask for exact and similar duplicates in the response (`duplicates`). */
  warnAboutDuplicateImages?: boolean;
}

/** uploadResumable's input: an upload that survives dropped connections (tus at /v1/assets/tus). */
export interface ResumableUploadInput {
  /** The image: bytes, a Blob (browsers), or a path to a file (streamed from disk, Node). */
  file: Buffer | Uint8Array | Blob | string;
  filename?: string;
  contentType?: string;
  collectionId?: string;
  title?: string;
  tags?: string[];
  /** Bytes per PATCH (default 8 MiB): at most this much is sent again after a broken connection. */
  chunkSize?: number;
  /** Waits in ms between attempts after an error (default 0, 1000, 3000, 5000, 10000). */
  retryDelays?: number[];
  /** An upload URL from an earlier attempt (`onUploadUrl`): resumed from the offset the service holds. */
  uploadUrl?: string;
  onUploadUrl?: (url: string) => void;
  onProgress?: (sent: number, total: number) => void;
  signal?: AbortSignal;
}

/** uploadDirect's input: a direct-to-S3 multipart upload (the service's storage driver must be S3). */
export interface DirectUploadInput {
  /** The image: bytes, a Blob (browsers), or a path to a file (read one part at a time, Node). */
  file: Buffer | Uint8Array | Blob | string;
  filename?: string;
  contentType?: string;
  collectionId?: string;
  /** How many parts (default: as few as the size allows; every part but the last ≥ 5 MiB). */
  parts?: number;
  onProgress?: (sent: number, total: number) => void;
  signal?: AbortSignal;
}

/** POST /v1/assets/import */
export interface ImportFromUrlInput {
  url: string;
  filename?: string;
  collectionId?: string;
}

/** The bytes of a direct upload, one part at a time (a file path is never read whole). */
async function partSourceOf(file: DirectUploadInput["file"]): Promise<{
  size: number;
  read(start: number, length: number): Promise<Blob>;
  close(): Promise<void>;
}> {
  if (typeof file === "string") {
    const fs = await import("node:fs");
    const handle = await fs.promises.open(file, "r");
    const { size } = await handle.stat();
    return {
      size,
      async read(start, length) {
        const buffer = new Uint8Array(length);
        const { bytesRead } = await handle.read(buffer, 0, length, start);
        return new Blob([buffer.subarray(0, bytesRead)]);
      },
      close: () => handle.close(),
    };
  }
  const blob = file instanceof Blob ? file : new Blob([file as Uint8Array<ArrayBuffer>]);
  return { size: blob.size, read: async (start, length) => blob.slice(start, start + length), close: async () => {} };
}

/** The last segment of a path, either separator (no node:path: the client also runs in browsers). */
const baseName = (file: string): string => file.split(/[\\/]/).pop() ?? file;

/** ".png" of "a/photo.png"; "" without an extension (as node:path's extname). */
function extensionOf(filename: string): string {
  const name = baseName(filename);
  const dot = name.lastIndexOf(".");
  return dot > 0 ? name.slice(dot) : "";
}

export function guessContentType(filename: string): string {
  const format = formatOfExtension(extensionOf(filename));
  return format ? IMAGE_FORMATS[format].mimeType : "application/octet-stream";
}

type Query = Record<string, string | number | boolean | Date | undefined>;

interface RequestSpec<T> {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  path: string;
  query?: Query;
  json?: unknown;
  form?: FormData;
  schema?: z.ZodType<T>;
  /** The success body is bytes (an image), returned as a Blob. */
  binary?: boolean;
  /** Expected success status. */
  expect: number;
}

/** Typed client for every endpoint of the management API (/v1). */
export class MediaPlatformClient {
  readonly baseUrl: string;
  private readonly token: TokenSource;
  private readonly validate: boolean;
  private readonly extraHeaders: Record<string, string>;
  private readonly fetchImpl: typeof fetch;

  constructor(options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    if (!/^https?:\/\//.test(this.baseUrl))
      throw new TypeError(`baseUrl must be an http(s) URL, got ${JSON.stringify(options.baseUrl)}`);
    this.token = options.token;
    this.validate = options.validateResponses ?? true;
    this.extraHeaders = options.headers ?? {};
    this.fetchImpl = options.fetch ?? globalThis.fetch;
  }

  // ------------------------------------------------------------------------------------------
  // Assets

  /** GET /v1/assets: one page of assets matching the filters. */
  listAssets(params: ListAssetsParams = {}): Promise<ListAssetsResponse> {
    return this.request({
      method: "GET",
      path: "/v1/assets",
      query: {
        ...params,
        include: params.include?.length ? params.include.join(",") : undefined,
        facets: params.facets?.length ? params.facets.join(",") : undefined,
      },
      schema: listAssetsResponseSchema,
      expect: 200,
    });
  }

  /** Every page of GET /v1/assets, following nextCursor. */
  async *assetPages(
    params: Omit<ListAssetsParams, "cursor"> = {},
  ): AsyncGenerator<ListAssetsResponse, void, undefined> {
    let cursor: string | undefined;
    do {
      const page = await this.listAssets({ ...params, cursor });
      yield page;
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }

  /** Every asset matching the filters, across pages: `for await (const a of client.iterateAssets({ tag: "x" }))`. */
  async *iterateAssets(params: Omit<ListAssetsParams, "cursor"> = {}): AsyncGenerator<ListedAssetDto, void, undefined> {
    for await (const page of this.assetPages(params)) yield* page.assets;
  }

  /** GET /v1/assets/search/full-text: ranked matches, each with a score. */
  searchAssets(q: string, params: FullTextParams = {}): Promise<FullTextResponse> {
    return this.request({
      method: "GET",
      path: "/v1/assets/search/full-text",
      query: {
        q,
        limit: params.limit,
        include: params.include?.length ? params.include.join(",") : undefined,
        facets: params.facets?.length ? params.facets.join(",") : undefined,
      },
      schema: fullTextResponseSchema,
      expect: 200,
    });
  }

  /** GET /v1/assets/:assetId */
  getAsset(assetId: string): Promise<AssetDto> {
    return this.request({
      method: "GET",
      path: `/v1/assets/${encodeURIComponent(assetId)}`,
      schema: assetSchema,
      expect: 200,
    });
  }

  /** PATCH /v1/assets/:assetId: metadata and collection. */
  updateAsset(assetId: string, patch: AssetPatch): Promise<AssetDto> {
    return this.request({
      method: "PATCH",
      path: `/v1/assets/${encodeURIComponent(assetId)}`,
      json: patch,
      schema: assetSchema,
      expect: 200,
    });
  }

  /** POST /v1/assets/upload (multipart). A path is streamed from disk, not read into memory. */
  async uploadAsset(input: UploadInput): Promise<UploadResponse> {
    const filename = input.filename ?? (typeof input.file === "string" ? baseName(input.file) : "upload");
    const type = input.contentType ?? guessContentType(filename);
    const blob = await toBlob(input.file, type);
    const form = new FormData();
    if (input.collectionId !== undefined) form.append("collectionId", input.collectionId);
    if (input.warnAboutDuplicateImages !== undefined)
      form.append("warnAboutDuplicateImages", String(input.warnAboutDuplicateImages));
    form.append("file", blob, filename);
    return this.request({ method: "POST", path: "/v1/assets/upload", form, schema: uploadResponseSchema, expect: 201 });
  }

  /**
   * tus upload to /v1/assets/tus (tus-js-client): chunked, resumed from the service's offset after
   * a broken connection, and the asset of the finished upload (its `Asset-Id`) returned.
   */
  async uploadResumable(input: ResumableUploadInput): Promise<AssetDto> {
    const tus = await import("tus-js-client");
    const filename = input.filename ?? (typeof input.file === "string" ? baseName(input.file) : "upload");
    const token = typeof this.token === "function" ? await this.token() : this.token;
    let source: unknown = input.file;
    let size: number | undefined;
    if (typeof input.file === "string") {
      const fs = await import("node:fs");
      size = (await fs.promises.stat(input.file)).size;
      source = fs.createReadStream(input.file);
    } else if (input.file instanceof Uint8Array && !(typeof Buffer !== "undefined" && Buffer.isBuffer(input.file))) {
      source = Buffer.from(input.file.buffer, input.file.byteOffset, input.file.byteLength);
    }
    const metadata: Record<string, string> = { filename, filetype: input.contentType ?? guessContentType(filename) };
    if (input.collectionId) metadata.collectionId = input.collectionId;
    if (input.title) metadata.title = input.title;
    if (input.tags?.length) metadata.tags = input.tags.join(",");
    const assetId = await new Promise<string>((resolve, reject) => {
      const upload = new tus.Upload(source as Blob, {
        endpoint: `${this.baseUrl}/v1/assets/tus`,
        uploadUrl: input.uploadUrl,
        uploadSize: size,
        chunkSize: input.chunkSize ?? 8 * 1024 * 1024,
        retryDelays: input.retryDelays ?? [0, 1000, 3000, 5000, 10000],
        headers: { ...this.extraHeaders, Authorization: `Bearer ${token}` },
        metadata,
        removeFingerprintOnSuccess: true,
        onProgress: (sent, total) => input.onProgress?.(sent, total),
        onUploadUrlAvailable: () => {
          if (upload.url) input.onUploadUrl?.(upload.url);
        },
        onSuccess: ({ lastResponse }) => {
          const id = lastResponse.getHeader("Asset-Id");
          if (id) resolve(id);
          else reject(new Error("The finished upload's answer carries no Asset-Id"));
        },
        onError: (err) => reject(err),
      });
      input.signal?.addEventListener("abort", () => {
        void upload.abort().then(() => reject(input.signal?.reason ?? new Error("aborted")));
      });
      upload.start();
    });
    return this.getAsset(assetId);
  }

  /**
   * A direct-to-S3 multipart upload: POST /v1/assets/direct-uploads answers presigned part URLs,
   * each part is PUT straight to the bucket (never through the API), then .../complete runs the
   * intake and answers the asset. A failing part aborts the upload (DELETE). The bucket needs a
   * CORS rule exposing `ETag` for browsers.
   */
  async uploadDirect(input: DirectUploadInput): Promise<UploadResponse> {
    const filename = input.filename ?? (typeof input.file === "string" ? baseName(input.file) : "upload");
    const source = await partSourceOf(input.file);
    try {
      const created = await this.request({
        method: "POST",
        path: "/v1/assets/direct-uploads",
        json: {
          filename,
          size: source.size,
          contentType: input.contentType ?? guessContentType(filename),
          ...(input.parts !== undefined ? { parts: input.parts } : {}),
          ...(input.collectionId !== undefined ? { collectionId: input.collectionId } : {}),
        },
        schema: directUploadSchema,
        expect: 201,
      });
      const path = `/v1/assets/direct-uploads/${encodeURIComponent(created.id)}`;
      const parts: Array<{ partNumber: number; etag: string }> = [];
      try {
        let sent = 0;
        for (const part of created.parts) {
          const start = (part.partNumber - 1) * created.partSize;
          const body = await source.read(start, Math.min(created.partSize, source.size - start));
          const answer = await this.fetchImpl(part.url, { method: "PUT", body, signal: input.signal });
          await answer.body?.cancel();
          const etag = answer.headers.get("etag");
          if (!answer.ok || !etag) throw new Error(`PUT of part ${part.partNumber} answered ${answer.status}`);
          parts.push({ partNumber: part.partNumber, etag });
          sent += body.size;
          input.onProgress?.(sent, source.size);
        }
      } catch (err) {
        // A part not sent: the upload is aborted, nothing of it kept.
        await this.request({ method: "DELETE", path, expect: 204 }).catch(() => undefined);
        throw err;
      }
      // A refused completion is aborted by the service itself.
      return await this.request({
        method: "POST",
        path: `${path}/complete`,
        json: { parts },
        schema: uploadResponseSchema,
        expect: 201,
      });
    } finally {
      await source.close();
    }
  }

  /** POST /v1/assets/import: the service fetches the image from `url` (public addresses only). */
  importFromUrl(input: ImportFromUrlInput): Promise<UploadResponse> {
    return this.request({
      method: "POST",
      path: "/v1/assets/import",
      json: input,
      schema: uploadResponseSchema,
      expect: 201,
    });
  }

  // ------------------------------------------------------------------------------------------
  // API keys and usage

  /** POST /v1/api-keys (scope admin): the answer holds the key's secret, shown this once. */
  createApiKey(input: CreateApiKey): Promise<CreatedApiKeyDto> {
    return this.request({
      method: "POST",
      path: "/v1/api-keys",
      json: input,
      schema: createdApiKeySchema,
      expect: 201,
    });
  }

  /** GET /v1/api-keys (scope admin): keys not revoked, without secrets. */
  listApiKeys(): Promise<z.infer<typeof listApiKeysResponseSchema>> {
    return this.request({ method: "GET", path: "/v1/api-keys", schema: listApiKeysResponseSchema, expect: 200 });
  }

  /** DELETE /v1/api-keys/:id (scope admin): the key answers 401 from then on. */
  async revokeApiKey(id: string): Promise<void> {
    await this.request({ method: "DELETE", path: `/v1/api-keys/${encodeURIComponent(id)}`, expect: 204 });
  }

  /** GET /v1/usage: bytes and assets stored, quotas, and 90 days of uploads, renders and egress. */
  getUsage(): Promise<UsageResponse> {
    return this.request({ method: "GET", path: "/v1/usage", schema: usageResponseSchema, expect: 200 });
  }

  // ------------------------------------------------------------------------------------------
  // Collections

  /** GET /v1/asset-collections */
  listCollections(): Promise<ListCollectionsResponse> {
    return this.request({
      method: "GET",
      path: "/v1/asset-collections",
      schema: listCollectionsResponseSchema,
      expect: 200,
    });
  }

  /** POST /v1/asset-collections: 409 (ApiError) when the name is taken in the workspace. */
  createCollection(name: string): Promise<CollectionDto> {
    return this.request({
      method: "POST",
      path: "/v1/asset-collections",
      json: { name },
      schema: collectionSchema,
      expect: 201,
    });
  }

  /** DELETE /v1/asset-collections/:id: its assets stay, with collectionId null. */
  /** DELETE /v1/asset-collections/:id; `withAssets` moves its assets to the trash first. */
  async deleteCollection(id: string, options: { withAssets?: boolean } = {}): Promise<void> {
    await this.request({
      method: "DELETE",
      path: `/v1/asset-collections/${encodeURIComponent(id)}`,
      query: { withAssets: options.withAssets },
      expect: 204,
    });
  }

  /** DELETE /v1/assets/:assetId: to the trash, or with `permanent` removed with every blob and cached rendition. */
  async deleteAsset(assetId: string, options: { permanent?: boolean } = {}): Promise<void> {
    await this.request({
      method: "DELETE",
      path: `/v1/assets/${encodeURIComponent(assetId)}`,
      query: { permanent: options.permanent },
      expect: 204,
    });
  }

  /** POST /v1/assets/:assetId/restore: back from the trash. */
  restoreAsset(assetId: string): Promise<AssetDto> {
    return this.request({
      method: "POST",
      path: `/v1/assets/${encodeURIComponent(assetId)}/restore`,
      schema: assetSchema,
      expect: 200,
    });
  }

  /** PUT /v1/assets/:assetId/original (multipart): a new original, version + 1. */
  async replaceOriginal(assetId: string, input: Omit<UploadInput, "collectionId" | "warnAboutDuplicateImages">) {
    const filename = input.filename ?? (typeof input.file === "string" ? baseName(input.file) : "upload");
    const form = new FormData();
    form.append("file", await toBlob(input.file, input.contentType ?? guessContentType(filename)), filename);
    return this.request({
      method: "PUT",
      path: `/v1/assets/${encodeURIComponent(assetId)}/original`,
      form,
      schema: assetSchema,
      expect: 200,
    });
  }

  /** GET /v1/assets/:assetId/versions: previous originals, newest first. */
  listAssetVersions(assetId: string): Promise<ListAssetVersionsResponse> {
    return this.request({
      method: "GET",
      path: `/v1/assets/${encodeURIComponent(assetId)}/versions`,
      schema: listAssetVersionsResponseSchema,
      expect: 200,
    });
  }

  /** POST /v1/assets/:assetId/versions/:version/restore: that version becomes current (as a new version). */
  restoreAssetVersion(assetId: string, version: number): Promise<AssetDto> {
    return this.request({
      method: "POST",
      path: `/v1/assets/${encodeURIComponent(assetId)}/versions/${version}/restore`,
      schema: assetSchema,
      expect: 200,
    });
  }

  /** POST /v1/assets/batch: one action over up to 1000 assets, in one transaction. */
  batchAssets(batch: z.input<typeof batchRequestSchema>): Promise<BatchResponse> {
    return this.request({
      method: "POST",
      path: "/v1/assets/batch",
      json: batch,
      schema: batchResponseSchema,
      expect: 200,
    });
  }

  /** The collection with this exact name, or undefined. */
  async findCollectionByName(name: string): Promise<CollectionDto | undefined> {
    const { collections } = await this.listCollections();
    return collections.find((c) => c.name === name);
  }

  // ------------------------------------------------------------------------------------------
  // Media URLs

  /**
   * POST /v1/media-urls/sign: the absolute media URL of `path` (one of your assets), signed by the
   * server when it holds MEDIA_SIGNING_KEY (`signed`), so browsers never see the key.
   */
  signMediaUrl(path: string, options: { expiresAt?: number } = {}): Promise<SignMediaUrlResponse> {
    return this.request({
      method: "POST",
      path: "/v1/media-urls/sign",
      json: { path, expiresAt: options.expiresAt },
      schema: signMediaUrlResponseSchema,
      expect: 200,
    });
  }

  /**
   * POST /v1/media-urls/sign-batch: many paths at once (a page of a grid). `urls` maps each path of
   * a live asset of yours to its URL; the others are in `notFound`. Signed URLs carry `expiresAt`.
   */
  signMediaUrls(paths: string[], options: { expiresAt?: number } = {}): Promise<SignMediaUrlsResponse> {
    return this.request({
      method: "POST",
      path: "/v1/media-urls/sign-batch",
      json: { paths, expiresAt: options.expiresAt },
      schema: signMediaUrlsResponseSchema,
      expect: 200,
    });
  }

  /** GET /v1/assets/:assetId/trash-thumbnail: a 256 x 256 WebP of an asset in the trash (media answers 404 for it). */
  getTrashThumbnail(assetId: string): Promise<Blob> {
    return this.request({
      method: "GET",
      path: `/v1/assets/${encodeURIComponent(assetId)}/trash-thumbnail`,
      binary: true,
      expect: 200,
    });
  }

  // ------------------------------------------------------------------------------------------
  // Documentation

  /** GET /v1/openapi.json (no token needed). */
  getOpenApiDocument(): Promise<Record<string, unknown>> {
    return this.request({ method: "GET", path: "/v1/openapi.json", expect: 200 });
  }

  // ------------------------------------------------------------------------------------------

  private url(p: string, query: Query | undefined): string {
    const url = new URL(`${this.baseUrl}${p}`);
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v === undefined) continue;
      url.searchParams.set(k, v instanceof Date ? v.toISOString() : String(v));
    }
    return url.toString();
  }

  private async request<T>(spec: RequestSpec<T>): Promise<T> {
    const url = this.url(spec.path, spec.query);
    const token = typeof this.token === "function" ? await this.token() : this.token;
    const headers: Record<string, string> = {
      Accept: "application/json, application/problem+json",
      ...this.extraHeaders,
      Authorization: `Bearer ${token}`,
    };
    let body: string | FormData | undefined;
    if (spec.json !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(spec.json);
    } else if (spec.form) {
      body = spec.form; // fetch sets the multipart boundary
    }
    const response = await this.fetchImpl(url, { method: spec.method, headers, body });
    if (response.status !== spec.expect) {
      if (response.ok) {
        await response.body?.cancel();
        throw new ApiError({
          status: response.status,
          problem: {
            type: "about:blank",
            title: "Unexpected status",
            status: response.status,
            detail: `expected ${spec.expect}`,
          },
          method: spec.method,
          url,
          headers: response.headers,
        });
      }
      throw new ApiError({
        status: response.status,
        problem: await readProblem(response),
        method: spec.method,
        url,
        headers: response.headers,
      });
    }
    if (response.status === 204) return undefined as T;
    if (spec.binary) return (await response.blob()) as T;
    const text = await response.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new ResponseValidationError(spec.method, url, [{ path: "", message: "body is not JSON" }]);
    }
    if (!spec.schema || !this.validate) return json as T;
    const parsed = spec.schema.safeParse(json);
    if (!parsed.success) {
      throw new ResponseValidationError(
        spec.method,
        url,
        parsed.error.issues.map((i) => ({ path: i.path.map(String).join("."), message: i.message })),
      );
    }
    return parsed.data;
  }
}

async function toBlob(file: UploadInput["file"], type: string): Promise<Blob> {
  // Loaded only for a path (Node): the client also runs in browsers, which have no node:fs.
  if (typeof file === "string") return (await import("node:fs")).openAsBlob(file, { type });
  if (file instanceof Blob) return file;
  // Bytes are copied into the Blob; the view type only differs between the DOM and Node typings.
  return new Blob([file as Uint8Array<ArrayBuffer>], { type });
}

async function readProblem(response: Response): Promise<Problem> {
  const text = await response.text().catch(() => "");
  try {
    const parsed = problemSchema.safeParse(JSON.parse(text));
    if (parsed.success) return parsed.data;
  } catch {
    // not JSON: fall through
  }
  return {
    type: "about:blank",
    title: response.statusText || `HTTP ${response.status}`,
    status: response.status,
    detail: text ? text.slice(0, 500) : undefined,
  };
}
