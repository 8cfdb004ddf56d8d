import { createHash, randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { Prisma } from "../src/generated/prisma/client";
import { DEFAULT_MIGRATIONS_DIR, MigrationError, migrate, readMigrations } from "../src/db/migrate";
import { createTestDatabase } from "./helpers";

type TestDb = Awaited<ReturnType<typeof createTestDatabase>>;
let t: TestDb;

beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t.drop();
});

describe("migration runner", () => {
  it("applies every migration once and records it like prisma migrate deploy", async () => {
    const migrations = readMigrations();
    expect(migrations.length).toBeGreaterThan(0);
    const first = await migrate(await t.db.migrationConnection());
    expect(first.applied).toEqual(migrations.map((m) => m.name));
    const rows = await t.db.prisma.$queryRaw<
      Array<{
        id: string;
        checksum: string;
        migration_name: string;
        finished_at: Date | null;
        rolled_back_at: Date | null;
        logs: string | null;
        applied_steps_count: number;
        started_at: Date;
      }>
    >`SELECT * FROM "_prisma_migrations" ORDER BY migration_name`;
    expect(rows).toHaveLength(migrations.length);
    for (const [i, row] of rows.entries()) {
      const m = migrations[i]!;
      const bytes = fs.readFileSync(path.join(DEFAULT_MIGRATIONS_DIR, m.name, "migration.sql"));
      expect(row.migration_name).toBe(m.name);
      expect(row.checksum).toBe(createHash("sha256").update(bytes).digest("hex"));
      expect(row.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(row.finished_at).not.toBeNull();
      expect(row.rolled_back_at).toBeNull();
      expect(row.logs).toBeNull();
      expect(row.applied_steps_count).toBe(1);
    }
    // Same column types as Prisma's own table.
    const cols = await t.db.prisma.$queryRaw<
      Array<{ column_name: string; data_type: string; character_maximum_length: number | null; is_nullable: string }>
    >`
      SELECT column_name, data_type, character_maximum_length, is_nullable FROM information_schema.columns
       WHERE table_name = '_prisma_migrations' ORDER BY ordinal_position`;
    expect(cols.map((c) => [c.column_name, c.data_type, c.character_maximum_length, c.is_nullable])).toEqual([
      ["id", "character varying", 36, "NO"],
      ["checksum", "character varying", 64, "NO"],
      ["finished_at", "timestamp with time zone", null, "YES"],
      ["migration_name", "character varying", 255, "NO"],
      ["logs", "text", null, "YES"],
      ["rolled_back_at", "timestamp with time zone", null, "YES"],
      ["started_at", "timestamp with time zone", null, "NO"],
      ["applied_steps_count", "integer", null, "NO"],
    ]);
    const again = await migrate(await t.db.migrationConnection());
    expect(again).toEqual({ applied: [], alreadyApplied: migrations.map((m) => m.name) });
  });

  it("refuses to run when an applied migration was edited", async () => {
    const edited = readMigrations().map((m, i) =>
      i === 0 ? { ...m, checksum: createHash("sha256").update(`${m.sql}\n-- edit`).digest("hex") } : m,
    );
    await expect(migrate(await t.db.migrationConnection(), edited)).rejects.toThrow(/checksum mismatch/);
  });

  it("refuses a database with an unknown or failed migration", async () => {
    const migrations = readMigrations();
    await expect(migrate(await t.db.migrationConnection(), migrations.slice(0, 0))).rejects.toThrow(
      /missing from this checkout/,
    );
    const id = randomUUID();
    await t.db.prisma
      .$executeRaw`INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, applied_steps_count) VALUES (${id}, 'x', '29990101000000_broken', now(), 0)`;
    await expect(migrate(await t.db.migrationConnection(), migrations)).rejects.toThrow(MigrationError);
    await t.db.prisma.$executeRaw`DELETE FROM "_prisma_migrations" WHERE id = ${id}`;
  });

  it("a failing migration is rolled back completely and not recorded", async () => {
    const migrations = readMigrations();
    const bad = {
      name: "29990101000000_bad",
      sql: "CREATE TABLE half_done (id int); SELECT no_such_function();",
      checksum: "0".repeat(64),
    };
    await expect(migrate(await t.db.migrationConnection(), [...migrations, bad])).rejects.toThrow(
      /29990101000000_bad failed/,
    );
    const tables = await t.db.prisma.$queryRaw<
      unknown[]
    >`SELECT 1 FROM information_schema.tables WHERE table_name = 'half_done'`;
    expect(tables).toHaveLength(0);
    const recorded = await t.db.prisma.$queryRaw<
      unknown[]
    >`SELECT 1 FROM "_prisma_migrations" WHERE migration_name = ${bad.name}`;
    expect(recorded).toHaveLength(0);
  });

  it("the migrated schema round-trips every model and field through the Prisma client", async () => {
    const p = t.db.prisma;
    const collection = await p.collection.create({
      data: { id: randomUUID(), workspaceId: "ws-rt", name: "Round trip ✓" },
    });
    expect(collection.createdAt).toBeInstanceOf(Date);
    const data = {
      id: randomUUID(),
      workspaceId: "ws-rt",
      collectionId: collection.id,
      userTitle: "Title 'quoted' \"double\"",
      userTags: ["a", "b c", "ünï"],
      userCaption: "Caption",
      userDescription: "Description\nmultiline",
      originalFilename: "file name.png",
      mimeType: "image/png",
      format: "png",
      width: 2147483647,
      height: 1,
      bytes: 9007199254740993n,
      sha256: "a".repeat(64),
      phash: -9223372036854775808n,
      createdBy: "user-1",
    };
    const created = await p.asset.create({ data });
    const read = await p.asset.findUniqueOrThrow({ where: { id: data.id }, include: { collection: true } });
    expect(read).toMatchObject({
      ...data,
      collection: { id: collection.id, name: "Round trip ✓", workspaceId: "ws-rt" },
    });
    expect(read.createdAt.getTime()).toBe(created.createdAt.getTime());
    expect(read.updatedAt).toBeInstanceOf(Date);
    expect(read.searchText).toContain("title 'quoted'");
    await p.asset.update({
      where: { id: data.id },
      data: { phash: 9223372036854775807n, userTags: { set: [] }, userTitle: null },
    });
    expect(await p.asset.findUniqueOrThrow({ where: { id: data.id } })).toMatchObject({
      phash: 9223372036854775807n,
      userTags: [],
      userTitle: null,
    });
    // The spelling dictionary, filled by the search_words triggers (append-only: "title" stays).
    const words = await p.searchWord.findMany({ where: { workspaceId: "ws-rt" }, orderBy: { word: "asc" } });
    expect(words.map((w) => w.word)).toEqual(
      expect.arrayContaining(["title", "quoted", "double", "caption", "multiline", "file", "name", "png", "ünï"]),
    );
    const word = { workspaceId: "ws-rt", word: "round-trip ✓" };
    await p.searchWord.create({ data: word });
    expect(await p.searchWord.findUniqueOrThrow({ where: { workspaceId_word: word } })).toEqual(word);
    await p.searchWord.delete({ where: { workspaceId_word: word } });
    // Unique (workspace, name) and ON DELETE SET NULL from the schema.
    await expect(
      p.collection.create({ data: { id: randomUUID(), workspaceId: "ws-rt", name: "Round trip ✓" } }),
    ).rejects.toMatchObject({ code: "P2002" });
    await p.collection.delete({ where: { id: collection.id } });
    expect((await p.asset.findUniqueOrThrow({ where: { id: data.id } })).collectionId).toBeNull();
    await expect(
      p.asset.create({ data: { ...data, id: randomUUID(), collectionId: randomUUID() } }),
    ).rejects.toBeInstanceOf(Prisma.PrismaClientKnownRequestError);
  });

  it("every column Prisma's schema declares exists with the mapped name", async () => {
    const cols = await t.db.prisma.$queryRaw<Array<{ table_name: string; column_name: string }>>`
      SELECT table_name, column_name FROM information_schema.columns WHERE table_name IN ('assets', 'collections', 'search_words')`;
    const have = new Set(cols.map((c) => `${c.table_name}.${c.column_name}`));
    // The schema maps camelCase fields to snake_case columns.
    const snake = (s: string) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    const models: Array<[string, Record<string, string>]> = [
      ["assets", Prisma.AssetScalarFieldEnum],
      ["collections", Prisma.CollectionScalarFieldEnum],
      ["search_words", Prisma.SearchWordScalarFieldEnum],
    ];
    for (const [table, fields] of models) {
      for (const field of Object.values(fields)) expect(have).toContain(`${table}.${snake(field)}`);
    }
  });
});
