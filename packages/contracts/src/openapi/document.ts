import { z } from "zod";
import {
  assetSchema,
  collectionSchema,
  createCollectionSchema,
  duplicateMatchSchema,
  fullTextResponseSchema,
  listedAssetSchema,
  signMediaUrlRequestSchema,
  signMediaUrlResponseSchema,
  signMediaUrlsRequestSchema,
  signMediaUrlsResponseSchema,
  listAssetsResponseSchema,
  listCollectionsResponseSchema,
  patchAssetSchema,
  scoredAssetSchema,
  uploadResponseSchema,
  listAssetVersionsResponseSchema,
  batchRequestSchema,
  batchResponseSchema,
} from "../management";
import {
  apiKeySchema,
  auditEventSchema,
  createApiKeySchema,
  createdApiKeySchema,
  listApiKeysResponseSchema,
  listAuditResponseSchema,
  putQuotasSchema,
  usageResponseSchema,
} from "../credentials";
import { PROBLEM_CONTENT_TYPE, problemSchema } from "../problem";
import { managementRoutes, toOpenApiPath, type ApiRoute, type ProblemStatus, type RouteBody } from "./routes";

/**
 * OpenAPI 3.1 document generated from the zod contracts with zod's own JSON Schema generator
 * (`z.toJSONSchema`, draft 2020-12 = the OpenAPI 3.1 dialect). Nothing here restates a field:
 * types, formats, ranges, enums, defaults and descriptions all come from the schemas.
 */

type JsonSchema = Record<string, unknown>;
type JsonObject = Record<string, unknown>;

export const OPENAPI_VERSION = "3.1.0";
export const API_VERSION = "1.0.0";
export const BEARER_SCHEME = "bearerAuth";

/** Response schemas (generated as the service sends them: zod "output" side). */
const outputComponents: Record<string, z.ZodType> = {
  Asset: assetSchema,
  ListedAsset: listedAssetSchema,
  DuplicateMatch: duplicateMatchSchema,
  UploadResult: uploadResponseSchema,
  AssetList: listAssetsResponseSchema,
  ScoredAsset: scoredAssetSchema,
  FullTextResult: fullTextResponseSchema,
  Collection: collectionSchema,
  CollectionList: listCollectionsResponseSchema,
  AssetVersionList: listAssetVersionsResponseSchema,
  BatchResult: batchResponseSchema,
  MediaUrl: signMediaUrlResponseSchema,
  MediaUrlBatch: signMediaUrlsResponseSchema,
  ApiKey: apiKeySchema,
  CreatedApiKey: createdApiKeySchema,
  ApiKeyList: listApiKeysResponseSchema,
  Usage: usageResponseSchema,
  AuditEvent: auditEventSchema,
  AuditEventList: listAuditResponseSchema,
  Problem: problemSchema,
};

/** Request bodies (generated as a client sends them: zod "input" side, before transforms). */
const inputComponents: Record<string, z.ZodType> = {
  AssetPatch: patchAssetSchema,
  CollectionCreate: createCollectionSchema,
  BatchRequest: batchRequestSchema,
  MediaUrlSignRequest: signMediaUrlRequestSchema,
  MediaUrlSignBatchRequest: signMediaUrlsRequestSchema,
  ApiKeyCreate: createApiKeySchema,
  QuotasPut: putQuotasSchema,
};

/** Base of the problem `type` URIs the management service sends. */
export const PROBLEM_TYPE_BASE = "https://media-platform.dev/problems/";

interface ProblemResponseSpec {
  name: string;
  description: string;
  /** Example body shown by the reference (type slug, title and a typical detail). */
  example: { slug: string; title: string; detail: string; errors?: { path: string; message: string }[] };
}

export const PROBLEM_RESPONSES: Record<ProblemStatus | 500, ProblemResponseSpec> = {
  400: {
    name: "BadRequest",
    description: "Validation failed: `errors` lists each offending field with its path and message",
    example: {
      slug: "validation-error",
      title: "Bad Request",
      detail: "Invalid query",
      errors: [{ path: "query.limit", message: "must be an integer 1-100" }],
    },
  },
  401: {
    name: "Unauthorized",
    description:
      "Missing, malformed, expired or badly signed bearer token, or no workspace claim (WWW-Authenticate: Bearer)",
    example: { slug: "unauthorized", title: "Unauthorized", detail: "token expired" },
  },
  403: {
    name: "Forbidden",
    description: "The credential lacks the scope the operation needs (`insufficient-scope`; `requiredScope` names it)",
    example: {
      slug: "insufficient-scope",
      title: "Forbidden",
      detail: "This operation needs the admin scope; the credential has read",
    },
  },
  404: {
    name: "NotFound",
    description: "Unknown id, or a resource of another workspace",
    example: { slug: "not-found", title: "Not Found", detail: "Asset not found" },
  },
  409: {
    name: "Conflict",
    description:
      "A collection with this name already exists in the workspace; a resumable upload's Upload-Offset is not the offset the service holds",
    example: {
      slug: "conflict",
      title: "Conflict",
      detail: "A collection of this name already exists in this workspace",
      errors: [{ path: "body.name", message: "must be unique within the workspace" }],
    },
  },
  413: {
    name: "ContentTooLarge",
    description:
      "The file exceeds the upload limit (MAX_UPLOAD_BYTES, 50 MB by default), or would take the workspace past its storage or asset quota (`quota-exceeded`, naming `quota`, `usage` and `limit`)",
    example: {
      slug: "payload-too-large",
      title: "Content Too Large",
      detail: "The file exceeds the upload limit of 52428800 bytes",
    },
  },
  415: {
    name: "UnsupportedMediaType",
    description:
      "Upload: not a supported image (JPEG, PNG, WebP, GIF, AVIF, TIFF, SVG, HEIC, PDF, camera RAW), a camera RAW without a usable embedded JPEG preview, markup that is not SVG, an SVG declaring <!ENTITY>s, or a compressed (gzip, SVGZ) file. JSON endpoints: the body is not application/json",
    example: {
      slug: "unsupported-media-type",
      title: "Unsupported Media Type",
      detail:
        "The file is not a supported image (accepted: JPEG, PNG, WebP, GIF, AVIF, TIFF, SVG, HEIC, PDF, camera RAW (DNG, CR2, CR3, NEF, ARW, RAF, RW2, ORF))",
    },
  },
  422: {
    name: "UnprocessableContent",
    description:
      "A recognised image format whose bytes cannot be decoded (truncated or corrupt, an SVG that is not well-formed UTF-8 XML: `undecodable-image`), or with more pixels than LIMIT_INPUT_PIXELS (`image-too-large`; an SVG counts its width x height at 72 dpi)",
    example: {
      slug: "undecodable-image",
      title: "Image cannot be decoded",
      detail: "The image could not be decoded (truncated or corrupt)",
    },
  },
  410: {
    name: "Gone",
    description: "A resumable upload past TUS_UPLOAD_EXPIRY (its bytes are swept)",
    example: { slug: "upload-expired", title: "Upload expired", detail: "The file for this url no longer exists" },
  },
  412: {
    name: "PreconditionFailed",
    description: "A resumable upload request without Tus-Resumable: 1.0.0",
    example: { slug: "tus-version", title: "Precondition Failed", detail: "Tus-Resumable Required" },
  },
  423: {
    name: "Locked",
    description: "Another request is still writing this resumable upload",
    example: { slug: "upload-locked", title: "Upload locked", detail: "Another request is writing this upload" },
  },
  460: {
    name: "ChecksumMismatch",
    description: "The bytes of a PATCH do not match its Upload-Checksum; none of them were stored",
    example: {
      slug: "checksum-mismatch",
      title: "Checksum Mismatch",
      detail: "The body does not match its Upload-Checksum (sha256); nothing of it was stored",
    },
  },
  502: {
    name: "ImportFailed",
    description: "An import URL's server answered an error status (named in the detail) or could not be reached",
    example: {
      slug: "import-failed",
      title: "Import failed",
      detail: "The remote server answered 404 for example.com/a.png",
    },
  },
  504: {
    name: "ImportTimeout",
    description: "An import took longer than IMPORT_TIMEOUT_MS",
    example: { slug: "import-timeout", title: "Import timed out", detail: "The import took longer than 60000 ms" },
  },
  429: {
    name: "TooManyRequests",
    description:
      "The credential sent more than RATE_LIMIT_REQUESTS_PER_MINUTE requests in the current minute (`Retry-After` says when to retry)",
    example: {
      slug: "rate-limited",
      title: "Too Many Requests",
      detail: "More than 600 requests in a minute with this credential; retry in 12 s",
    },
  },
  500: {
    name: "InternalError",
    description: "Unexpected server error (never carries internal details)",
    example: { slug: "internal-error", title: "Internal Server Error", detail: "An unexpected error occurred" },
  },
};

const componentRef = (id: string) => ({ $ref: `#/components/schemas/${id}` });

/**
 * Drops the keys z.toJSONSchema adds for standalone documents, and the ±2^53 bounds it writes on
 * every `.int()` (they say nothing to a reader).
 */
function clean(schema: JsonSchema): JsonSchema {
  const { $schema: _schema, $id: _id, ...rest } = schema;
  return stripSafeIntegerBounds(rest) as JsonSchema;
}

function stripSafeIntegerBounds(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stripSafeIntegerBounds);
  if (typeof value !== "object" || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === "minimum" && v === Number.MIN_SAFE_INTEGER) continue;
    if (k === "maximum" && v === Number.MAX_SAFE_INTEGER) continue;
    out[k] = stripSafeIntegerBounds(v);
  }
  return out;
}

/**
 * One schema to JSON Schema. Schemas registered as components become `$ref`s wherever they are
 * nested, so every component is generated once.
 */
function generateComponents(schemas: Record<string, z.ZodType>, io: "input" | "output"): Record<string, JsonSchema> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(schemas)) registry.add(schema, { id });
  const out = z.toJSONSchema(registry, { io, uri: (id) => `#/components/schemas/${id}`, unrepresentable: "throw" });
  const result: Record<string, JsonSchema> = {};
  for (const [id, schema] of Object.entries(out.schemas)) result[id] = clean(schema as JsonSchema);
  return result;
}

function findComponentId(schema: z.ZodType, table: Record<string, z.ZodType>): string | undefined {
  return Object.entries(table).find(([, s]) => s === schema)?.[0];
}

function inlineSchema(schema: z.ZodType, io: "input" | "output"): JsonSchema {
  return clean(z.toJSONSchema(schema, { io, unrepresentable: "throw" }) as JsonSchema);
}

function responseSchemaRef(schema: z.ZodType): JsonSchema {
  const id = findComponentId(schema, outputComponents);
  return id ? componentRef(id) : inlineSchema(schema, "output");
}

/** A field is required when `undefined` does not parse (not optional, no default). */
function isRequired(field: z.ZodType): boolean {
  return !field.safeParse(undefined).success;
}

function parametersOf(where: "path" | "query", object: z.ZodObject | undefined): JsonObject[] {
  if (!object) return [];
  return Object.entries(object.shape as Record<string, z.ZodType>).map(([name, field]) => {
    const { description, ...schema } = inlineSchema(field, "input");
    const parameter: JsonObject = { name, in: where, required: where === "path" ? true : isRequired(field), schema };
    if (typeof description === "string") parameter.description = description;
    return parameter;
  });
}

function requestBodyOf(body: RouteBody): JsonObject {
  if (body.type === "binary") {
    return {
      description: body.description,
      required: body.required,
      content: { [body.contentType]: { schema: { type: "string", format: "binary" } } },
    };
  }
  if (body.type === "json") {
    const id = findComponentId(body.schema, inputComponents);
    return {
      description: body.description,
      required: true,
      content: { "application/json": { schema: id ? componentRef(id) : inlineSchema(body.schema, "input") } },
    };
  }
  const fields = inlineSchema(body.fields, "input");
  const properties = {
    [body.filePart]: {
      type: "string",
      format: "binary",
      contentMediaType: "application/octet-stream",
      description: body.fileDescription,
    },
    ...(fields.properties as JsonObject),
  };
  const required = [body.filePart, ...((fields.required as string[] | undefined) ?? [])];
  return {
    description: body.description,
    required: true,
    content: {
      "multipart/form-data": {
        schema: { type: "object", description: fields.description, properties, required, additionalProperties: false },
        encoding: {
          [body.filePart]: { contentType: "image/jpeg, image/png, image/webp, image/gif, image/avif, image/tiff" },
        },
      },
    },
  };
}

function operationOf(route: ApiRoute): JsonObject {
  const responses: JsonObject = {};
  for (const [status, response] of Object.entries(route.responses)) {
    if (!response) continue;
    const r: JsonObject = { description: response.description };
    if (response.schema) r.content = { "application/json": { schema: responseSchemaRef(response.schema) } };
    else if (response.contentType) r.content = { [response.contentType]: { schema: { type: "string" } } };
    const headers: JsonObject = {};
    if (response.location) {
      headers.Location = { description: "URL of the created resource", schema: { type: "string" } };
    }
    for (const [name, description] of Object.entries(response.headers ?? {})) {
      headers[name] = { description, schema: { type: "string" } };
    }
    if (Object.keys(headers).length) r.headers = headers;
    responses[status] = r;
  }
  // Any authenticated operation may answer 401, 403 (scope) and 429 (rate limit).
  const problems: (ProblemStatus | 500)[] = [
    ...route.problems,
    ...(route.auth ? [401 as const, 403 as const, 429 as const] : []),
    500,
  ];
  for (const status of [...new Set(problems)].sort((a, b) => a - b)) {
    responses[String(status)] = { $ref: `#/components/responses/${PROBLEM_RESPONSES[status].name}` };
  }
  const operation: JsonObject = {
    operationId: route.operationId,
    summary: route.summary,
    tags: [route.tag],
    security: route.auth ? [{ [BEARER_SCHEME]: route.scope ? [route.scope] : [] }] : [],
  };
  if (route.scope) operation["x-required-scope"] = route.scope;
  if (route.description) operation.description = route.description;
  const parameters = [...parametersOf("path", route.params), ...parametersOf("query", route.query)];
  if (parameters.length) operation.parameters = parameters;
  if (route.body) operation.requestBody = requestBodyOf(route.body);
  operation.responses = responses;
  return operation;
}

export interface OpenApiOptions {
  /** Base URL of the management API, e.g. http://localhost:3000 (no /v1). */
  serverUrl: string;
  /** Public base URL of the media service, mentioned in the description. */
  mediaUrl?: string;
  routes?: readonly ApiRoute[];
}

export type OpenApiDocument = {
  openapi: string;
  info: { title: string; version: string; description: string };
  servers: { url: string; description?: string }[];
  tags: { name: string; description: string }[];
  paths: Record<string, Record<string, JsonObject>>;
  components: {
    schemas: Record<string, JsonSchema>;
    responses: Record<string, JsonObject>;
    securitySchemes: Record<string, JsonObject>;
  };
};

export function buildOpenApiDocument(options: OpenApiOptions): OpenApiDocument {
  const routes = options.routes ?? managementRoutes;
  const paths: OpenApiDocument["paths"] = {};
  for (const route of routes) {
    const path = toOpenApiPath(route.path);
    const item = (paths[path] ??= {});
    if (item[route.method]) throw new Error(`duplicate route ${route.method.toUpperCase()} ${route.path}`);
    item[route.method] = operationOf(route);
  }

  const responses: Record<string, JsonObject> = {};
  for (const [status, { name, description, example }] of Object.entries(PROBLEM_RESPONSES)) {
    const { slug, ...rest } = example;
    const response: JsonObject = {
      description: `${status}: ${description}`,
      content: {
        [PROBLEM_CONTENT_TYPE]: {
          schema: componentRef("Problem"),
          example: { type: `${PROBLEM_TYPE_BASE}${slug}`, status: Number(status), ...rest },
        },
      },
    };
    if (status === "401") {
      response.headers = {
        "WWW-Authenticate": {
          description: "Bearer challenge",
          schema: { type: "string", example: 'Bearer realm="media-platform"' },
        },
      };
    }
    responses[name] = response;
  }

  const mediaUrl = options.mediaUrl ?? "{media_url}";
  return {
    openapi: OPENAPI_VERSION,
    info: {
      title: "Media Platform management API",
      version: API_VERSION,
      description: [
        "Upload images, manage their metadata and collections, and search a workspace's library.",
        "",
        "Every `/v1` request needs `Authorization: Bearer <credential>`: a JWT whose `workspace_id` claim selects the workspace, or an API key (`mpk_...`, `POST /v1/api-keys`). A resource of another workspace answers 404.",
        "Each operation names the scope it needs (`x-required-scope`: `read`, `write` or `admin`); a credential without it gets 403 `insufficient-scope`. A token's `scope` claim limits it the same way when it names any of these scopes.",
        "Errors are RFC 9457 `application/problem+json` bodies: `{ type, title, status, detail, errors? }`.",
        "",
        `Transformed images are served by the media service at \`${mediaUrl}/<transformation>[:<param>=<value>...]/<assetId>.<ext>\`; its \`GET /transformations\` lists every transformation and parameter.`,
      ].join("\n"),
    },
    servers: [{ url: options.serverUrl.replace(/\/+$/, "") || "/", description: "Management API" }],
    tags: [
      { name: "Assets", description: "Upload, read, update, list and search assets" },
      {
        name: "Collections",
        description: "Create, list and delete collections; assets join them through PATCH or upload",
      },
      {
        name: "Credentials and usage",
        description: "API keys, the workspace's usage and quotas, and its audit log",
      },
      { name: "Documentation", description: "This document and its interactive reference (no authentication)" },
      {
        name: "Operations",
        description: "Health, readiness and metrics endpoints for orchestrators (no authentication)",
      },
    ],
    paths,
    components: {
      schemas: { ...generateComponents(outputComponents, "output"), ...generateComponents(inputComponents, "input") },
      responses,
      securitySchemes: {
        [BEARER_SCHEME]: {
          type: "http",
          scheme: "bearer",
          description:
            "A JWT from the identity provider (or `pnpm run token --workspace <id>` in embedded mode), or an API key (`mpk_...`). The scopes listed on an operation are the ones its credential needs.",
        },
      },
    },
  };
}
