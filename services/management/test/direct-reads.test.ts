import { randomUUID } from "node:crypto";
import { Prisma } from "../src/generated/prisma/client";
import { ASSET_COLUMNS } from "../src/assets/rows";
import { migrate } from "../src/db/migrate";
import { createTestDatabase } from "./helpers";

/**
 * Database.reads answers every statement exactly as Prisma's $queryRaw does: on Postgres it runs on
 * node-postgres directly (db/direct-reads.ts), on PGlite it is the Prisma client itself.
 */
describe("Database.reads", () => {
  let test: Awaited<ReturnType<typeof createTestDatabase>>;
  const ws = "ws-direct-reads";
  const ids = [randomUUID(), randomUUID()];
  beforeAll(async () => {
    test = await createTestDatabase();
    await migrate(await test.db.migrationConnection());
    const base = {
      workspaceId: ws,
      originalFilename: "IMG_0001.jpg",
      mimeType: "image/jpeg",
      format: "jpeg",
      width: 4032,
      height: 3024,
      sha256: "a".repeat(64),
    };
    await test.db.prisma.asset.create({
      data: {
        ...base,
        id: ids[0]!,
        userTitle: "Blue sky over the lake",
        userTags: ["sky", "lake", 'l\'été \\ "quoted"'],
        userCaption: "Mountain lake at dawn",
        bytes: 9_007_199_254_740_993n, // above Number.MAX_SAFE_INTEGER
        phash: -9_223_372_036_854_775_807n,
        placeholder: "1QcSHQRnh493V4dIh4eXh1h4kJUI",
        placeholderDataUrl: "data:image/png;base64,iVBORw0KGgo=",
        dominantColor: "#3a6ea5",
        hasAlpha: false,
        animated: false,
        pages: 1,
        exif: { make: "Apple", model: "iPhone 15 Pro", exposureTime: 0.008, iso: 64, takenAt: "2026-07-01T06:12:00Z" },
        focalX: 0.25,
        focalY: 0.75,
      },
    });
    await test.db.prisma.asset.create({
      data: {
        ...base,
        id: ids[1]!,
        bytes: 1n,
        phash: 0n,
        userTags: [],
        deletedAt: new Date("2026-11-01T10:00:00.123Z"),
      },
    });
  });
  afterAll(async () => {
    await test.drop();
  });

  const statements: Array<[string, Prisma.Sql]> = [
    [
      "asset rows, every column the service reads",
      Prisma.sql`SELECT ${Prisma.raw(ASSET_COLUMNS)} FROM assets WHERE workspace_id = ${ws} ORDER BY id`,
    ],
    [
      "ranking output: json_agg, float8, bool, int, timestamptz, text[]",
      Prisma.sql`
        SELECT json_agg(json_build_object('id', a.id, 'score', ts_rank_cd(a.search_vector, q)::float8, 'createdAt', a.created_at)) AS hits,
               bool_or(a.deleted_at IS NULL) AS live, count(*)::int AS n, count(*) AS n8, min(a.created_at) AS first,
               array_agg(a.id::text ORDER BY a.id) AS ids, array_agg(a.bytes ORDER BY a.id) AS sizes,
               sum(a.width)::numeric / 3 AS ratio, max(a.focal_x) AS fx, max(ts_rank_cd(a.search_vector, q)) AS r4
          FROM assets a, websearch_to_tsquery('english', ${"blue lake"}) q
         WHERE a.workspace_id = ${ws}
         GROUP BY q`,
    ],
    [
      "parameters: uuid[], text, int, timestamptz",
      Prisma.sql`
        SELECT id, created_at FROM assets
         WHERE workspace_id = ${ws} AND id = ANY(${ids}::uuid[]) AND width >= ${4000} AND created_at < ${new Date("2100-01-01T00:00:00Z")}
         ORDER BY id`,
    ],
    ["EXPLAIN (FORMAT JSON)", Prisma.sql`EXPLAIN (FORMAT JSON) SELECT 1 FROM assets WHERE workspace_id = ${ws}`],
    ["no rows", Prisma.sql`SELECT id FROM assets WHERE workspace_id = ${"nobody"}`],
  ];

  it.each(statements)("%s: the same rows and values as Prisma's $queryRaw", async (_name, sql) => {
    const viaPrisma = await test.db.prisma.$queryRaw<unknown[]>(sql);
    const viaReads = await test.db.reads.$queryRaw<unknown[]>(sql);
    expect(viaReads).toEqual(viaPrisma);
    // toEqual looks at values; the types must match too (BigInt, Decimal, Date).
    const types = (rows: unknown[]) =>
      JSON.stringify(rows, (_k, v: unknown) =>
        typeof v === "bigint" ? `bigint:${v}` : Prisma.Decimal.isDecimal(v) ? `decimal:${String(v)}` : v,
      );
    expect(types(viaReads)).toBe(types(viaPrisma));
  });

  it("the tagged-template form binds its values as parameters", async () => {
    const title = "Blue sky over the lake'; DROP TABLE assets; --";
    const rows = await test.db.reads.$queryRaw<Array<{ n: number }>>`
      SELECT count(*)::int AS n FROM assets WHERE workspace_id = ${ws} AND user_title = ${title}`;
    expect(rows).toEqual([{ n: 0 }]);
    const [row] = await test.db.reads.$queryRaw<Array<{ bytes: bigint }>>`
      SELECT bytes FROM assets WHERE id = ${ids[0]!}::uuid`;
    expect(row!.bytes).toBe(9_007_199_254_740_993n);
  });

  it("a failing statement rejects with the database's error", async () => {
    await expect(test.db.reads.$queryRaw`SELECT 1/0`).rejects.toThrow(/division by zero/);
  });
});
