import { createHash } from "node:crypto";
import type { RequestHandler } from "express";
import type { Logger } from "pino";
import { recordAudit } from "../audit/log";
import type { PrismaClient } from "../generated/prisma/client";

const SEEN_MAX = 10_000;

/**
 * Records a `sign-in` audit event the first time a session token of a new sign-in is used: one per
 * workspace, subject and `auth_time` (a token's `iat` when it has none, as `pnpm run token`'s), so
 * silent renewals of one sign-in add nothing. The event's id is derived from those three, so
 * replicas and restarts never record one twice. Never delays the request.
 */
export function recordSignIns(prisma: PrismaClient, log: Logger): RequestHandler {
  const seen = new Set<string>();
  return (req, _res, next) => {
    next();
    const p = req.principal;
    if (!p || p.apiKeyId || p.signedInAt === undefined || !p.userId) return;
    const key = `${p.workspaceId}\0${p.userId}\0${p.signedInAt}`;
    if (seen.has(key)) return;
    if (seen.size >= SEEN_MAX) seen.clear();
    seen.add(key);
    const h = createHash("sha256").update(key).digest("hex");
    const id = `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
    recordAudit(prisma, {
      id,
      workspaceId: p.workspaceId,
      action: "sign-in",
      actor: p.userId,
      details: { signedInAt: new Date(p.signedInAt * 1000).toISOString() },
    }).catch((err: unknown) => {
      if ((err as { code?: string }).code !== "P2002") log.warn({ err }, "sign-in not recorded");
    });
  };
}
