import { createHash, randomUUID } from "node:crypto";
import os from "node:os";
import path from "node:path";
import { buffer } from "node:stream/consumers";
import pino from "pino";
import request from "supertest";
import sharp from "sharp";
import { createMediaServer, type MediaServer } from "../../media/src/server";
import { pipelineRender } from "../../media/test/support/media-server";
import { sweepOrphans } from "../src/assets/orphans";
import { createApp } from "../src/app";
import { ChangePropagator } from "../src/lifecycle/propagation";
import { originalKey, StorageUnavailableError, type BlobStore } from "@media-platform/storage";
import { trashKey, versionKey } from "../src/assets/blobs";
import { createTestApp, upload, type TestApp } from "./helpers";

/**
 * What a process killed mid-change leaves, and the sweep repairs: a version blob of a replace that
 * never committed (deleted, or put back as the original when the replace had already overwritten
 * it), and an original on the wrong side of the trash after a trash or restore that moved the blob
 * but never committed.
 */
const WS = "ws-orphan-versions";
const PURGE_SECRET = "orphan-purge-secret-0123456789abcdef";
let t: TestApp;
let media: MediaServer;
let mediaUrl: string;
let propagator: ChangePropagator;
beforeAll(async () => {
  // The sweep walks the whole store: a bucket shared with other test files would lose their blobs.
  t = await createTestApp({ ownBlobStore: true });
  media = createMediaServer({ store: t.blobStore, render: pipelineRender(), options: { purgeSecret: PURGE_SECRET } });
  mediaUrl = await media.listen(0, "127.0.0.1");
  propagator = new ChangePropagator({
    mediaPurgeUrls: [mediaUrl],
    mediaPurgeSecret: PURGE_SECRET,
    cdnPurgeUrl: undefined,
    log: pino({ level: "silent" }),
    attempts: 1,
  });
});
afterAll(async () => {
  await media?.close();
  await t?.close();
});

const png = (r: number) =>
  sharp({ create: { width: 8, height: 8, channels: 3, background: { r, g: 0, b: 0 } } })
    .png()
    .toBuffer();

const sweep = (graceMs = 0) =>
  sweepOrphans(
    { prisma: t.db.prisma, blobStore: t.blobStore, propagator },
    { graceMs, spoolDir: path.join(os.tmpdir(), `no-spool-${randomUUID()}`) },
  );
const HOUR = 3_600_000;

const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");
/** The sha256 of the blob at `key`, null when there is none. */
async function shaOf(key: string): Promise<string | null> {
  const blob = await t.blobStore.get(key);
  return blob ? sha256(await buffer(blob.body)) : null;
}
const row = (id: string) => t.db.prisma.asset.findUniqueOrThrow({ where: { id } });
const versionRows = (id: string) => t.db.prisma.assetVersion.count({ where: { assetId: id } });

const replace = (app: ReturnType<typeof createApp>, id: string, bytes: Buffer) =>
  request(app)
    .put(`/v1/assets/${id}/original`)
    .set("Authorization", `Bearer ${t.token(WS)}`)
    .attach("file", bytes, "new.png");

/**
 * A replace of `id` as a process killed after it overwrote `originals/<id>` and before its commit
 * leaves it: the real replace, on a store whose write of the new original lands and then fails
 * (the transaction rolls back), as does its attempt to put the previous original back.
 */
async function killedReplace(id: string, bytes: Buffer): Promise<void> {
  const store = Object.create(t.blobStore) as BlobStore;
  let overwritten = false;
  store.put = async (key, body, contentType, metadata) => {
    if (key !== originalKey(id)) return t.blobStore.put(key, body, contentType, metadata);
    if (!overwritten) {
      overwritten = true;
      await t.blobStore.put(key, body, contentType, metadata);
    }
    throw new StorageUnavailableError("killed");
  };
  expect((await replace(createApp({ ...t.deps, blobStore: store }), id, bytes)).status).toBe(503);
  expect(overwritten).toBe(true);
}

/** The colour media renders for `id` (its top-left pixel), and whether it came from its cache. */
async function rendered(id: string): Promise<{ rgb: number[]; xCache: string | null }> {
  const res = await fetch(`${mediaUrl}/thumbnail:size=50/${id}.png`);
  expect(res.status).toBe(200);
  const { data } = await sharp(Buffer.from(await res.arrayBuffer()))
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { rgb: [data[0]!, data[1]!, data[2]!], xCache: res.headers.get("x-cache") };
}

/** Uploads a red original; returns its id, sha256 and blob facts (content type, size, metadata). */
async function uploadRed() {
  const up = await upload(t.as(WS), await png(255), "red.png");
  expect(up.status).toBe(201);
  const id = up.body.id as string;
  const sha = (await row(id)).sha256;
  expect(await shaOf(originalKey(id))).toBe(sha);
  const { key: _key, ...facts } = (await t.blobStore.head(originalKey(id)))!;
  return { id, sha, facts };
}

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

describe("a replace killed between overwriting the original and its commit", () => {
  it("has its saved original put back at once, and what media cached of the new bytes purged", async () => {
    const { id, sha, facts } = await uploadRed();
    await killedReplace(id, await png(0));
    // The crash state: the row at version 1 with the red sha, the uncommitted bytes at originals/,
    // the red ones at versions/<id>/v1 without their version row.
    expect(await row(id)).toMatchObject({ version: 1, sha256: sha });
    const uncommitted = await shaOf(originalKey(id));
    expect(uncommitted).not.toBe(sha);
    expect(await shaOf(versionKey(id, 1))).toBe(sha);
    expect(await versionRows(id)).toBe(0);
    // Media renders and caches the uncommitted bytes meanwhile.
    expect((await rendered(id)).rgb).toEqual([0, 0, 0]);
    expect(await rendered(id)).toEqual({ rgb: [0, 0, 0], xCache: "HIT" });

    // Well within the grace period: the row lock, not the age, makes the repair safe.
    const result = await sweep(HOUR);
    expect(result).toMatchObject({ restored: 1, blobs: 0, moved: 0 });
    expect(await shaOf(originalKey(id))).toBe(sha);
    expect(await t.blobStore.head(originalKey(id))).toEqual({ key: originalKey(id), ...facts });
    expect(await t.blobStore.head(versionKey(id, 1))).toBeNull();
    expect(await versionRows(id)).toBe(0);
    expect(await row(id)).toMatchObject({ version: 1, sha256: sha });
    const got = await t.as(WS).get(`/v1/assets/${id}`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ id, sha256: sha });
    // Purged: media renders the original the row describes again.
    expect(await rendered(id)).toEqual({ rgb: [255, 0, 0], xCache: "MISS" });
    expect(await sweep(0)).toMatchObject({ restored: 0, blobs: 0, moved: 0 });

    // The asset goes on as if the replace had never started: the next one keeps the red bytes as v1.
    expect((await replace(t.app, id, await png(128))).status).toBe(200);
    expect(await shaOf(versionKey(id, 1))).toBe(sha);
    expect(await t.db.prisma.assetVersion.findMany({ where: { assetId: id }, select: { sha256: true } })).toEqual([
      { sha256: sha },
    ]);
  });

  it("trashed since: puts it back in trash/, where the trash moved the new bytes, and a restore brings it back", async () => {
    const { id, sha, facts } = await uploadRed();
    await killedReplace(id, await png(0));
    expect((await t.as(WS).delete(`/v1/assets/${id}`)).status).toBe(204);
    expect(await shaOf(trashKey(id))).not.toBe(sha);

    const result = await sweep(HOUR);
    expect(result).toMatchObject({ restored: 1, blobs: 0, moved: 0 });
    expect(await shaOf(trashKey(id))).toBe(sha);
    expect(await t.blobStore.head(originalKey(id))).toBeNull();
    expect(await t.blobStore.head(versionKey(id, 1))).toBeNull();
    expect(await versionRows(id)).toBe(0);

    expect((await t.as(WS).post(`/v1/assets/${id}/restore`)).status).toBe(200);
    expect(await shaOf(originalKey(id))).toBe(sha);
    expect(await t.blobStore.head(originalKey(id))).toEqual({ key: originalKey(id), ...facts });
    const got = await t.as(WS).get(`/v1/assets/${id}`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ id, sha256: sha, version: 1 });
    expect((await rendered(id)).rgb).toEqual([255, 0, 0]);
  });

  it("leaves a version blob with its row, and deletes an older leftover only after the grace period", async () => {
    const { id, sha } = await uploadRed();
    for (const r of [0, 128]) expect((await replace(t.app, id, await png(r))).status).toBe(200);
    const current = await shaOf(originalKey(id));
    const v2 = await shaOf(versionKey(id, 2));
    // A prune killed between its commit and its blob delete: v1's blob without its row.
    await t.db.prisma.assetVersion.delete({ where: { assetId_version: { assetId: id, version: 1 } } });

    expect(await sweep(HOUR)).toMatchObject({ restored: 0, blobs: 0 });
    expect(await shaOf(versionKey(id, 1))).toBe(sha);
    expect(await sweep(0)).toMatchObject({ restored: 0, blobs: 1 });
    expect(await t.blobStore.head(versionKey(id, 1))).toBeNull();
    expect(await shaOf(versionKey(id, 2))).toBe(v2);
    expect(await shaOf(originalKey(id))).toBe(current);
    expect(await row(id)).toMatchObject({ version: 3 });
  });

  describe("followed, before any sweep, by another change of the same asset", () => {
    const shaOfRow = async (id: string, version: number) =>
      (await t.db.prisma.assetVersion.findUniqueOrThrow({ where: { assetId_version: { assetId: id, version } } }))
        .sha256;
    // Purging the media server above, as a deployment's replace does.
    let app: ReturnType<typeof createApp>;
    beforeAll(() => {
      app = createApp({ ...t.deps, propagator });
    });
    const restore = (id: string, version: number) =>
      request(app)
        .post(`/v1/assets/${id}/versions/${version}/restore`)
        .set("Authorization", `Bearer ${t.token(WS)}`);

    it("a replace keeps the saved bytes as the version the row described", async () => {
      const { id, sha } = await uploadRed();
      await killedReplace(id, await png(0));
      // Media renders and caches the uncommitted bytes meanwhile.
      expect((await rendered(id)).rgb).toEqual([0, 0, 0]);
      expect(await rendered(id)).toEqual({ rgb: [0, 0, 0], xCache: "HIT" });

      const third = await png(128);
      const replaced = await replace(app, id, third);
      expect(replaced.status).toBe(200);
      expect(replaced.body).toMatchObject({ version: 2, sha256: sha256(third) });
      expect(await shaOfRow(id, 1)).toBe(sha);
      expect(await shaOf(versionKey(id, 1))).toBe(sha);
      expect(await shaOf(originalKey(id))).toBe(sha256(third));
      expect(await versionRows(id)).toBe(1);
      expect(await rendered(id)).toEqual({ rgb: [128, 0, 0], xCache: "MISS" });

      const restored = await restore(id, 1);
      expect(restored.status).toBe(200);
      expect(restored.body).toMatchObject({ version: 3, sha256: sha });
      expect(await shaOf(originalKey(id))).toBe(sha);
      expect(await shaOfRow(id, 2)).toBe(sha256(third));
      expect(await shaOf(versionKey(id, 2))).toBe(sha256(third));
      expect((await rendered(id)).rgb).toEqual([255, 0, 0]);
    });

    it("a replace that fails after its own overwrite puts the saved bytes back as the original", async () => {
      const { id, sha, facts } = await uploadRed();
      await killedReplace(id, await png(0));
      // This time the write of the new original lands and fails, and the put-back succeeds.
      const store = Object.create(t.blobStore) as BlobStore;
      let failed = false;
      store.put = async (key, body, contentType, metadata) => {
        const info = await t.blobStore.put(key, body, contentType, metadata);
        if (key === originalKey(id) && !failed) {
          failed = true;
          throw new StorageUnavailableError("failed");
        }
        return info;
      };
      expect((await replace(createApp({ ...t.deps, blobStore: store }), id, await png(128))).status).toBe(503);
      expect(failed).toBe(true);
      expect(await row(id)).toMatchObject({ version: 1, sha256: sha });
      expect(await shaOf(originalKey(id))).toBe(sha);
      expect(await t.blobStore.head(originalKey(id))).toEqual({ key: originalKey(id), ...facts });
      expect(await versionRows(id)).toBe(0);
      // The saved blob is still there without its row: the sweep puts the same bytes back and removes it.
      expect(await sweep(HOUR)).toMatchObject({ restored: 1, blobs: 0 });
      expect(await shaOf(originalKey(id))).toBe(sha);
      expect(await t.blobStore.head(versionKey(id, 1))).toBeNull();
    });

    it("a version restore keeps the saved bytes as the version the row described", async () => {
      const { id, sha: red } = await uploadRed();
      const green = await png(64);
      expect((await replace(t.app, id, green)).status).toBe(200);
      // The row at version 2 (green), version 1 red; the killed replace leaves green at v2 without a row.
      await killedReplace(id, await png(0));
      expect(await row(id)).toMatchObject({ version: 2, sha256: sha256(green) });
      expect(await shaOf(originalKey(id))).not.toBe(sha256(green));
      expect((await rendered(id)).rgb).toEqual([0, 0, 0]);

      const restored = await restore(id, 1);
      expect(restored.status).toBe(200);
      expect(restored.body).toMatchObject({ version: 3, sha256: red });
      expect(await shaOfRow(id, 2)).toBe(sha256(green));
      expect(await shaOf(versionKey(id, 2))).toBe(sha256(green));
      expect(await shaOf(originalKey(id))).toBe(red);
      expect(await shaOfRow(id, 1)).toBe(red);
      expect(await shaOf(versionKey(id, 1))).toBe(red);
      expect(await rendered(id)).toEqual({ rgb: [255, 0, 0], xCache: "MISS" });

      const back = await restore(id, 2);
      expect(back.status).toBe(200);
      expect(back.body).toMatchObject({ version: 4, sha256: sha256(green) });
      expect(await shaOf(originalKey(id))).toBe(sha256(green));
      expect((await rendered(id)).rgb).toEqual([64, 0, 0]);
    });
  });

  it("waits for a replace in flight and leaves it alone", async () => {
    const { id, sha } = await uploadRed();
    // A replace paused at its overwrite: it holds the row lock, has written versions/<id>/v1 and
    // inserted (not committed) its row.
    let reached!: () => void;
    const atOverwrite = new Promise<void>((r) => (reached = r));
    let go!: () => void;
    const gate = new Promise<void>((r) => (go = r));
    const store = Object.create(t.blobStore) as BlobStore;
    store.put = async (key, body, contentType, metadata) => {
      if (key === originalKey(id)) {
        reached();
        await gate;
      }
      return t.blobStore.put(key, body, contentType, metadata);
    };
    const blue = await png(0);
    const replacing = replace(createApp({ ...t.deps, blobStore: store }), id, blue).then((res) => res);
    await atOverwrite;
    expect(await shaOf(versionKey(id, 1))).toBe(sha);

    let swept = false;
    const sweeping = sweep(0).finally(() => (swept = true));
    if (t.databaseUrl) {
      // Postgres: the sweep takes the replace's blob for a saved original and waits for the row lock.
      const waiting = async () =>
        (
          await t.db.prisma.$queryRaw<Array<{ n: number }>>`
            SELECT count(*)::int AS n FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock'`
        )[0]!.n;
      for (let i = 0; i < 100 && (await waiting()) === 0; i++) await new Promise((r) => setTimeout(r, 50));
      expect(await waiting()).toBe(1);
    } else {
      // PGlite: one connection; the sweep's first query waits for the replace's transaction.
      await new Promise((r) => setTimeout(r, 300));
    }
    expect(swept).toBe(false);
    go();
    expect((await replacing).status).toBe(200);
    expect(await sweeping).toMatchObject({ restored: 0, blobs: 0 });

    const newSha = (await row(id)).sha256;
    expect(newSha).not.toBe(sha);
    expect(await row(id)).toMatchObject({ version: 2 });
    expect(await shaOf(originalKey(id))).toBe(newSha);
    expect(await shaOf(versionKey(id, 1))).toBe(sha);
    expect(await versionRows(id)).toBe(1);
  });
});
