import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Express } from "express";
import pg from "pg";
import pino from "pino";
import request from "supertest";
import { FilesystemBlobStore, createBlobStoreFromEnv, type BlobStore } from "@media-platform/storage";
import { startS3rver, type RunningS3rver } from "@media-platform/storage/src/testing/s3rver";
import { createApp, type AppDeps } from "../src/app";
import { createVerifier, signToken } from "../src/auth/keys";
import { createPGlite, openDatabase, type Database } from "../src/db/client";
import { migrate } from "../src/db/migrate";

export const FIXTURES = path.resolve(__dirname, "../../../fixtures/images");
export const fixture = (name: string): Buffer => fs.readFileSync(path.join(FIXTURES, name));
export const PHOTOS = ["astronaut.png", "camera.png", "chelsea.png", "coffee.png", "rocket.jpg"];

const required = process.env.REQUIRE_SERVICES === "1";

/** A database for one test file: a fresh `mgmt_<random>` database when DATABASE_URL is set, else in-memory PGlite. */
export async function createTestDatabase(): Promise<{ db: Database; url: string | null; drop(): Promise<void> }> {
  const base = process.env.DATABASE_URL;
  if (base) {
    const name = `mgmt_${randomBytes(6).toString("hex")}`;
    const admin = new pg.Client({ connectionString: base, connectionTimeoutMillis: 5000 });
    try {
      await admin.connect();
      await admin.query(`CREATE DATABASE "${name}"`);
      await admin.end();
    } catch (err) {
      await admin.end().catch(() => undefined);
      if (required)
        throw new Error(`REQUIRE_SERVICES=1 but Postgres at DATABASE_URL is unreachable: ${String(err)}`, {
          cause: err,
        });
      process.stderr.write(`DATABASE_URL unreachable (${String(err)}); falling back to PGlite\n`);
      return pgliteDb();
    }
    const url = new URL(base);
    url.pathname = `/${name}`;
    const db = await openDatabase({ databaseUrl: url.toString() });
    return {
      db,
      url: url.toString(),
      async drop() {
        await db.close();
        const c = new pg.Client({ connectionString: base });
        await c.connect();
        await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
        await c.end();
      },
    };
  }
  return pgliteDb();
}

/**
 * For a service started as a child process: a fresh Postgres database when DATABASE_URL is set
 * (its URL, and a drop to call afterwards); nothing with PGlite, which the child opens itself.
 */
export async function childDatabase(): Promise<{ url?: string; drop?: () => Promise<void> }> {
  if (!process.env.DATABASE_URL) return {};
  const created = await createTestDatabase();
  await created.db.close();
  return { url: created.url ?? undefined, drop: created.drop };
}

async function pgliteDb() {
  const pglite = await createPGlite(undefined);
  const db = await openDatabase({ pglite });
  return {
    db,
    url: null,
    async drop() {
      await db.close();
      await pglite.close();
    },
  };
}

/**
 * Filesystem blobs in a temp dir, or S3 when STORAGE_DRIVER=s3 (s3rver on loopback when no
 * S3_ENDPOINT is given). `own`: a bucket of this test's alone even when S3_ENDPOINT names a
 * shared one, for tests that list or sweep the whole store.
 */
export async function createTestBlobStore(own = false): Promise<{ store: BlobStore; close(): Promise<void> }> {
  if (process.env.STORAGE_DRIVER === "s3") {
    let s3rver: RunningS3rver | undefined;
    let env: Record<string, string | undefined> = process.env;
    if (own || !process.env.S3_ENDPOINT) {
      s3rver = await startS3rver({ bucket: `mgmt-${randomBytes(4).toString("hex")}` });
      env = { ...process.env, ...s3rver.env };
    }
    const store = createBlobStoreFromEnv(env);
    try {
      await store.ping();
    } catch (err) {
      await s3rver?.stop();
      throw new Error(`STORAGE_DRIVER=s3 but the S3 endpoint is unreachable: ${String(err)}`, { cause: err });
    }
    return { store, close: async () => s3rver?.stop() };
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mgmt-blobs-"));
  return { store: new FilesystemBlobStore(dir), close: async () => fs.rmSync(dir, { recursive: true, force: true }) };
}

export interface TestApp {
  app: Express;
  deps: AppDeps;
  db: Database;
  /** The test database's URL (Postgres mode), null on PGlite. */
  databaseUrl: string | null;
  blobStore: BlobStore;
  secret: string;
  token(workspaceId: string, sub?: string): string;
  /** supertest agent with a bearer token for `workspaceId`. */
  as(workspaceId: string): AuthedAgent;
  close(): Promise<void>;
}

export type AuthedAgent = {
  get(url: string): request.Test;
  post(url: string): request.Test;
  patch(url: string): request.Test;
  put(url: string): request.Test;
  delete(url: string): request.Test;
  head(url: string): request.Test;
};

export async function createTestApp(
  options: Partial<
    Pick<
      AppDeps,
      | "maxUploadBytes"
      | "duplicateHammingThreshold"
      | "webhookUrls"
      | "eagerRenders"
      | "assetVersionsKept"
      | "propagator"
      | "keepGps"
      | "originalMetadata"
      | "mediaSigningKey"
      | "mediaUrlLifetimeSeconds"
      | "libraryDir"
      | "devSignIn"
      | "transports"
      | "uploads"
      | "s3"
      | "resumable"
      | "quotas"
    >
  > & {
    /** A blob store no other test shares (tests that sweep or list the whole store). */
    ownBlobStore?: boolean;
  } = {},
): Promise<TestApp> {
  const database = await createTestDatabase();
  const blobs = await createTestBlobStore(options.ownBlobStore);
  await migrate(await database.db.migrationConnection());
  const secret = randomBytes(32).toString("hex");
  const deps: AppDeps = {
    prisma: database.db.prisma,
    reads: database.db.reads,
    blobStore: blobs.store,
    log: pino({ level: process.env.TEST_LOG ?? "silent" }),
    verifier: createVerifier({ kind: "secret", secret, embedded: false }, { workspaceClaim: "workspace_id" }),
    mediaPublicUrl: "http://media.test",
    maxUploadBytes: options.maxUploadBytes ?? 50 * 1024 * 1024,
    limitInputPixels: 100_000_000,
    duplicateHammingThreshold: options.duplicateHammingThreshold ?? 10,
    webhookUrls: options.webhookUrls,
    eagerRenders: options.eagerRenders,
    assetVersionsKept: options.assetVersionsKept,
    propagator: options.propagator,
    keepGps: options.keepGps,
    originalMetadata: options.originalMetadata,
    mediaSigningKey: options.mediaSigningKey,
    mediaUrlLifetimeSeconds: options.mediaUrlLifetimeSeconds,
    libraryDir: options.libraryDir,
    devSignIn: options.devSignIn,
    transports: options.transports,
    uploads: options.uploads,
    s3: options.s3,
    resumable: options.resumable,
    quotas: options.quotas,
  };
  const app = createApp(deps);
  const token = (ws: string, sub = "user-1") => signToken(secret, { workspaceId: ws, sub, ttl: "1h" });
  const as = (ws: string): AuthedAgent => {
    const auth = `Bearer ${token(ws)}`;
    return {
      get: (url) => request(app).get(url).set("Authorization", auth),
      post: (url) => request(app).post(url).set("Authorization", auth),
      patch: (url) => request(app).patch(url).set("Authorization", auth),
      put: (url) => request(app).put(url).set("Authorization", auth),
      delete: (url) => request(app).delete(url).set("Authorization", auth),
      head: (url) => request(app).head(url).set("Authorization", auth),
    };
  };
  return {
    app,
    deps,
    db: database.db,
    databaseUrl: database.url,
    blobStore: blobs.store,
    secret,
    token,
    as,
    async close() {
      await database.drop();
      await blobs.close();
    },
  };
}

/** Uploads a buffer; returns the supertest response. */
export function upload(
  agent: AuthedAgent,
  buffer: Buffer,
  filename: string,
  fields: Record<string, string> = {},
): request.Test {
  let req = agent.post("/v1/assets/upload");
  for (const [k, v] of Object.entries(fields)) req = req.field(k, v);
  return req.attach("file", buffer, { filename, contentType: "application/octet-stream" });
}

export function expectProblem(res: request.Response, status: number): void {
  expect(res.status).toBe(status);
  expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({ status, type: expect.any(String), title: expect.any(String) });
  expect(JSON.stringify(res.body)).not.toMatch(/\bat .+\.(ts|js):\d+/);
}
