/**
 * The service's search and list SQL run straight on a database connection, without HTTP, Express,
 * Prisma's engine or the serializer: the raw SQL reference of the management bench, and what the
 * bare reference server (bare-search-server.ts) answers with.
 */
import pg from "pg";
import { LIST_EXACT_COUNT_LIMIT } from "@media-platform/contracts";
import { Prisma, type PrismaClient } from "@media-platform/management/database";
import {
  ASSET_COLUMNS,
  countFacets,
  fullTextSearch,
  liveAssetsByIds,
  LIST_ESTIMATE_TTL_MS,
  parseQuery,
  queryTsquery,
  rankFullText,
} from "@media-platform/management/assets";
import { WORKSPACE } from "./search-corpus";

/** The page size of every measured request. */
export const LIMIT = 25;

export interface Tx {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
}

export interface RawDb extends Tx {
  kind: "postgres" | "pglite";
  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** A page as the raw SQL finds it: the ids in order and the rows the service would serialize. */
export interface RawPage {
  ids: string[];
  rows: unknown[];
  facets?: unknown;
}

/** A pool of 10 connections (the service's pool size) on `databaseUrl`. */
export function openPool(databaseUrl: string): RawDb {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
  pool.on("error", () => undefined);
  return {
    kind: "postgres",
    query: async <T>(sql: string, params: unknown[] = []) => (await pool.query(sql, params)).rows as T[],
    async transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        const result = await fn({
          query: async <R>(sql: string, params: unknown[] = []) => (await client.query(sql, params)).rows as R[],
        });
        await client.query("COMMIT");
        return result;
      } catch (err) {
        await client.query("ROLLBACK").catch(() => undefined);
        throw err;
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
}

/**
 * A PrismaClient stand-in over the raw connection: search.ts' own functions run their own SQL
 * (Prisma.sql's text and values) straight on pg / PGlite, so the reference is exactly the service's
 * SQL without HTTP, Prisma's engine or JSON. `seen` collects every statement, for EXPLAIN.
 */
export function rawPrisma(raw: Tx & { transaction?: RawDb["transaction"] }, seen?: Prisma.Sql[]): PrismaClient {
  const run = <T>(strings: TemplateStringsArray, ...values: unknown[]): Promise<T[]> => {
    const sql = Prisma.sql(strings, ...values);
    seen?.push(sql);
    return raw.query<T>(sql.text, sql.values);
  };
  const client = {
    $queryRaw: run,
    $transaction: <T>(fn: (tx: PrismaClient) => Promise<T>) =>
      raw.transaction ? raw.transaction((tx) => fn(rawPrisma(tx, seen))) : fn(client as unknown as PrismaClient),
  };
  return client as unknown as PrismaClient;
}

/** searchAssetsFullText as plain SQL: search.ts' queries, then the row fetch of the page. */
export async function rawFullText(raw: RawDb, q: string, seen?: Prisma.Sql[]): Promise<RawPage> {
  const hits = await fullTextSearch(rawPrisma(raw, seen), WORKSPACE, q, LIMIT);
  if (hits.length === 0) return { ids: [], rows: [] };
  const rows = await liveAssetsByIds(
    rawPrisma(raw, seen),
    WORKSPACE,
    hits.map((h) => h.id),
  );
  if (rows.length !== hits.length) throw new Error("row fetch lost hits");
  return { ids: hits.map((h) => h.id), rows: inRankOrder(hits, rows) };
}

/** The page's rows in ranking order, as the service serializes them (the row fetch has no order). */
function inRankOrder(hits: Array<{ id: string }>, rows: Array<{ id: string }>): unknown[] {
  const byId = new Map(rows.map((r) => [r.id, r]));
  return hits.map((h) => byId.get(h.id));
}

/** The facets the bench asks for. */
export const FACETS = ["tags", "collectionId", "format"] as const;

/** rawFullText with facets=tags,collectionId,format: the service's statements for that request. */
export async function rawFullTextFacets(raw: RawDb, q: string, seen?: Prisma.Sql[]): Promise<RawPage> {
  const prisma = rawPrisma(raw, seen);
  const { hits, tsquery } = await rankFullText(prisma, WORKSPACE, q, LIMIT);
  const matches = Prisma.sql`workspace_id = ${WORKSPACE} AND deleted_at IS NULL AND search_vector @@ ${tsquery}`;
  const facets = await countFacets(prisma, FACETS, matches, async () => {
    // Not through `prisma`: the plans of `seen` are EXPLAINed, and an EXPLAIN cannot be.
    const estimate = Prisma.sql`EXPLAIN (FORMAT JSON) SELECT 1 FROM assets WHERE ${matches}`;
    const rows = await raw.query<{ "QUERY PLAN": unknown }>(estimate.text, estimate.values);
    const plan = rows[0]?.["QUERY PLAN"];
    return (((typeof plan === "string" ? JSON.parse(plan) : plan) as Array<{ Plan?: { "Plan Rows"?: number } }>)[0]
      ?.Plan?.["Plan Rows"] ?? 0) as number;
  });
  if (hits.length === 0) return { ids: [], rows: [], facets };
  const rows = await liveAssetsByIds(
    prisma,
    WORKSPACE,
    hits.map((h) => h.id),
  );
  return { ids: hits.map((h) => h.id), rows: inRankOrder(hits, rows), facets };
}

/** The tsquery search.ts builds for a query (for the recall measurement). */
export const tsqueryOf = (q: string): Prisma.Sql => queryTsquery(parseQuery(q));

export interface ListArgs {
  search?: string;
  after?: { createdAt: Date | string; id: string };
}

/** rawList's planner estimates, reused as listAssets reuses its own (LIST_ESTIMATE_TTL_MS). */
const rawEstimates = new Map<string, { rows: number; expires: number }>();

/**
 * listAssets (sort -createdAt) as plain SQL: the page of limit + 1 with the count capped at
 * LIST_EXACT_COUNT_LIMIT + 1 in the same statement, then, only above the cap, the planner's
 * estimate, reused for LIST_ESTIMATE_TTL_MS as the service does.
 */
export async function rawList(raw: RawDb, args: ListArgs): Promise<RawPage & { count: number; estimate: boolean }> {
  const where = ["workspace_id = $1", "deleted_at IS NULL"];
  const params: unknown[] = [WORKSPACE];
  if (args.search !== undefined) {
    params.push(`%${args.search.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
    where.push(`search_text LIKE $${params.length}`);
  }
  const estimateSql = `EXPLAIN (FORMAT JSON) SELECT 1 FROM assets WHERE ${where.join(" AND ")}`;
  const estimateParams = [...params];
  params.push(LIST_EXACT_COUNT_LIMIT + 1);
  const countSql = `SELECT count(*)::int FROM (SELECT 1 FROM assets WHERE ${where.join(" AND ")} LIMIT $${params.length}) AS sub`;
  const page = [...where];
  if (args.after) {
    params.push(args.after.createdAt, args.after.id);
    const c = `$${params.length - 1}::timestamptz`;
    const i = `$${params.length}::uuid`;
    page.push(`(created_at < ${c} OR (created_at = ${c} AND id < ${i}))`);
  }
  params.push(LIMIT + 1);
  const rows = await raw.query<{ id: string; listCapped: number }>(
    `SELECT ${ASSET_COLUMNS}, (${countSql}) AS "listCapped" FROM assets WHERE ${page.join(" AND ")} ORDER BY created_at DESC, id DESC LIMIT $${params.length}`,
    params,
  );
  let count = rows[0]!.listCapped;
  const estimate = count > LIST_EXACT_COUNT_LIMIT;
  if (estimate) {
    const key = JSON.stringify([estimateSql, estimateParams]);
    let cached = rawEstimates.get(key);
    if (!cached || cached.expires <= Date.now()) {
      const [plan] = await raw.query<{ "QUERY PLAN": unknown }>(estimateSql, estimateParams);
      const json = plan!["QUERY PLAN"];
      const parsed = (typeof json === "string" ? JSON.parse(json) : json) as Array<{ Plan: { "Plan Rows": number } }>;
      cached = { rows: Math.round(parsed[0]!.Plan["Plan Rows"]), expires: Date.now() + LIST_ESTIMATE_TTL_MS };
      rawEstimates.set(key, cached);
    }
    count = Math.max(LIST_EXACT_COUNT_LIMIT + 1, cached.rows);
  }
  const pageRows = rows.slice(0, LIMIT);
  return { ids: pageRows.map((r) => r.id), rows: pageRows, count, estimate };
}
