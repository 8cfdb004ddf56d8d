import { openDatabase, statementNames, type Database } from "../src/db/client";
import { createTestDatabase } from "./helpers";

describe("statementNames (DATABASE_STATEMENT_CACHE)", () => {
  it("names each distinct SQL text once, up to the capacity; later texts stay unnamed", () => {
    const name = statementNames(2);
    const a = name({ sql: "SELECT 1" });
    const b = name({ sql: "SELECT 2" });
    expect(a).toMatch(/^prisma_\d+$/);
    expect(b).toMatch(/^prisma_\d+$/);
    expect(b).not.toBe(a);
    expect(name({ sql: "SELECT 3" })).toBeUndefined();
    expect(name({ sql: "SELECT 1" })).toBe(a);
    expect(name({ sql: "SELECT 2" })).toBe(b);
    expect(statementNames(0)({ sql: "SELECT 1" })).toBeUndefined();
  });
});

const postgres = process.env.DATABASE_URL ? describe : describe.skip;

postgres("prepared statements on Postgres", () => {
  let test: Awaited<ReturnType<typeof createTestDatabase>>;
  const opened: Database[] = [];
  beforeAll(async () => {
    test = await createTestDatabase();
  });
  afterAll(async () => {
    for (const db of opened) await db.close();
    await test.drop();
  });

  // The statements prepared on the connection that runs this query (sequential queries reuse the
  // pool's most recently released connection).
  const preparedOn = async (db: Database, marker: string) => {
    for (let i = 0; i < 3; i++) await db.prisma.$queryRaw`SELECT ${marker}::text AS marker`;
    const rows = await db.prisma.$queryRaw<Array<{ statement: string }>>`
      SELECT statement FROM pg_prepared_statements`;
    return rows.map((r) => r.statement).filter((s) => s.includes("AS marker"));
  };

  it("Prisma's statements are prepared once per connection by default, not with a cache of 0", async () => {
    const cached = await openDatabase({ databaseUrl: test.url! });
    const uncached = await openDatabase({ databaseUrl: test.url!, statementCache: 0 });
    opened.push(cached, uncached);
    expect(await preparedOn(cached, "a")).toEqual([expect.stringContaining("SELECT $1::text AS marker")]);
    expect(await preparedOn(uncached, "b")).toEqual([]);
    // Planned for their parameters on every execution, never a generic plan.
    const mode = (db: Database) => db.prisma.$queryRaw<Array<{ plan_cache_mode: string }>>`SHOW plan_cache_mode`;
    expect(await mode(cached)).toEqual([{ plan_cache_mode: "force_custom_plan" }]);
    expect(await mode(uncached)).toEqual([{ plan_cache_mode: "auto" }]);
    // Startup options given in the URL are kept beside it.
    const url = new URL(test.url!);
    url.searchParams.set("options", "-c statement_timeout=4321");
    const withOptions = await openDatabase({ databaseUrl: url.toString() });
    opened.push(withOptions);
    expect(await mode(withOptions)).toEqual([{ plan_cache_mode: "force_custom_plan" }]);
    expect(await withOptions.prisma.$queryRaw`SHOW statement_timeout`).toEqual([{ statement_timeout: "4321ms" }]);
    // A prepared statement answers like an unnamed one, parameters included.
    const rows = await cached.prisma.$queryRaw<Array<{ marker: string }>>`SELECT ${"c"}::text AS marker`;
    expect(rows).toEqual([{ marker: "c" }]);
  });

  it("the read statements (Database.reads) are prepared once per connection too, under their own names", async () => {
    const cached = await openDatabase({ databaseUrl: test.url! });
    const uncached = await openDatabase({ databaseUrl: test.url!, statementCache: 0 });
    opened.push(cached, uncached);
    const readsPrepared = async (db: Database, marker: string) => {
      for (let i = 0; i < 3; i++) await db.reads.$queryRaw`SELECT ${marker}::text AS read_marker`;
      // pool.query reuses the most recently released connection: this runs on the same one.
      const rows = await db.reads.$queryRaw<Array<{ name: string; statement: string }>>`
        SELECT name, statement FROM pg_prepared_statements`;
      return rows.filter((r) => r.statement.includes("AS read_marker"));
    };
    expect(await readsPrepared(cached, "a")).toEqual([
      {
        name: expect.stringMatching(/^read_\d+$/),
        statement: expect.stringContaining("SELECT $1::text AS read_marker"),
      },
    ]);
    expect(await readsPrepared(uncached, "b")).toEqual([]);
    // Prisma's own statements on the same connections keep their names: no name is bound twice.
    expect(await preparedOn(cached, "c")).toEqual([expect.stringContaining("SELECT $1::text AS marker")]);
    expect(await cached.reads.$queryRaw`SHOW plan_cache_mode`).toEqual([{ plan_cache_mode: "force_custom_plan" }]);
  });
});
