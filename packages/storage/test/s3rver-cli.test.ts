import { spawn } from "node:child_process";
import path from "node:path";
import { createInterface } from "node:readline";
import { S3BlobStore, S3_CONNECTION_VARIABLES, createBlobStoreFromEnv } from "../src";

const REPO = path.resolve(__dirname, "../../..");
const TSX = path.join(REPO, "node_modules", ".bin", "tsx");
const CLI = path.join(REPO, "packages/storage/src/testing/s3rver-cli.ts");

test("s3rver-cli prints a usable env as KEY=VALUE lines and exits cleanly on SIGTERM", async () => {
  const child = spawn(TSX, [CLI], { cwd: REPO, stdio: ["ignore", "pipe", "inherit"] });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  try {
    const env: Record<string, string> = {};
    const lines = createInterface({ input: child.stdout });
    for await (const line of lines) {
      const eq = line.indexOf("=");
      env[line.slice(0, eq)] = line.slice(eq + 1);
      if (Object.keys(env).length === S3_CONNECTION_VARIABLES.length) break;
    }
    expect(Object.keys(env).sort()).toEqual([...S3_CONNECTION_VARIABLES].sort());
    expect(env.S3_ENDPOINT).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const store = createBlobStoreFromEnv(env) as S3BlobStore;
    try {
      await store.put("cli/check", Buffer.from("hi"), "text/plain");
      expect(await store.head("cli/check")).toEqual({ key: "cli/check", contentType: "text/plain", size: 2 });
    } finally {
      store.close();
    }
  } finally {
    child.kill("SIGTERM");
  }
  expect(await exited).toBe(0);
});
