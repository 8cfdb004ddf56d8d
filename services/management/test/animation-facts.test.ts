import fs from "node:fs";
import path from "node:path";
import sharp from "sharp";
import { assetSchema } from "@media-platform/contracts";
import { backfillMetadata } from "../src/assets/backfill";
import { createTestApp, upload, type TestApp } from "./helpers";

const CORPUS = path.resolve(__dirname, "../../..", "../shared/fixtures/corpus/sharp");
if (!fs.existsSync(CORPUS)) throw new Error(`corpus missing: ${CORPUS} (the shared fixtures must sit beside the repo)`);
const corpus = (name: string) => fs.readFileSync(path.join(CORPUS, name));

/** Frame counts and summed frame delays as sharp (libvips) reads them from the corpus files. */
const ANIMATIONS = [
  { name: "animated-loop-3.gif", frames: 10, durationMs: 42_000, width: 370, height: 285 },
  { name: "animated-loop-3.webp", frames: 10, durationMs: 42_000, width: 370, height: 285 },
  { name: "rotating-squares.gif", frames: 30, durationMs: 900, width: 80, height: 80 },
  { name: "rotating-squares.webp", frames: 9, durationMs: 900, width: 80, height: 80 },
];
const WS = "ws-anim";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

describe("animation facts recorded at upload", () => {
  it.each(ANIMATIONS)("$name: $frames frames, $durationMs ms", async (file) => {
    const bytes = corpus(file.name);
    const meta = await sharp(bytes).metadata();
    // The expectations are sharp's own reading of the file.
    expect(meta.pages).toBe(file.frames);
    expect(meta.delay!.reduce((a, b) => a + b, 0)).toBe(file.durationMs);

    const res = await upload(t.as(WS), bytes, file.name);
    expect(res.status).toBe(201);
    const expected = {
      animated: true,
      pages: file.frames,
      durationMs: file.durationMs,
      width: file.width,
      height: file.height,
    };
    expect(assetSchema.parse(res.body)).toMatchObject(expected);
    expect((await t.as(WS).get(`/v1/assets/${res.body.id as string}`)).body).toMatchObject(expected);
  });

  it("a still image has one page and no duration", async () => {
    const res = await upload(t.as(WS), corpus("Landscape_1.jpg"), "still.jpg");
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ animated: false, pages: 1, durationMs: null });
  });

  it("backfill:metadata fills the duration of an animated row that has none, once", async () => {
    const res = await upload(t.as(WS), corpus("rotating-squares.gif"), "squares.gif");
    const id = res.body.id as string;
    await t.db.prisma.asset.update({ where: { id }, data: { durationMs: null } });
    const options = { batchSize: 10, limitInputPixels: 100_000_000, keepGps: false };
    const summary = await backfillMetadata(t.db.prisma, t.blobStore, options);
    expect(summary).toMatchObject({ filled: 1, failed: 0 });
    expect(await t.db.prisma.asset.findUniqueOrThrow({ where: { id } })).toMatchObject({
      animated: true,
      pages: 30,
      durationMs: 900,
    });
    expect(await backfillMetadata(t.db.prisma, t.blobStore, options)).toMatchObject({ filled: 0, failed: 0 });
  });
});
