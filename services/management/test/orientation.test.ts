import fs from "node:fs";
import path from "node:path";
import sharp from "sharp";
import { assetSchema } from "@media-platform/contracts";
import { backfillMetadata } from "../src/assets/backfill";
import { createTestApp, upload, type TestApp } from "./helpers";

/** sharp's own orientation fixtures (see the corpus README): a 600x450 landscape and a 450x600 portrait. */
const CORPUS = path.resolve(__dirname, "../../..", "../shared/fixtures/corpus/sharp");
if (!fs.existsSync(CORPUS)) throw new Error(`corpus missing: ${CORPUS} (the shared fixtures must sit beside the repo)`);
const corpus = (name: string) => fs.readFileSync(path.join(CORPUS, name));

const ORIENTATIONS = [1, 2, 3, 4, 5, 6, 7, 8];
const FILES = ORIENTATIONS.flatMap((o) => [
  { name: `Landscape_${o}.jpg`, orientation: o, displayed: { width: 600, height: 450 } },
  { name: `Portrait_${o}.jpg`, orientation: o, displayed: { width: 450, height: 600 } },
]);
const WS = "ws-orient";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

describe("width and height are as displayed (after the EXIF orientation)", () => {
  it.each(FILES)("$name (orientation $orientation) is $displayed.width x $displayed.height", async (file) => {
    const bytes = corpus(file.name);
    const meta = await sharp(bytes).metadata();
    expect(meta.orientation ?? 1).toBe(file.orientation);
    // The fixture itself: sharp's auto-oriented size is the displayed one.
    expect(meta.autoOrient).toEqual(file.displayed);

    const res = await upload(t.as(WS), bytes, file.name);
    expect(res.status).toBe(201);
    expect(assetSchema.parse(res.body)).toMatchObject(file.displayed);
    const got = await t.as(WS).get(`/v1/assets/${res.body.id as string}`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject(file.displayed);
  });

  it("Portrait_6.jpg, a phone photo held upright (stored 600x450), reports 450x600", async () => {
    const res = await upload(t.as(WS), corpus("Portrait_6.jpg"), "Portrait_6.jpg");
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ width: 450, height: 600 });
  });

  it("backfill:metadata corrects a row stored with the un-oriented size, and a second run changes nothing", async () => {
    const portrait = await upload(t.as(WS), corpus("Portrait_6.jpg"), "Portrait_6.jpg");
    const landscape = await upload(t.as(WS), corpus("Landscape_8.jpg"), "Landscape_8.jpg");
    const upright = await upload(t.as(WS), corpus("Portrait_1.jpg"), "Portrait_1.jpg");
    const ids = [portrait, landscape, upright].map((r) => r.body.id as string);
    // Rows as an older upload stored them: the size before the orientation.
    await t.db.prisma.asset.update({ where: { id: ids[0] }, data: { width: 600, height: 450 } });
    await t.db.prisma.asset.update({ where: { id: ids[1] }, data: { width: 450, height: 600 } });

    const options = { batchSize: 2, limitInputPixels: 100_000_000, keepGps: false };
    const summary = await backfillMetadata(t.db.prisma, t.blobStore, options);
    expect(summary).toMatchObject({ reoriented: 2, failed: 0 });
    const rows = await t.db.prisma.asset.findMany({
      where: { id: { in: ids } },
      select: { id: true, width: true, height: true },
    });
    const size = (id: string) => rows.find((r) => r.id === id);
    expect(size(ids[0]!)).toMatchObject({ width: 450, height: 600 });
    expect(size(ids[1]!)).toMatchObject({ width: 600, height: 450 });
    expect(size(ids[2]!)).toMatchObject({ width: 450, height: 600 });
    expect((await t.as(WS).get(`/v1/assets/${ids[0]!}`)).body).toMatchObject({ width: 450, height: 600 });

    expect(await backfillMetadata(t.db.prisma, t.blobStore, options)).toMatchObject({
      filled: 0,
      reoriented: 0,
      failed: 0,
    });
  });
});
