import { createHash, randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import type { Logger } from "pino";
import {
  API_KEY_PREFIX,
  API_KEY_SECRET_BYTES,
  MAX_API_KEYS_PER_WORKSPACE,
  type ApiKeyDto,
  type ApiScope,
  type CreateApiKey,
  type CreatedApiKeyDto,
} from "@media-platform/contracts";
import { actorOf, recordAudit } from "../audit/log";
import { ConflictError, NotFoundError } from "../domain-errors";
import type { ApiKey, PrismaClient } from "../generated/prisma/client";
import { AuthError, type Principal, type TokenVerifier } from "./keys";

/**
 * API keys: `mpk_<key id, 32 hex>_<32 random bytes, base64url>`. The id finds the row; the SHA-256
 * of the whole key, compared in constant time, proves it (a hash of 256 random bits needs no
 * slow KDF). Verified keys are cached in memory for API_KEY_CACHE_SECONDS, so a request costs a
 * hash and a map lookup; a revoke evicts at once here and is seen by other replicas within that
 * bound.
 */
const KEY_FORMAT = new RegExp(`^${API_KEY_PREFIX}([0-9a-f]{32})_([A-Za-z0-9_-]{43})$`);
/** lastUsedAt is written at most this often per key. */
export const LAST_USED_INTERVAL_MS = 60_000;
/** A key used after this long unused is an audit event (`api-key.used`). */
export const IDLE_AUDIT_MS = 24 * 3600_000;
const CACHE_MAX_ENTRIES = 10_000;

export const isApiKey = (token: string): boolean => token.startsWith(API_KEY_PREFIX);

const sha256 = (value: string): Buffer => createHash("sha256").update(value, "utf8").digest();

const hexId = (uuid: string) => uuid.replace(/-/g, "");
const uuidOf = (hex: string) =>
  `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;

interface CachedKey {
  principal: Principal;
  expiresAt: number | null;
  cachedUntil: number;
}

export interface ApiKeyAuthenticatorOptions {
  /** How long a verified key is trusted without reading its row again (revocation bound across replicas). */
  cacheMs: number;
  log?: Logger;
  now?: () => number;
}

export class ApiKeyAuthenticator implements TokenVerifier {
  private readonly cache = new Map<string, CachedKey>();
  private readonly lastUsedWrites = new Map<string, number>();
  private readonly now: () => number;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly options: ApiKeyAuthenticatorOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  async verify(token: string): Promise<Principal> {
    const m = KEY_FORMAT.exec(token);
    if (!m) throw new AuthError("malformed API key");
    const hash = sha256(token);
    const cacheKey = hash.toString("base64");
    const now = this.now();
    let entry = this.cache.get(cacheKey);
    if (!entry || entry.cachedUntil <= now) {
      entry = await this.load(uuidOf(m[1]!), hash, now);
      if (this.cache.size >= CACHE_MAX_ENTRIES) this.cache.clear();
      this.cache.set(cacheKey, entry);
    }
    if (entry.expiresAt !== null && entry.expiresAt <= now) throw new AuthError("API key expired");
    this.touch(entry.principal, now);
    return entry.principal;
  }

  /** Forgets a key on this instance (after a revoke). */
  evict(keyId: string): void {
    for (const [k, v] of this.cache) if (v.principal.apiKeyId === keyId) this.cache.delete(k);
  }

  private async load(id: string, hash: Buffer, now: number): Promise<CachedKey> {
    const row = await this.prisma.apiKey.findUnique({ where: { id } });
    // The same answer for an unknown id, a wrong secret and a revoked key.
    if (!row || row.revokedAt || !timingSafeEqual(Buffer.from(row.secretHash, "hex"), hash))
      throw new AuthError("unknown or revoked API key");
    return {
      principal: {
        workspaceId: row.workspaceId,
        userId: null,
        scopes: row.scopes as ApiScope[],
        apiKeyId: row.id,
      },
      expiresAt: row.expiresAt?.getTime() ?? null,
      cachedUntil: now + this.options.cacheMs,
    };
  }

  /** Records lastUsedAt (at most once a minute, across replicas too); never delays the request. */
  private touch(principal: Principal, now: number): void {
    const id = principal.apiKeyId!;
    const last = this.lastUsedWrites.get(id);
    if (last !== undefined && now - last < LAST_USED_INTERVAL_MS) return;
    if (this.lastUsedWrites.size >= CACHE_MAX_ENTRIES) this.lastUsedWrites.clear();
    this.lastUsedWrites.set(id, now);
    this.recordUse(principal).catch((err: unknown) => this.options.log?.warn({ err }, "lastUsedAt not recorded"));
  }

  private async recordUse(principal: Principal): Promise<void> {
    const id = principal.apiKeyId!;
    // The row lock makes the read of the previous value and the write one step on every replica.
    const rows = await this.prisma.$queryRaw<Array<{ previous: Date | null }>>`
      UPDATE api_keys AS k SET last_used_at = now()
        FROM (SELECT id, last_used_at AS previous FROM api_keys WHERE id = ${id}::uuid FOR UPDATE) AS p
       WHERE k.id = p.id AND (p.previous IS NULL OR p.previous < now() - interval '1 minute')
      RETURNING p.previous`;
    const row = rows[0];
    if (!row) return;
    const idleMs = row.previous ? Date.now() - row.previous.getTime() : null;
    if (idleMs === null || idleMs >= IDLE_AUDIT_MS) {
      await recordAudit(this.prisma, {
        workspaceId: principal.workspaceId,
        action: "api-key.used",
        actor: actorOf(principal),
        target: id,
        details: idleMs === null ? { firstUse: true } : { idleSeconds: Math.round(idleMs / 1000) },
      });
    }
  }
}

function toDto(row: ApiKey): ApiKeyDto {
  return {
    id: row.id,
    name: row.name,
    scopes: row.scopes as ApiScope[],
    prefix: row.prefix,
    createdAt: row.createdAt.toISOString(),
    createdBy: row.createdBy,
    expiresAt: row.expiresAt?.toISOString() ?? null,
    lastUsedAt: row.lastUsedAt?.toISOString() ?? null,
  };
}

export async function createApiKey(
  prisma: PrismaClient,
  principal: Principal,
  input: CreateApiKey,
): Promise<CreatedApiKeyDto> {
  const id = randomUUID();
  const secret = `${API_KEY_PREFIX}${hexId(id)}_${randomBytes(API_KEY_SECRET_BYTES).toString("base64url")}`;
  const row = await prisma.$transaction(async (tx) => {
    const held = await tx.apiKey.count({ where: { workspaceId: principal.workspaceId, revokedAt: null } });
    if (held >= MAX_API_KEYS_PER_WORKSPACE)
      throw new ConflictError(`The workspace already holds ${MAX_API_KEYS_PER_WORKSPACE} keys; revoke one first`);
    const created = await tx.apiKey.create({
      data: {
        id,
        workspaceId: principal.workspaceId,
        name: input.name,
        scopes: input.scopes,
        prefix: secret.slice(0, API_KEY_PREFIX.length + 8),
        secretHash: sha256(secret).toString("hex"),
        createdBy: actorOf(principal),
        expiresAt: input.expiresAt ? new Date(input.expiresAt) : null,
      },
    });
    await recordAudit(tx, {
      workspaceId: principal.workspaceId,
      action: "api-key.created",
      actor: actorOf(principal),
      target: id,
      details: { name: input.name, scopes: input.scopes, expiresAt: input.expiresAt ?? null },
    });
    return created;
  });
  return { ...toDto(row), secret };
}

export async function listApiKeys(prisma: PrismaClient, principal: Principal): Promise<ApiKeyDto[]> {
  const rows = await prisma.apiKey.findMany({
    where: { workspaceId: principal.workspaceId, revokedAt: null },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
  });
  return rows.map(toDto);
}

/** Revokes a key of the caller's workspace (404 for another workspace's, as for an unknown one). */
export async function revokeApiKey(
  prisma: PrismaClient,
  authenticator: ApiKeyAuthenticator | undefined,
  principal: Principal,
  id: string,
): Promise<void> {
  await prisma.$transaction(async (tx) => {
    const { count } = await tx.apiKey.updateMany({
      where: { id, workspaceId: principal.workspaceId, revokedAt: null },
      data: { revokedAt: new Date() },
    });
    if (count === 0) throw new NotFoundError("API key not found");
    await recordAudit(tx, {
      workspaceId: principal.workspaceId,
      action: "api-key.revoked",
      actor: actorOf(principal),
      target: id,
    });
  });
  authenticator?.evict(id);
}
