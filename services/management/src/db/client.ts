import fs from "node:fs";
import type { Extension, PGlite } from "@electric-sql/pglite";
import { PrismaPg } from "@prisma/adapter-pg";
import type { PrismaPGlite as PrismaPGliteType } from "pglite-prisma-adapter";
import pg from "pg";
import { PrismaClient } from "../generated/prisma/client";
import { DEFAULT_STATEMENT_CACHE } from "../config";
import { nativeRequire } from "../native-require";
import { directReads, type RawReads } from "./direct-reads";
import type { MigrationConnection } from "./migrate";

export type { PrismaClient, RawReads };

/**
 * PGlite's CommonJS build loads Node built-ins with dynamic import(), which jest's module sandbox
 * cannot run (ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING_FLAG). Loading PGlite, its pg_trgm extension
 * and the Prisma adapter with Node's own loader works the same at run time and under jest; the
 * adapter must come from the same loader as PGlite, because it maps errors with instanceof.
 */
const loadPGlite = () => nativeRequire<typeof import("@electric-sql/pglite")>("@electric-sql/pglite");
const loadPgTrgm = () => nativeRequire<{ pg_trgm: Extension }>("@electric-sql/pglite/contrib/pg_trgm").pg_trgm;
const loadPrismaPGlite = () =>
  nativeRequire<{ PrismaPGlite: typeof PrismaPGliteType }>("pglite-prisma-adapter").PrismaPGlite;

/** A Prisma client plus a raw connection for the migration runner, on PGlite or Postgres. */
export interface Database {
  kind: "pglite" | "postgres";
  prisma: PrismaClient;
  /**
   * The list and search read statements: on Postgres straight on node-postgres (directReads, the
   * same pool); on PGlite the Prisma client itself.
   */
  reads: RawReads;
  /** Opens a single dedicated connection for migrations (multi-statement scripts, transactions). */
  migrationConnection(): Promise<MigrationConnection>;
  close(): Promise<void>;
}

export type DatabaseOptions =
  | { databaseUrl: string; /** See statementNames; default DEFAULT_STATEMENT_CACHE. */ statementCache?: number }
  | { pgliteDir: string }
  | { pglite: PGlite };

/**
 * Names for Prisma's Postgres statements, so node-postgres prepares each distinct SQL text once per
 * connection and then only binds, plans and executes it: no parse and analysis per request (a typo
 * search at 1M assets: 2.6 instead of 3.2 ms of SQL; see withCustomPlans for planning). Prisma's
 * former query engine did the same (statement_cache_size, 100). node-postgres never forgets a
 * prepared statement, so only the first `capacity` distinct texts are named; later ones run
 * unnamed, as before.
 */
export function statementNames(capacity: number, prefix = "prisma"): (query: { sql: string }) => string {
  const names = new Map<string, string>();
  return ({ sql }) => {
    let name = names.get(sql);
    if (name === undefined && names.size < capacity) {
      name = `${prefix}_${names.size + 1}`;
      names.set(sql, name);
    }
    // An unnamed statement (undefined) is parsed and planned on every execution.
    return name as string;
  };
}

/** Creates a PGlite instance with the extensions the migrations need. `dir` undefined = in memory. */
export async function createPGlite(dir: string | undefined): Promise<PGlite> {
  if (dir !== undefined) fs.mkdirSync(dir, { recursive: true });
  const { PGlite: PGliteClass } = loadPGlite();
  const db = new PGliteClass({ dataDir: dir, extensions: { pg_trgm: loadPgTrgm() } });
  await db.waitReady;
  return db;
}

const isDate = (v: unknown): v is Date => Object.prototype.toString.call(v) === "[object Date]";
const realmSafeArg = (v: unknown): unknown =>
  isDate(v) ? v.toISOString() : Array.isArray(v) ? v.map(realmSafeArg) : v;

type Queryable = {
  queryRaw(q: { args: unknown[] }): Promise<unknown>;
  executeRaw(q: { args: unknown[] }): Promise<unknown>;
};

/**
 * The PGlite adapter recognises dates with `instanceof Date`, which fails for a Date made in
 * another realm (jest's sandbox). Dates are handed over as ISO strings, which the adapter parses
 * itself for datetime parameters; identical results in either realm.
 */
function crossRealmSafe<F extends object>(factory: F): F {
  const wrapQueryable = <T extends object>(target: T): T =>
    new Proxy(target, {
      get(obj, prop, receiver) {
        const value: unknown = Reflect.get(obj, prop, receiver);
        if (typeof value !== "function") return value;
        if (prop === "queryRaw" || prop === "executeRaw") {
          return (q: Parameters<Queryable["queryRaw"]>[0]) =>
            (value as Queryable["queryRaw"]).call(obj, { ...q, args: q.args.map(realmSafeArg) });
        }
        if (prop === "startTransaction" || prop === "connect") {
          return async (...args: unknown[]) =>
            wrapQueryable(await (value as (...a: unknown[]) => Promise<object>).apply(obj, args));
        }
        return (value as (...a: unknown[]) => unknown).bind(obj);
      },
    });
  return wrapQueryable(factory);
}

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  if ("databaseUrl" in options)
    return openPostgres(options.databaseUrl, options.statementCache ?? DEFAULT_STATEMENT_CACHE);
  const ownsInstance = !("pglite" in options);
  const pglite = "pglite" in options ? options.pglite : await createPGlite(options.pgliteDir);
  const prisma = new PrismaClient({ adapter: crossRealmSafe(new (loadPrismaPGlite())(pglite)) });
  return {
    kind: "pglite",
    prisma,
    reads: prisma,
    async migrationConnection() {
      return {
        query: async <T>(sql: string, params: unknown[] = []) => (await pglite.query<T>(sql, params)).rows,
        exec: async (script: string) => {
          await pglite.exec(script);
        },
        transaction: async <T>(fn: (tx: MigrationConnection) => Promise<T>) =>
          pglite.transaction(async (tx) =>
            fn({
              query: async <R>(sql: string, params: unknown[] = []) => (await tx.query<R>(sql, params)).rows,
              exec: async (script: string) => {
                await tx.exec(script);
              },
              transaction: () => Promise.reject(new Error("nested transactions are not supported")),
              lock: async () => undefined,
              release: async () => undefined,
            }),
          ),
        // PGlite is a single in-process connection: nothing else can migrate concurrently.
        lock: async () => undefined,
        release: async () => undefined,
      } satisfies MigrationConnection;
    },
    async close() {
      await prisma.$disconnect();
      if (ownsInstance && !pglite.closed) await pglite.close();
    },
  };
}

/**
 * Prepared statements still get a plan made for their parameters on every execution
 * (plan_cache_mode=force_custom_plan), as unnamed ones do: a generic plan, which Postgres may pick
 * after five executions, ranked a two-word AND search over every match 30% slower (410 instead of
 * 315 ms at 1M assets). What the cache saves is the parse and analysis. Startup `options` of the
 * URL are kept.
 */
function withCustomPlans(databaseUrl: string): { connectionString: string; options: string } {
  // node-postgres lets the URL's own `options` win over the config's: it is moved into the config.
  const custom = "-c plan_cache_mode=force_custom_plan";
  const url = new URL(databaseUrl);
  const given = url.searchParams.get("options");
  if (given === null) return { connectionString: databaseUrl, options: custom };
  url.searchParams.delete("options");
  return { connectionString: url.toString(), options: `${given} ${custom}` };
}

function openPostgres(databaseUrl: string, statementCache: number): Database {
  // connectionTimeoutMillis: an exhausted pool or a black-holed server fails (-> 503) instead of
  // holding the request forever.
  const pool = new pg.Pool({
    max: 10,
    connectionTimeoutMillis: 5000,
    ...(statementCache > 0 ? withCustomPlans(databaseUrl) : { connectionString: databaseUrl }),
  });
  // An idle client losing its server connection must not crash the process; the next query fails
  // and is answered with a 503.
  pool.on("error", () => undefined);
  // A checked-out client between two statements of an interactive transaction has no query to
  // fail, so a terminated connection surfaces as an 'error' event on the client itself: without
  // a listener it would crash the process. The transaction's next statement fails instead (503).
  pool.on("connect", (client) => {
    client.on("error", () => undefined);
  });
  const prisma = new PrismaClient({
    adapter: new PrismaPg(pool, statementCache > 0 ? { statementNameGenerator: statementNames(statementCache) } : {}),
  });
  return {
    kind: "postgres",
    prisma,
    // Named apart from Prisma's statements ("read_N"): a name is bound to one text per connection.
    reads: directReads(pool, statementCache > 0 ? statementNames(statementCache, "read") : () => undefined),
    async migrationConnection() {
      const client = new pg.Client({ connectionString: databaseUrl });
      client.on("error", () => undefined);
      await client.connect();
      const conn: MigrationConnection = {
        query: async <T>(sql: string, params: unknown[] = []) => (await client.query(sql, params)).rows as T[],
        // Simple-protocol query: a multi-statement script runs as one unit on this connection.
        exec: async (script: string) => {
          await client.query(script);
        },
        transaction: async <T>(fn: (tx: MigrationConnection) => Promise<T>) => {
          await client.query("BEGIN");
          try {
            const result = await fn(conn);
            await client.query("COMMIT");
            return result;
          } catch (err) {
            await client.query("ROLLBACK").catch(() => undefined);
            throw err;
          }
        },
        // Session advisory lock: two instances starting together apply each migration once.
        lock: async () => {
          await client.query("SELECT pg_advisory_lock(72707369)");
        },
        release: async () => {
          await client.query("SELECT pg_advisory_unlock(72707369)").catch(() => undefined);
          await client.end().catch(() => undefined);
        },
      };
      return conn;
    },
    async close() {
      await prisma.$disconnect();
      await pool.end().catch(() => undefined);
    },
  };
}
