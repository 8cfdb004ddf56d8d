import pg from "pg";
import { Prisma } from "../generated/prisma/client";

/**
 * The one call the list and search read paths make: Prisma's `$queryRaw`, with a tagged template
 * or a Prisma.Sql. A PrismaClient is one; `directReads` is another, on the same pool.
 */
export interface RawReads {
  $queryRaw<T = unknown>(query: TemplateStringsArray | Prisma.Sql, ...values: unknown[]): Promise<T>;
}

const INT8 = 20;
const INT8_ARRAY = 1016;
const NUMERIC = 1700;
const TEXT_ARRAY = 1009;
/** node-postgres' parser lookup, for any type oid (its typings list the built-in scalar types only). */
const parserOf = pg.types.getTypeParser as (oid: number, format?: "text" | "binary") => (value: string) => unknown;
const parseTextArray = parserOf(TEXT_ARRAY) as (value: string) => Array<string | null>;

/**
 * node-postgres' parsers, but for int8 and numeric, which Prisma's `$queryRaw` returns as a BigInt and
 * a Prisma.Decimal (node-postgres: strings). Every other type the read statements return (int2/int4,
 * float4/float8, text and its arrays, uuid, timestamptz, bool, json) parses to the same value either
 * way (test/direct-reads.test.ts).
 */
const prismaTypes = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    if (oid === INT8) return (value: string) => BigInt(value);
    if (oid === NUMERIC) return (value: string) => new Prisma.Decimal(value);
    if (oid === INT8_ARRAY) {
      return (value: string) => parseTextArray(value).map((v) => (v === null ? null : BigInt(v)));
    }
    return parserOf(oid, format);
  },
};

/**
 * `$queryRaw` straight on node-postgres: the same SQL and parameters as Prisma sends, on Prisma's
 * own pool, prepared once per connection under names of their own (`names`), without the client's
 * and the driver adapter's handling of every result: 0.1-0.5 ms less CPU per request for a page of
 * 25 assets at 1M (docs/performance.md). The list and full-text search read through it on Postgres;
 * writes and transactions stay on Prisma. Errors are node-postgres' own, which isDatabaseUnavailable
 * knows.
 */
export function directReads(pool: pg.Pool, names: (query: { sql: string }) => string | undefined): RawReads {
  return {
    async $queryRaw<T>(query: TemplateStringsArray | Prisma.Sql, ...values: unknown[]): Promise<T> {
      const sql = query instanceof Prisma.Sql ? query : Prisma.sql(query, ...values);
      const result = await pool.query({
        name: names({ sql: sql.text }),
        text: sql.text,
        values: sql.values,
        types: prismaTypes,
      });
      return result.rows as T;
    },
  };
}
