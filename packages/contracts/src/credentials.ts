import { z } from "zod";
import { singleLineText } from "./management";

/**
 * Credentials, usage and quotas of a workspace: API keys and their scopes, GET /v1/usage, the
 * per-workspace quota override and the audit log.
 */

/**
 * What a credential may do. Each operation of the API needs one (its `scope` in the route table):
 * `read` the GETs, `write` every change to assets and collections, `admin` keys, quotas and the
 * audit log. A credential holds a set of them; none implies another.
 */
export const API_SCOPES = ["read", "write", "admin"] as const;
export type ApiScope = (typeof API_SCOPES)[number];
export const apiScopeSchema = z.enum(API_SCOPES).describe("read, write or admin");

/** Every API key starts with this, so secret scanners can recognise a leaked one. */
export const API_KEY_PREFIX = "mpk_";
/** Random bytes in an API key's secret part. */
export const API_KEY_SECRET_BYTES = 32;
export const MAX_API_KEY_NAME_LENGTH = 100;
/** Keys one workspace may hold (revoked ones do not count). */
export const MAX_API_KEYS_PER_WORKSPACE = 100;

export const createApiKeySchema = z
  .object({
    name: singleLineText()
      .trim()
      .min(1, "must not be empty")
      .max(MAX_API_KEY_NAME_LENGTH, `must be at most ${MAX_API_KEY_NAME_LENGTH} characters`)
      .describe("What the key is for, 1-100 characters"),
    scopes: z
      .array(apiScopeSchema)
      .min(1, "must name at least one scope")
      .max(API_SCOPES.length)
      .refine((s) => new Set(s).size === s.length, "must not repeat a scope")
      .describe("What the key may do: read, write and/or admin (admin manages keys, quotas and the audit log)"),
    expiresAt: z
      .string()
      .datetime({ offset: true, message: "must be an ISO 8601 date-time" })
      .refine((s) => Date.parse(s) > Date.now(), "must be in the future")
      .optional()
      .describe("When the key stops working (ISO 8601); absent = until revoked"),
  })
  .strict()
  .describe("POST /v1/api-keys body");
export type CreateApiKey = z.infer<typeof createApiKeySchema>;

export const apiKeySchema = z
  .object({
    id: z.string().uuid().describe("Key identifier (UUIDv4)"),
    name: z.string().describe("What the key is for"),
    scopes: z.array(apiScopeSchema).describe("What the key may do"),
    prefix: z.string().describe("The key's first characters, to recognise it (the secret is never shown again)"),
    createdAt: z.string().datetime().describe("Creation time (ISO 8601)"),
    createdBy: z.string().nullable().describe("Subject of the credential that created the key"),
    expiresAt: z.string().datetime().nullable().describe("Expiry (ISO 8601), or null"),
    lastUsedAt: z
      .string()
      .datetime()
      .nullable()
      .describe("Last use (ISO 8601), recorded at most once a minute; null = never used"),
  })
  .describe("API key (without its secret)");
export type ApiKeyDto = z.infer<typeof apiKeySchema>;

export const createdApiKeySchema = apiKeySchema
  .extend({
    secret: z
      .string()
      .describe(
        `The key itself (${API_KEY_PREFIX}...): send it as Authorization: Bearer <key>. Shown in this answer only; only its hash is stored`,
      ),
  })
  .describe("The created API key, with its secret (shown once)");
export type CreatedApiKeyDto = z.infer<typeof createdApiKeySchema>;

export const listApiKeysResponseSchema = z
  .object({
    count: z.number().int().describe("Number of keys"),
    keys: z.array(apiKeySchema).describe("The workspace's keys that are not revoked, newest first"),
  })
  .describe("GET /v1/api-keys result");

export const apiKeyIdParamsSchema = z
  .object({
    id: z
      .string()
      .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, "must be a UUID")
      .transform((s) => s.toLowerCase())
      .describe("Key identifier"),
  })
  .describe("Path parameters");

/** Days of daily figures GET /v1/usage answers. */
export const USAGE_DAYS = 90;

export const usageDaySchema = z
  .object({
    date: z.string().describe("UTC day, YYYY-MM-DD"),
    uploads: z.number().int().describe("Uploads and replaced originals stored that day"),
    renders: z.number().int().describe("Renditions the media service computed that day (cache misses)"),
    egressBytes: z.number().int().describe("Bytes of images the media service sent that day"),
  })
  .describe("One day of usage");

export const quotaStateSchema = z
  .object({
    limit: z.number().int().nullable().describe("The limit, or null when there is none"),
    source: z.enum(["default", "workspace", "none"]).describe("Where the limit comes from"),
  })
  .describe("A quota");

export const usageResponseSchema = z
  .object({
    workspaceId: z.string().describe("The caller's workspace"),
    storageBytes: z
      .number()
      .int()
      .describe("Bytes stored: current originals, previous versions and the trash (counted until purged)"),
    assets: z.number().int().describe("Assets, the trash included (counted until purged)"),
    quotas: z
      .object({ storageBytes: quotaStateSchema, assets: quotaStateSchema })
      .describe("The workspace's quotas (WORKSPACE_STORAGE_QUOTA_BYTES, WORKSPACE_ASSET_QUOTA or its override)"),
    days: z.array(usageDaySchema).describe(`The last ${USAGE_DAYS} UTC days, oldest first, today last`),
  })
  .describe("GET /v1/usage result");
export type UsageResponse = z.infer<typeof usageResponseSchema>;

const quotaValue = z
  .number()
  .int("must be an integer")
  .min(0, "must be at least 0")
  .max(Number.MAX_SAFE_INTEGER)
  .nullable();

export const putQuotasSchema = z
  .object({
    storageBytes: quotaValue
      .optional()
      .describe("Storage limit in bytes for this workspace; null = back to the default; absent = unchanged"),
    assets: quotaValue
      .optional()
      .describe("Asset limit for this workspace; null = back to the default; absent = unchanged"),
  })
  .strict()
  .describe("PUT /v1/usage/quotas body");
export type PutQuotas = z.infer<typeof putQuotasSchema>;

export const AUDIT_ACTIONS = [
  "api-key.created",
  "api-key.used",
  "api-key.revoked",
  "sign-in",
  "asset.deleted-permanently",
  "quota.changed",
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export const auditEventSchema = z
  .object({
    id: z.string().uuid().describe("Event identifier"),
    at: z.string().datetime().describe("When it happened (ISO 8601)"),
    action: z.enum(AUDIT_ACTIONS).describe("What happened"),
    actor: z.string().nullable().describe("Who: token subject, or apikey:<id>; null when unknown"),
    target: z.string().nullable().describe("What it happened to (key, asset id), or null"),
    details: z.record(z.string(), z.unknown()).describe("Facts of the event (never a secret)"),
  })
  .describe("Audit event");
export type AuditEventDto = z.infer<typeof auditEventSchema>;

export const AUDIT_PAGE_LIMIT = 1000;

export const listAuditQuerySchema = z
  .object({
    limit: z.coerce
      .number()
      .int("must be an integer 1-1000")
      .min(1, "must be an integer 1-1000")
      .max(AUDIT_PAGE_LIMIT, "must be an integer 1-1000")
      .default(100)
      .describe("Events per page, 1-1000"),
    before: z
      .string()
      .datetime({ message: "must be an ISO 8601 date-time" })
      .optional()
      .describe("Only events before this time (the `at` of the last event of the previous page)"),
    format: z.enum(["json", "ndjson"]).default("json").describe("json, or ndjson (one event per line, for export)"),
  })
  .strict()
  .describe("Query parameters");

export const listAuditResponseSchema = z
  .object({
    events: z.array(auditEventSchema).describe("Events, newest first"),
  })
  .describe("GET /v1/audit-events result");
