import request from "supertest";
import sharp from "sharp";
import { originalKey, StorageUnavailableError, type BlobStore } from "@media-platform/storage";
import { createApp } from "../src/app";
import { trashKey } from "../src/assets/blobs";
import { createTestApp, upload, type TestApp } from "./helpers";

/**
 * A batch trash or restore whose Nth blob move fails is undone completely: every row stays as it
 * was, and every blob is back where its row says, with nothing left on the other side, even for
 * moves still running when the failure came and for a move that failed half-way (S3's copy done,
 * delete not).
 */
const WS = "ws-batch-moves";
let t: TestApp;
beforeAll(async () => {
  // Its own store: another test file's orphan sweep on a shared bucket deletes trash/ blobs whose
  // rows are not in that file's database, i.e. ours.
  t = await createTestApp({ ownBlobStore: true });
});
afterAll(async () => t?.close());

const png = (shade: number) =>
  sharp({ create: { width: 8, height: 8, channels: 3, background: { r: shade, g: 40, b: 90 } } })
    .png()
    .toBuffer();

async function uploadMany(n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await upload(t.as(WS), await png(10 + i * 20), `a${i}.png`);
    expect(res.status).toBe(201);
    ids.push(res.body.id);
  }
  return ids;
}

type Failure = "before" | "half-way";
/**
 * The test's blob store, whose `failOn`-th move fails: "before" touches nothing, "half-way"
 * copies to the target first (what S3 leaves when DeleteObject fails after CopyObject). Every
 * other move is slow, so several are still running when the failing one rejects.
 */
function failingOnMove(failOn: number, failure: Failure): BlobStore & { moves: number } {
  const store = Object.create(t.blobStore) as BlobStore & { moves: number };
  store.moves = 0;
  store.move = async (from, to) => {
    const n = ++store.moves;
    if (n === failOn) {
      if (failure === "half-way") {
        const blob = await t.blobStore.get(from);
        await t.blobStore.put(to, blob!.body, blob!.contentType, blob!.metadata);
      }
      throw new StorageUnavailableError(`move ${n} failed`);
    }
    await new Promise((r) => setTimeout(r, 150));
    return t.blobStore.move(from, to);
  };
  // A move done as a copy (get + put + delete) counts at its put, and fails the same way.
  store.put = async (key, body, contentType, metadata) => {
    const n = ++store.moves;
    if (n === failOn) throw new StorageUnavailableError(`put ${n} failed`);
    await new Promise((r) => setTimeout(r, 150));
    return t.blobStore.put(key, body, contentType, metadata);
  };
  return store;
}

const batch = (store: BlobStore, action: "delete" | "restore", ids: string[]) =>
  request(createApp({ ...t.deps, blobStore: store }))
    .post("/v1/assets/batch")
    .set("Authorization", `Bearer ${t.token(WS)}`)
    .send({ action, ids });

/** Where each asset's blob is: "originals", "trash", "both" or "none"; and whether its row is trashed. */
async function state(ids: string[]): Promise<Array<{ blob: string; trashed: boolean }>> {
  const out = [];
  for (const id of ids) {
    const [live, trashed] = [await t.blobStore.head(originalKey(id)), await t.blobStore.head(trashKey(id))];
    const row = await t.db.prisma.asset.findUniqueOrThrow({ where: { id } });
    out.push({
      blob: live && trashed ? "both" : live ? "originals" : trashed ? "trash" : "none",
      trashed: row.deletedAt !== null,
    });
  }
  return out;
}
/** Lets any move still running finish, so a late one would show. */
const settle = () => new Promise((r) => setTimeout(r, 400));

describe.each<Failure>(["before", "half-way"])("a batch whose 3rd blob move fails %s moving", (failure) => {
  it("trash: 503, every row live, every blob at originals/ and none in trash/", async () => {
    const ids = await uploadMany(6);
    const store = failingOnMove(3, failure);
    const res = await batch(store, "delete", ids);
    expect(res.status).toBe(503);
    await settle();
    expect(await state(ids)).toEqual(ids.map(() => ({ blob: "originals", trashed: false })));
    // The 6 moves, then the 5 that happened moved back (the failed one's source is intact: its
    // copy, if any, is deleted instead).
    expect(store.moves).toBe(11);
    for (const id of ids) expect((await t.as(WS).get(`/v1/assets/${id}`)).status).toBe(200);
    // And a trash that works afterwards moves them all.
    expect((await batch(t.blobStore, "delete", ids)).body).toEqual({ matched: 6, changed: 6, notFound: [] });
    expect(await state(ids)).toEqual(ids.map(() => ({ blob: "trash", trashed: true })));
  });

  it("restore: 503, every row still trashed, every blob in trash/ and none at originals/", async () => {
    const ids = await uploadMany(6);
    expect((await batch(t.blobStore, "delete", ids)).status).toBe(200);
    const res = await batch(failingOnMove(3, failure), "restore", ids);
    expect(res.status).toBe(503);
    await settle();
    expect(await state(ids)).toEqual(ids.map(() => ({ blob: "trash", trashed: true })));
    expect((await batch(t.blobStore, "restore", ids)).body).toEqual({ matched: 6, changed: 6, notFound: [] });
    expect(await state(ids)).toEqual(ids.map(() => ({ blob: "originals", trashed: false })));
  });
});

it("a move never reads the bytes: trash and restore use the store's move, not get + put", async () => {
  const ids = await uploadMany(2);
  const store = Object.create(t.blobStore) as BlobStore;
  const used: string[] = [];
  store.get = async (key) => {
    used.push(`get ${key.split("/")[0]}`);
    return t.blobStore.get(key);
  };
  store.put = async (...args) => {
    used.push(`put ${args[0].split("/")[0]}`);
    return t.blobStore.put(...args);
  };
  expect((await batch(store, "delete", ids)).status).toBe(200);
  expect((await batch(store, "restore", ids)).status).toBe(200);
  expect(used).toEqual([]);
  expect(await state(ids)).toEqual(ids.map(() => ({ blob: "originals", trashed: false })));
});
