import { mkdtemp, rm } from "node:fs/promises";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";

/** The part of s3rver's (untyped) API used here. */
interface S3rverInstance {
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
  httpServer?: Server;
}
type S3rverConstructor = new (options: {
  address: string;
  port: number;
  directory: string;
  silent: boolean;
  configureBuckets: Array<{ name: string }>;
}) => S3rverInstance;

export interface RunningS3rver {
  /** e.g. http://127.0.0.1:41234 */
  endpoint: string;
  bucket: string;
  /** Variables that make createBlobStoreFromEnv (and the services) use this server. */
  env: Record<string, string>;
  /** Stops the server and deletes its data directory. Safe to call twice. */
  stop(): Promise<void>;
}

export const S3RVER_CREDENTIALS = {
  accessKeyId: "S3RVER",
  secretAccessKey: "S3RVER",
} as const;

/**
 * Starts an in-process s3rver (fake S3 over HTTP) on 127.0.0.1 with a random free
 * port, a fresh temp directory and one bucket. For tests and local CI only.
 */
export async function startS3rver(options: { bucket?: string; region?: string } = {}): Promise<RunningS3rver> {
  const bucket = options.bucket ?? "media-test";
  const region = options.region ?? "us-east-1";
  // s3rver ships no type declarations; the interface above is what we rely on.
  const S3rver = require("s3rver") as S3rverConstructor;
  const directory = await mkdtemp(path.join(tmpdir(), "s3rver-"));
  const server = new S3rver({
    address: "127.0.0.1",
    port: 0,
    directory,
    silent: true,
    configureBuckets: [{ name: bucket }],
  });
  let address: AddressInfo;
  try {
    address = await server.run();
  } catch (err) {
    await rm(directory, { recursive: true, force: true });
    throw err;
  }
  const endpoint = `http://127.0.0.1:${address.port}`;

  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopped ??= (async () => {
      const closing = server.close();
      // Keep-alive sockets from SDK clients would otherwise hold close() open.
      server.httpServer?.closeAllConnections();
      await closing;
      await rm(directory, { recursive: true, force: true });
    })());

  return {
    endpoint,
    bucket,
    env: {
      STORAGE_DRIVER: "s3",
      S3_ENDPOINT: endpoint,
      S3_REGION: region,
      S3_BUCKET: bucket,
      S3_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
      S3_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
      S3_FORCE_PATH_STYLE: "true",
    },
    stop,
  };
}
