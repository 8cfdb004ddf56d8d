import sharp from "sharp";
import { liveAssetsByIds } from "../src/assets/rows";
import { fullTextSearch } from "../src/assets/search";
import { MediaLinks } from "../src/assets/media-links";
import { serializeListedAsset } from "../src/assets/serializer";
import { createTestApp, fixture, PHOTOS, upload, type TestApp } from "./helpers";

const WS = "ws-rows";
const OTHER = "ws-rows-other";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

describe("liveAssetsByIds (the full-text page's row fetch)", () => {
  it("returns exactly what findMany returns: every field, same types; live rows of the workspace only", async () => {
    const ids: string[] = [];
    for (const name of ["rocket.jpg", "astronaut.png", "coffee.png"]) {
      const res = await upload(t.as(WS), fixture(name), name);
      expect(res.status).toBe(201);
      ids.push(res.body.id as string);
    }
    // A JSON column with an object in it (no fixture carries EXIF).
    const camera = await sharp({ create: { width: 64, height: 48, channels: 3, background: "#3366cc" } })
      .jpeg()
      .withExif({ IFD0: { Make: "Fujifilm", Model: "X-T5" } })
      .toBuffer();
    const withExif = (await upload(t.as(WS), camera, "camera.jpg")).body.id as string;
    ids.push(withExif);
    const [edited, trashed] = ids;
    await t
      .as(WS)
      .patch(`/v1/assets/${edited}`)
      .send({
        userTitle: "Rocket",
        userTags: ["launch", "sky"],
        userCaption: "Lift-off",
        focalPoint: { x: 0.25, y: 0.75 },
      })
      .expect(200);
    await t.as(WS).delete(`/v1/assets/${trashed}`).expect(204);
    const foreign = (await upload(t.as(OTHER), fixture("chelsea.png"), "chelsea.png")).body.id as string;

    const byId = (a: { id: string }, b: { id: string }) => a.id.localeCompare(b.id);
    const raw = (await liveAssetsByIds(t.db.prisma, WS, [...ids, foreign])).sort(byId);
    const orm = (
      await t.db.prisma.asset.findMany({ where: { workspaceId: WS, deletedAt: null, id: { in: [...ids, foreign] } } })
    ).sort(byId);
    expect(raw.map((r) => r.id)).toEqual([ids[0], ids[2], withExif].sort());
    expect(raw.find((r) => r.id === withExif)!.exif).toMatchObject({ make: "Fujifilm", model: "X-T5" });
    expect(raw).toEqual(orm);
    // The same keys and, field by field, the same runtime types (Date, bigint, null, arrays, JSON).
    for (const [i, row] of raw.entries()) {
      expect(Object.keys(row).sort()).toEqual(Object.keys(orm[i]!).sort());
      for (const [key, value] of Object.entries(orm[i]!)) {
        const kind = (v: unknown) => (v === null ? "null" : v instanceof Date ? "date" : typeof v);
        expect([key, kind((row as Record<string, unknown>)[key])]).toEqual([key, kind(value)]);
      }
    }
    const rocket = raw.find((r) => r.id === edited)!;
    expect([rocket.userTitle, rocket.userTags, rocket.focalX, rocket.focalY]).toEqual([
      "Rocket",
      ["launch", "sky"],
      0.25,
      0.75,
    ]);
    expect(typeof rocket.bytes).toBe("bigint");
    expect(await liveAssetsByIds(t.db.prisma, WS, [])).toEqual([]);
  });
});

describe("the full-text page's rows", () => {
  const FTS = "ws-rows-fts";

  it("are the live rows of the workspace's hits, served exactly as findMany's rows serialize, on every path", async () => {
    const titles = ["Harbour crane at dusk", "Harbour lights", "Crane nest", "Harbour ghost"];
    const ids: string[] = [];
    for (const [i, userTitle] of titles.entries()) {
      const name = PHOTOS[i]!;
      const id = (await upload(t.as(FTS), fixture(name), name)).body.id as string;
      await t
        .as(FTS)
        .patch(`/v1/assets/${id}`)
        .send({ userTitle, userTags: ["quay"] })
        .expect(200);
      ids.push(id);
    }
    await t.as(FTS).delete(`/v1/assets/${ids[3]}`).expect(204);
    const foreign = (await upload(t.as(OTHER), fixture("chelsea.png"), "chelsea.png")).body.id as string;
    await t.as(OTHER).patch(`/v1/assets/${foreign}`).send({ userTitle: "Harbour elsewhere" }).expect(200);

    const expected: Record<string, string[]> = {
      harbour: [ids[0]!, ids[1]!], // one word: the bounded ranking answers
      "harbour crane": [ids[0]!], // AND: the exact ranking, then the row fetch
      habour: [ids[0]!, ids[1]!], // typo: corrected, ranked again
      "crane or lights": [ids[0]!, ids[1]!, ids[2]!],
    };
    for (const [q, want] of Object.entries(expected)) {
      const hits = await fullTextSearch(t.db.prisma, FTS, q, 25);
      expect([q, hits.map((h) => h.id).sort()]).toEqual([q, [...want].sort()]);
      const orm = await t.db.prisma.asset.findMany({ where: { id: { in: want } } });
      const res = await t.as(FTS).get("/v1/assets/search/full-text").query({ q });
      expect(res.status).toBe(200);
      const rowOf = new Map(orm.map((r) => [r.id, r]));
      expect(res.body).toEqual({
        count: hits.length,
        assets: hits.map((h) => ({
          ...JSON.parse(
            JSON.stringify(serializeListedAsset(rowOf.get(h.id)!, new MediaLinks("http://media.test", undefined))),
          ),
          score: h.score,
        })),
      });
    }
    const none = await t.as(FTS).get("/v1/assets/search/full-text").query({ q: "zzzqqq" });
    expect(none.body).toEqual({ count: 0, assets: [] });
  });
});
