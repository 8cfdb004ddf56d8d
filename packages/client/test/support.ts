import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { signToken } from "../../../services/management/src/auth/keys";
import { loadConfig } from "../../../services/management/src/config";
import { startManagement, type StartOverrides } from "../../../services/management/src/server";
import { createTestBlobStore, createTestDatabase } from "../../../services/management/test/helpers";

export const FIXTURES = path.resolve(__dirname, "../../../fixtures/images");

export interface RunningTestManagement {
  url: string;
  dataDir: string;
  token(workspaceId: string, sub?: string): string;
  close(): Promise<void>;
}

/**
 * The management service as it runs: startManagement (migrations, verifier, HTTP listener on a
 * free loopback port). Embedded mode by default: PGlite and blobs in a temp DATA_DIR. When the
 * environment points at Postgres (DATABASE_URL) or S3 (STORAGE_DRIVER=s3), a fresh database /
 * bucket from the management test helpers is used instead, as in the service's own tests.
 */
export async function startTestManagement(): Promise<RunningTestManagement> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "client-mgmt-"));
  const secret = randomBytes(32).toString("hex");
  const config = loadConfig({
    MANAGEMENT_PORT: "0",
    HOST: "127.0.0.1",
    DATA_DIR: dataDir,
    AUTH_JWT_SECRET: secret,
    LOG_LEVEL: "silent",
    MEDIA_PUBLIC_URL: "http://media.test",
  });
  const overrides: StartOverrides = {};
  const cleanups: (() => Promise<void>)[] = [];
  if (process.env.DATABASE_URL) {
    const database = await createTestDatabase();
    overrides.database = database.db;
    cleanups.push(() => database.drop());
  }
  if (process.env.STORAGE_DRIVER === "s3") {
    const blobs = await createTestBlobStore();
    overrides.blobStore = blobs.store;
    cleanups.push(() => blobs.close());
  }
  const running = await startManagement(config, overrides);
  return {
    url: running.url,
    dataDir,
    token: (workspaceId, sub = "client-test") => signToken(secret, { workspaceId, sub, ttl: "1h" }),
    async close() {
      await running.close();
      for (const cleanup of cleanups) await cleanup();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
