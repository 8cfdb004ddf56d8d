import { Router } from "express";
import {
  apiKeyIdParamsSchema,
  createApiKeySchema,
  listAuditQuerySchema,
  putQuotasSchema,
} from "@media-platform/contracts";
import { listAudit } from "../audit/log";
import { createApiKey, listApiKeys, revokeApiKey, type ApiKeyAuthenticator } from "../auth/api-keys";
import { principalOf } from "../auth/middleware";
import type { AppContext } from "../context";
import { requireJson } from "../http";
import { notFound, parseOr400 } from "../problem";
import { getUsage, putQuotas } from "../usage/service";

export const API_KEYS_PATH = "/v1/api-keys";
export const AUDIT_PATH = "/v1/audit-events";
export const USAGE_PATH = "/v1/usage";

/** API keys, usage and quotas, and the audit log, with their full paths (scopes: auth/scopes.ts from the route table). */
export function credentialsRouter(ctx: AppContext, apiKeys?: ApiKeyAuthenticator): Router {
  const r = Router();
  r.post(API_KEYS_PATH, requireJson, async (req, res) => {
    const input = parseOr400(createApiKeySchema, req.body, "body");
    const created = await createApiKey(ctx.prisma, principalOf(req), input);
    res.status(201).location(`${API_KEYS_PATH}/${created.id}`).json(created);
  });
  r.get(API_KEYS_PATH, async (req, res) => {
    const keys = await listApiKeys(ctx.prisma, principalOf(req));
    res.json({ count: keys.length, keys });
  });
  r.delete(`${API_KEYS_PATH}/:id`, async (req, res) => {
    const params = apiKeyIdParamsSchema.safeParse(req.params);
    if (!params.success) throw notFound("API key not found");
    await revokeApiKey(ctx.prisma, apiKeys, principalOf(req), params.data.id);
    res.status(204).end();
  });
  r.get(USAGE_PATH, async (req, res) => {
    res.json(await getUsage(ctx, principalOf(req).workspaceId));
  });
  r.put(`${USAGE_PATH}/quotas`, requireJson, async (req, res) => {
    const input = parseOr400(putQuotasSchema, req.body, "body");
    res.json(await putQuotas(ctx, principalOf(req), input));
  });
  r.get(AUDIT_PATH, async (req, res) => {
    const query = parseOr400(listAuditQuerySchema, req.query, "query");
    const events = await listAudit(ctx.prisma, principalOf(req).workspaceId, query);
    if (query.format === "ndjson") {
      res.type("application/x-ndjson").send(events.map((e) => `${JSON.stringify(e)}\n`).join(""));
      return;
    }
    res.json({ events });
  });
  return r;
}
