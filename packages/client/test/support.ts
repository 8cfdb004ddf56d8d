import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { embeddedSecret, signToken } from "../../../services/management/src/auth/keys";
import { loadConfig } from "../../../services/management/src/config";
import { startManagement, type StartOverrides } from "../../../services/management/src/server";
import { createTestBlobStore, createTestDatabase } from "../../../services/management/test/helpers";

export const FIXTURES = path.resolve(__dirname, "../../../fixtures/images");

export interface RunningTestManagement {
  url: string;
  /** DATA_DIR of the service (holds the embedded secret in embedded mode). */
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
export async function startTestManagement(
  options: { embeddedSecret?: boolean; env?: Record<string, string> } = {},
): Promise<RunningTestManagement> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "client-mgmt-"));
  const env: Record<string, string> = {
    MANAGEMENT_PORT: "0",
    HOST: "127.0.0.1",
    DATA_DIR: dataDir,
    LOG_LEVEL: "silent",
    MEDIA_PUBLIC_URL: "http://media.test",
    ...options.env,
  };
  // Embedded mode signs with a secret the service creates in DATA_DIR on first start (as `pnpm start`).
  if (!options.embeddedSecret) env.AUTH_JWT_SECRET = randomBytes(32).toString("hex");
  const config = loadConfig(env);
  const overrides: StartOverrides = {};
  const cleanups: (() => Promise<void>)[] = [];
  if (process.env.DATABASE_URL) {
    const database = await createTestDatabase();
    overrides.database = database.db;
    cleanups.push(() => database.drop());
  }
  if (process.env.STORAGE_DRIVER === "s3") {
    // A bucket of its own: startManagement's orphan sweep walks the whole store.
    const blobs = await createTestBlobStore(true);
    overrides.blobStore = blobs.store;
    cleanups.push(() => blobs.close());
  }
  const running = await startManagement(config, overrides);
  const secret = env.AUTH_JWT_SECRET ?? embeddedSecret(dataDir, false);
  if (!secret) throw new Error("the service did not create its embedded secret");
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
