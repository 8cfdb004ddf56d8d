import { createHash, randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

/** The raw SQL surface the runner needs; implemented for PGlite and node-postgres in client.ts. */
export interface MigrationConnection {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  /** Runs a multi-statement script. */
  exec(script: string): Promise<void>;
  transaction<T>(fn: (tx: MigrationConnection) => Promise<T>): Promise<T>;
  /** Takes a cross-process lock for the duration of the run (no-op where not needed). */
  lock(): Promise<void>;
  /** Releases the lock and the connection. */
  release(): Promise<void>;
}

export interface Migration {
  name: string;
  sql: string;
  /** sha256 hex of the migration.sql bytes, as Prisma computes it. */
  checksum: string;
}

/** The service folder (holding its package.json) above this file: src/db/ in development, dist/ compiled. */
function serviceRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, "package.json"))) return dir;
    if (path.dirname(dir) === dir) return path.resolve(from, "../..");
  }
}

/** <repo>/prisma/migrations (services/management/../../), found from this file so it works from any working directory. */
export const DEFAULT_MIGRATIONS_DIR = path.resolve(serviceRoot(__dirname), "../../prisma/migrations");

const MIGRATION_NAME = /^[0-9]{14}_[A-Za-z0-9_]+$/;

/** Exactly the table `prisma migrate deploy` creates (schema-engine, postgres flavour). */
export const PRISMA_MIGRATIONS_TABLE_DDL = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id"                    VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum"              VARCHAR(64) NOT NULL,
    "finished_at"           TIMESTAMPTZ,
    "migration_name"        VARCHAR(255) NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        TIMESTAMPTZ,
    "started_at"            TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count"   INTEGER NOT NULL DEFAULT 0
)`;

export function readMigrations(dir: string = DEFAULT_MIGRATIONS_DIR): Migration[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && MIGRATION_NAME.test(d.name))
    .map((d) => d.name)
    .sort()
    .map((name) => {
      const bytes = fs.readFileSync(path.join(dir, name, "migration.sql"));
      return { name, sql: bytes.toString("utf8"), checksum: createHash("sha256").update(bytes).digest("hex") };
    });
}

export class MigrationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "MigrationError";
  }
}

interface AppliedRow {
  migration_name: string;
  checksum: string;
  finished_at: Date | string | null;
  rolled_back_at: Date | string | null;
}

export interface MigrateResult {
  applied: string[];
  alreadyApplied: string[];
}

/**
 * Applies pending migrations in name order, each in its own transaction, recording them in
 * `_prisma_migrations` the way `prisma migrate deploy` does. Refuses to run when an applied
 * migration was edited (checksum changed), when one is recorded as failed, or when the database
 * has migrations this checkout does not know.
 */
export async function migrate(
  conn: MigrationConnection,
  migrations: Migration[] = readMigrations(),
): Promise<MigrateResult> {
  await conn.lock();
  try {
    await conn.exec(PRISMA_MIGRATIONS_TABLE_DDL);
    const rows = await conn.query<AppliedRow>(
      `SELECT migration_name, checksum, finished_at, rolled_back_at FROM "_prisma_migrations" ORDER BY started_at`,
    );
    const live = rows.filter((r) => r.rolled_back_at === null);
    const failed = live.find((r) => r.finished_at === null);
    if (failed) {
      throw new MigrationError(
        `migration ${failed.migration_name} is recorded as failed in _prisma_migrations; resolve it before migrating`,
      );
    }
    const applied = new Map(live.map((r) => [r.migration_name, r.checksum]));
    const known = new Set(migrations.map((m) => m.name));
    for (const name of applied.keys()) {
      if (!known.has(name))
        throw new MigrationError(`database has migration ${name}, which is missing from this checkout`);
    }
    const result: MigrateResult = { applied: [], alreadyApplied: [] };
    for (const m of migrations) {
      const checksum = applied.get(m.name);
      if (checksum !== undefined) {
        if (checksum !== m.checksum) {
          throw new MigrationError(`migration ${m.name} was modified after it was applied (checksum mismatch)`);
        }
        result.alreadyApplied.push(m.name);
        continue;
      }
      await conn.transaction(async (tx) => {
        const id = randomUUID();
        await tx.query(
          `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, applied_steps_count) VALUES ($1, $2, $3, now(), 0)`,
          [id, m.checksum, m.name],
        );
        try {
          await tx.exec(m.sql);
        } catch (err) {
          const message = err instanceof Error ? err.message : String(err);
          throw new MigrationError(`migration ${m.name} failed: ${message}`);
        }
        await tx.query(`UPDATE "_prisma_migrations" SET finished_at = now(), applied_steps_count = 1 WHERE id = $1`, [
          id,
        ]);
      });
      result.applied.push(m.name);
    }
    return result;
  } finally {
    await conn.release();
  }
}
