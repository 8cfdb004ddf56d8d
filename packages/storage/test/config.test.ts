import path from "node:path";
import { z } from "zod";
import {
  FilesystemBlobStore,
  S3BlobStore,
  StorageConfigError,
  createBlobStore,
  createBlobStoreFromEnv,
  parseStorageEnv,
  storageEnvSchema,
} from "../src";

const S3_ENV = { STORAGE_DRIVER: "s3", S3_BUCKET: "media", S3_ENDPOINT: "http://127.0.0.1:9000" };

describe("storage env config", () => {
  test("no variables at all: filesystem driver in ./.data/blobs", () => {
    const config = parseStorageEnv({});
    expect(config).toMatchObject({
      STORAGE_DRIVER: "fs",
      STORAGE_DIR: "./.data/blobs",
      S3_REGION: "us-east-1",
      S3_FORCE_PATH_STYLE: true,
    });
    const store = createBlobStoreFromEnv({});
    expect(store).toBeInstanceOf(FilesystemBlobStore);
    expect((store as FilesystemBlobStore).rootDir).toBe(path.resolve(".data/blobs"));
  });

  test("blank values count as unset", () => {
    expect(parseStorageEnv({ STORAGE_DRIVER: "", S3_FORCE_PATH_STYLE: "", S3_REGION: "" })).toMatchObject({
      STORAGE_DRIVER: "fs",
      S3_FORCE_PATH_STYLE: true,
      S3_REGION: "us-east-1",
    });
  });

  test("s3 driver with its settings", () => {
    const config = parseStorageEnv({
      ...S3_ENV,
      S3_REGION: "eu-central-1",
      S3_ACCESS_KEY_ID: "id",
      S3_SECRET_ACCESS_KEY: "secret",
      S3_FORCE_PATH_STYLE: "false",
      S3_REQUEST_TIMEOUT_MS: "5000",
    });
    expect(config).toMatchObject({
      STORAGE_DRIVER: "s3",
      S3_BUCKET: "media",
      S3_REGION: "eu-central-1",
      S3_FORCE_PATH_STYLE: false,
      S3_REQUEST_TIMEOUT_MS: 5000,
    });
    const store = createBlobStore(config);
    expect(store).toBeInstanceOf(S3BlobStore);
    expect((store as S3BlobStore).bucket).toBe("media");
    (store as S3BlobStore).close();
  });

  test.each([
    ["STORAGE_DRIVER", { STORAGE_DRIVER: "ftp" }],
    ["S3_BUCKET", { STORAGE_DRIVER: "s3" }],
    ["S3_BUCKET", { ...S3_ENV, S3_BUCKET: "ab" }],
    ["S3_BUCKET", { ...S3_ENV, S3_BUCKET: "b".repeat(64) }],
    ["S3_BUCKET", { ...S3_ENV, S3_BUCKET: "Upper_Case" }],
    ["S3_ENDPOINT", { ...S3_ENV, S3_ENDPOINT: "not a url" }],
    ["S3_ENDPOINT", { ...S3_ENV, S3_ENDPOINT: "ftp://example.com" }],
    ["S3_FORCE_PATH_STYLE", { ...S3_ENV, S3_FORCE_PATH_STYLE: "maybe" }],
    ["S3_SECRET_ACCESS_KEY", { ...S3_ENV, S3_ACCESS_KEY_ID: "only-the-id" }],
    ["S3_ACCESS_KEY_ID", { ...S3_ENV, S3_SECRET_ACCESS_KEY: "only-the-secret" }],
    ["S3_REQUEST_TIMEOUT_MS", { ...S3_ENV, S3_REQUEST_TIMEOUT_MS: "soon" }],
    ["S3_CONNECT_TIMEOUT_MS", { ...S3_ENV, S3_CONNECT_TIMEOUT_MS: "-1" }],
    ["S3_MAX_ATTEMPTS", { ...S3_ENV, S3_MAX_ATTEMPTS: "0" }],
  ])("a bad %s is reported by name", (variable, env) => {
    expect(() => createBlobStoreFromEnv(env)).toThrow(StorageConfigError);
    expect(() => createBlobStoreFromEnv(env)).toThrow(new RegExp(`\\b${variable}: `));
    try {
      parseStorageEnv(env);
    } catch (err) {
      expect((err as StorageConfigError).problems.map((p) => p.variable)).toContain(variable);
    }
  });

  test("every bad variable is listed at once", () => {
    expect(() => parseStorageEnv({ STORAGE_DRIVER: "x", S3_BUCKET: "a", S3_FORCE_PATH_STYLE: "?" })).toThrow(
      /STORAGE_DRIVER: .*S3_BUCKET: .*S3_FORCE_PATH_STYLE: /,
    );
  });

  test("createBlobStore checks the s3 bucket rule when given an already-parsed config", () => {
    const parsed = storageEnvSchema.parse({ STORAGE_DRIVER: "s3" });
    expect(() => createBlobStore(parsed)).toThrow(/S3_BUCKET: is required when STORAGE_DRIVER=s3/);
  });

  test("the schema can be extended into a service's own env schema", () => {
    const serviceEnv = storageEnvSchema.extend({ PORT: z.coerce.number().default(3000) });
    expect(serviceEnv.parse({ STORAGE_DRIVER: "fs" })).toMatchObject({ PORT: 3000, STORAGE_DRIVER: "fs" });
  });
});
