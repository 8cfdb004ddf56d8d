import { ListObjectsV2Command } from "@aws-sdk/client-s3";
import { createServer, type Server, type Socket } from "node:net";
import { S3BlobStore, StorageUnavailableError, createBlobStoreFromEnv } from "../src";
import { type RunningS3rver, S3RVER_CREDENTIALS, startS3rver } from "../src/testing/s3rver";
import { describeBlobStoreContract } from "./support/blob-store-contract";

let s3: RunningS3rver;
const stores: S3BlobStore[] = [];

function storeFor(endpoint: string, bucket: string, extra: Partial<ConstructorParameters<typeof S3BlobStore>[0]> = {}) {
  const store = new S3BlobStore({
    endpoint,
    bucket,
    region: "us-east-1",
    forcePathStyle: true,
    ...S3RVER_CREDENTIALS,
    ...extra,
  });
  stores.push(store);
  return store;
}

beforeAll(async () => {
  s3 = await startS3rver();
});
afterAll(async () => {
  for (const store of stores) store.close();
  await s3?.stop();
});

async function listKeys(store: S3BlobStore): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const page = await store.client.send(
      new ListObjectsV2Command({
        Bucket: store.bucket,
        ContinuationToken: token,
      }),
    );
    for (const obj of page.Contents ?? []) keys.push(obj.Key as string);
    token = page.NextContinuationToken;
  } while (token);
  return keys.sort();
}

describeBlobStoreContract("s3", () => {
  const store = storeFor(s3.endpoint, s3.bucket);
  return { store: () => store, residue: () => listKeys(store) };
});

describe("S3BlobStore specifics", () => {
  test("the env from startS3rver drives createBlobStoreFromEnv", async () => {
    const store = createBlobStoreFromEnv(s3.env);
    expect(store).toBeInstanceOf(S3BlobStore);
    stores.push(store as S3BlobStore);
    await store.ping();
    await store.put("env/check", Buffer.from("ok"), "text/plain");
    expect(await store.head("env/check")).toEqual({
      key: "env/check",
      contentType: "text/plain",
      size: 2,
    });
  });

  test("ensureBucket creates a missing bucket and is idempotent; ping fails before", async () => {
    const store = storeFor(s3.endpoint, "fresh-bucket-1");
    await expect(store.ping()).rejects.toBeInstanceOf(StorageUnavailableError);
    await store.ensureBucket();
    await store.ensureBucket();
    await expect(store.ping()).resolves.toBeUndefined();
    await store.put("a", Buffer.from("1"), "text/plain");
    expect(await store.head("a")).toEqual({
      key: "a",
      contentType: "text/plain",
      size: 1,
    });
  });

  test("wrong credentials surface as StorageUnavailableError", async () => {
    const store = storeFor(s3.endpoint, s3.bucket, {
      accessKeyId: "nope",
      secretAccessKey: "wrong",
    });
    await expect(store.ping()).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(store.get("originals/x")).rejects.toBeInstanceOf(StorageUnavailableError);
  });

  test("a stopped endpoint surfaces as StorageUnavailableError on every operation", async () => {
    const gone = await startS3rver({ bucket: "short-lived" });
    const store = storeFor(gone.endpoint, gone.bucket, { maxAttempts: 1 });
    await store.put("k", Buffer.from("x"), "text/plain");
    await gone.stop();
    await gone.stop(); // idempotent
    await expect(store.ping()).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(store.get("k")).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(store.head("k")).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(store.delete("k")).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(store.put("k", Buffer.from("y"), "text/plain")).rejects.toBeInstanceOf(StorageUnavailableError);
    const { Readable } = await import("node:stream");
    await expect(store.put("k", Readable.from([Buffer.from("y")]), "text/plain")).rejects.toBeInstanceOf(
      StorageUnavailableError,
    );
  });

  describe("an endpoint that accepts connections but never answers", () => {
    let blackHole: Server;
    const sockets: Socket[] = [];
    let endpoint: string;
    beforeAll(async () => {
      blackHole = createServer((socket) => sockets.push(socket));
      await new Promise<void>((resolve) => blackHole.listen(0, "127.0.0.1", resolve));
      const address = blackHole.address();
      if (address === null || typeof address === "string") throw new Error("no port");
      endpoint = `http://127.0.0.1:${address.port}`;
    });
    afterAll(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => blackHole.close(resolve));
    });

    test("times out into StorageUnavailableError instead of hanging", async () => {
      const store = storeFor(endpoint, "hole", {
        maxAttempts: 1,
        requestTimeoutMs: 300,
        socketTimeoutMs: 300,
      });
      await expect(store.ping()).rejects.toBeInstanceOf(StorageUnavailableError);
      await expect(store.get("k")).rejects.toBeInstanceOf(StorageUnavailableError);
      await expect(store.put("k", Buffer.from("x"), "text/plain")).rejects.toBeInstanceOf(StorageUnavailableError);
    });
  });

  test("credentials must be given as a pair", () => {
    expect(
      () =>
        new S3BlobStore({
          region: "us-east-1",
          bucket: "abc",
          forcePathStyle: true,
          accessKeyId: "only-id",
        }),
    ).toThrow(/together/);
  });
});
