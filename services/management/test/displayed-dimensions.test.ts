import { randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { backfillMetadata } from "../src/assets/backfill";
import { migrate, readMigrations } from "../src/db/migrate";
import { Prisma } from "../src/generated/prisma/client";
import { createTestApp, createTestDatabase, upload, type TestApp } from "./helpers";

/**
 * An asset's width and height are as displayed, after the EXIF orientation: sharp's own photos,
 * one per orientation (`Landscape_<n>.jpg`, `Portrait_<n>.jpg`, in the corpus beside the repo),
 * where 5-8 are stored turned a quarter.
 */
const CORPUS = path.resolve(__dirname, "..", "..", "..", "..", "shared", "fixtures", "corpus", "sharp");

let t: TestApp;
beforeAll(async () => {
  if (!fs.existsSync(CORPUS)) throw new Error(`the corpus is missing: ${CORPUS}`);
  t = await createTestApp();
});
afterAll(() => t.close());

describe("dimensions as displayed", () => {
  it.each(["Landscape", "Portrait"] as const)(
    "%s_1..8 report the displayed size at upload and on GET",
    async (kind) => {
      const ws = `ws-orient-${randomUUID()}`;
      const [width, height] = kind === "Landscape" ? [600, 450] : [450, 600];
      for (let o = 1; o <= 8; o++) {
        const file = `${kind}_${o}.jpg`;
        const res = await upload(t.as(ws), fs.readFileSync(path.join(CORPUS, file)), file);
        expect([file, res.status, res.body.width, res.body.height]).toEqual([file, 201, width, height]);
        const got = await t.as(ws).get(`/v1/assets/${res.body.id}`);
        expect([file, got.body.width, got.body.height, got.body.exif?.orientation ?? 1]).toEqual([
          file,
          width,
          height,
          o,
        ]);
      }
    },
  );
});

describe("the asset_displayed_dimensions migration", () => {
  it("swaps the stored size of rows written before it, for orientations 5-8 only", async () => {
    const database = await createTestDatabase();
    try {
      const all = readMigrations();
      const index = all.findIndex((m) => m.name.endsWith("_asset_displayed_dimensions"));
      expect(index).toBeGreaterThan(0);
      await migrate(await database.db.migrationConnection(), all.slice(0, index));
      const rows = [
        { id: randomUUID(), orientation: 6, stored: [600, 450] },
        { id: randomUUID(), orientation: 8, stored: [600, 450] },
        { id: randomUUID(), orientation: 3, stored: [600, 450] },
        { id: randomUUID(), orientation: null, stored: [640, 480] },
      ];
      for (const row of rows) {
        await database.db.prisma.asset.create({
          data: {
            id: row.id,
            workspaceId: "ws-migrate",
            originalFilename: "photo.jpg",
            mimeType: "image/jpeg",
            format: "jpeg",
            width: row.stored[0]!,
            height: row.stored[1]!,
            bytes: 1000,
            sha256: "0".repeat(64),
            phash: 0n,
            exif: row.orientation === null ? undefined : { orientation: row.orientation },
          },
        });
      }
      await migrate(await database.db.migrationConnection(), all);
      const after = await database.db.prisma.asset.findMany({ where: { workspaceId: "ws-migrate" } });
      const size = (id: string) => {
        const a = after.find((r) => r.id === id)!;
        return [a.width, a.height];
      };
      expect(rows.map((r) => size(r.id))).toEqual([
        [450, 600],
        [450, 600],
        [600, 450],
        [640, 480],
      ]);
    } finally {
      await database.drop();
    }
  });
});

describe("pnpm backfill:metadata", () => {
  it("turns the stored size of rows it fills to the displayed one", async () => {
    const ws = `ws-backfill-${randomUUID()}`;
    const ids: string[] = [];
    for (const file of ["Portrait_6.jpg", "Portrait_1.jpg"]) {
      const res = await upload(t.as(ws), fs.readFileSync(path.join(CORPUS, file)), file);
      expect(res.status).toBe(201);
      ids.push(res.body.id as string);
    }
    // Rows as older code wrote them: no metadata, and the stored size.
    await t.db.prisma.asset.update({
      where: { id: ids[0]! },
      data: { placeholder: null, placeholderDataUrl: null, exif: Prisma.DbNull, width: 600, height: 450 },
    });
    await t.db.prisma.asset.update({
      where: { id: ids[1]! },
      data: { placeholder: null, placeholderDataUrl: null, exif: Prisma.DbNull },
    });
    const summary = await backfillMetadata(t.db.prisma, t.blobStore, {
      batchSize: 10,
      limitInputPixels: 100_000_000,
      keepGps: false,
    });
    expect(summary.failed).toBe(0);
    for (const id of ids) {
      const got = await t.as(ws).get(`/v1/assets/${id}`);
      expect([got.body.width, got.body.height]).toEqual([450, 600]);
    }
  });
});
