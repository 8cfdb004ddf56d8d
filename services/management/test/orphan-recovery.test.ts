import { randomUUID } from "node:crypto";
import os from "node:os";
import path from "node:path";
import request from "supertest";
import sharp from "sharp";
import { sweepOrphans } from "../src/assets/orphans";
import { originalKey } from "@media-platform/storage";
import { trashKey, versionKey } from "../src/assets/blobs";
import { createTestApp, upload, type TestApp } from "./helpers";

/**
 * What a process killed mid-change leaves, and the sweep repairs: a version blob of a replace that
 * never committed, and an original on the wrong side of the trash after a trash or restore that
 * moved the blob but never committed.
 */
const WS = "ws-orphan-versions";
let t: TestApp;
beforeAll(async () => {
  // The sweep walks the whole store: a bucket shared with other test files would lose their blobs.
  t = await createTestApp({ ownBlobStore: true });
});
afterAll(async () => t?.close());

const png = (r: number) =>
  sharp({ create: { width: 8, height: 8, channels: 3, background: { r, g: 0, b: 0 } } })
    .png()
    .toBuffer();

const sweep = () =>
  sweepOrphans(
    { prisma: t.db.prisma, blobStore: t.blobStore },
    { graceMs: 0, spoolDir: path.join(os.tmpdir(), `no-spool-${randomUUID()}`) },
  );

it("deletes version blobs without their row, keeps the ones with a row", async () => {
  const up = await upload(t.as(WS), await png(10), "a.png");
  expect(up.status).toBe(201);
  const id = up.body.id as string;
  const replaced = await request(t.app)
    .put(`/v1/assets/${id}/original`)
    .set("Authorization", `Bearer ${t.token(WS)}`)
    .attach("file", await png(200), "b.png");
  expect(replaced.status).toBe(200);
  const stray = [versionKey(id, 7), versionKey(randomUUID(), 1)];
  for (const key of stray) await t.blobStore.put(key, await png(90), "image/png");

  const result = await sweep();
  expect(result.blobs).toBe(2);
  for (const key of stray) expect(await t.blobStore.head(key)).toBeNull();
  expect(await t.blobStore.head(versionKey(id, 1))).toMatchObject({ contentType: "image/png" });
});

it("puts an original back on the side its row names, and deletes a trash blob without a row", async () => {
  const ids: string[] = [];
  for (const r of [30, 60]) {
    const res = await upload(t.as(WS), await png(r), "c.png");
    expect(res.status).toBe(201);
    ids.push(res.body.id);
  }
  const [killedTrash, killedRestore] = ids as [string, string];
  // A trash killed after its move: the row is live, the blob in trash/.
  await t.blobStore.move(originalKey(killedTrash), trashKey(killedTrash));
  // A restore killed after its move: the row is trashed, the blob at originals/.
  expect((await t.as(WS).delete(`/v1/assets/${killedRestore}`)).status).toBe(204);
  await t.blobStore.move(trashKey(killedRestore), originalKey(killedRestore));
  // A permanent delete killed after its commit: a trash blob without a row.
  const gone = randomUUID();
  await t.blobStore.put(trashKey(gone), await png(5), "image/png");

  const result = await sweep();
  expect(result.moved).toBe(2);
  expect(result.blobs).toBe(1);
  const side = async (id: string) =>
    [(await t.blobStore.head(originalKey(id))) && "originals", (await t.blobStore.head(trashKey(id))) && "trash"]
      .filter(Boolean)
      .join(",");
  expect([await side(killedTrash), await side(killedRestore), await side(gone)]).toEqual(["originals", "trash", ""]);
  expect((await t.as(WS).get(`/v1/assets/${killedTrash}`)).status).toBe(200);
  // A second sweep finds nothing left to do.
  expect(await sweep()).toMatchObject({ moved: 0, blobs: 0 });
});
