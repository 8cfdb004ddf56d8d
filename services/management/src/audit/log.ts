import { randomUUID } from "node:crypto";
import type { AuditAction, AuditEventDto } from "@media-platform/contracts";
import type { Principal } from "../auth/keys";
import type { Prisma, PrismaClient } from "../generated/prisma/client";

type Db = PrismaClient | Prisma.TransactionClient;

export interface AuditEntry {
  /** Given when the event must be recorded once whoever records it (a sign-in); else random. */
  id?: string;
  workspaceId: string;
  action: AuditAction;
  actor: string | null;
  target?: string | null;
  details?: Record<string, unknown>;
}

/** Who a principal is in the audit log: `apikey:<id>` for a key, else the token's subject. */
export const actorOf = (principal: Principal): string | null =>
  principal.apiKeyId ? `apikey:${principal.apiKeyId}` : principal.userId;

/** Appends one event; inside the caller's transaction when given one, so it is written with the change. */
export async function recordAudit(db: Db, entry: AuditEntry): Promise<void> {
  await db.auditEvent.create({
    data: {
      id: entry.id ?? randomUUID(),
      workspaceId: entry.workspaceId,
      action: entry.action,
      actor: entry.actor,
      target: entry.target ?? null,
      details: (entry.details ?? {}) as Prisma.InputJsonValue,
    },
  });
}

/** A workspace's events, newest first, before `before` when given. */
export async function listAudit(
  db: Db,
  workspaceId: string,
  options: { limit: number; before?: string },
): Promise<AuditEventDto[]> {
  const rows = await db.auditEvent.findMany({
    where: { workspaceId, ...(options.before && { at: { lt: new Date(options.before) } }) },
    orderBy: [{ at: "desc" }, { id: "desc" }],
    take: options.limit,
  });
  return rows.map((r) => ({
    id: r.id,
    at: r.at.toISOString(),
    action: r.action as AuditAction,
    actor: r.actor,
    target: r.target,
    details: (r.details ?? {}) as Record<string, unknown>,
  }));
}
