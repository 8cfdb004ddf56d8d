import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import path from "node:path";
import { sizeUvPool, UV_POOL_SPARE_THREADS } from "../src/uv-pool";

const ROOT = path.resolve(__dirname, "../../..");

describe("libuv pool size (sizeUvPool)", () => {
  it("gives the pool the render slots plus the spare threads", () => {
    const env: NodeJS.ProcessEnv = {};
    sizeUvPool(env);
    expect(env.UV_THREADPOOL_SIZE).toBe(String(4 * availableParallelism() + UV_POOL_SPARE_THREADS));
    const three: NodeJS.ProcessEnv = { MEDIA_CONCURRENCY: "3" };
    sizeUvPool(three);
    expect(three.UV_THREADPOOL_SIZE).toBe("7");
  });

  it("keeps a size the environment sets, and leaves an unreadable MEDIA_CONCURRENCY to the config load", () => {
    const set: NodeJS.ProcessEnv = { UV_THREADPOOL_SIZE: "2", MEDIA_CONCURRENCY: "3" };
    sizeUvPool(set);
    expect(set.UV_THREADPOOL_SIZE).toBe("2");
    const bad: NodeJS.ProcessEnv = { MEDIA_CONCURRENCY: "lots" };
    sizeUvPool(bad);
    expect(bad.UV_THREADPOOL_SIZE).toBeUndefined();
  });
});

// Loading sharp starts libuv's pool, so only a size set before that counts. The production bundle
// (`pnpm build media`, plain node) is started three times and its threads counted before any
// request (no libvips worker exists yet): MEDIA_CONCURRENCY=3 must give the same threads as an
// explicit UV_THREADPOOL_SIZE=7, and 3 more than UV_THREADPOOL_SIZE=4 (libuv's default).
const linux = process.platform === "linux";
(linux ? describe : describe.skip)("the media entry point sizes the pool before sharp starts it", () => {
  let dir: string;
  const children: ChildProcess[] = [];
  beforeAll(() => {
    const build = spawnSync(process.execPath, ["--import", "tsx", path.join(ROOT, "scripts/build.ts"), "media"], {
      cwd: ROOT,
      encoding: "utf8",
    });
    expect(build.status).toBe(0);
    dir = mkdtempSync(path.join(tmpdir(), "uv-pool-"));
  }, 120_000);
  afterAll(() => {
    for (const child of children) child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  /** Threads of a media bundle process once it listens. */
  async function threadsWith(env: Record<string, string>): Promise<number> {
    const child = spawn(process.execPath, [path.join(ROOT, "services/media/dist/index.js")], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? "",
        MEDIA_PORT: "0",
        HOST: "127.0.0.1",
        STORAGE_DRIVER: "fs",
        STORAGE_DIR: path.join(dir, "blobs"),
        REDIS_URL: "",
        LOG_LEVEL: "warn",
        ...env,
      },
      stdio: ["ignore", "pipe", "inherit"],
    });
    children.push(child);
    await new Promise<void>((resolve, reject) => {
      child.once("exit", (code) => reject(new Error(`media exited with ${code}`)));
      child.stdout!.on("data", (chunk: Buffer) => {
        if (chunk.toString().includes("listening")) resolve();
      });
    });
    const count = readdirSync(`/proc/${child.pid}/task`).length;
    child.kill("SIGKILL");
    return count;
  }

  it("MEDIA_CONCURRENCY=3 runs a 7-thread pool, not libuv's default 4", async () => {
    const sized = await threadsWith({ MEDIA_CONCURRENCY: "3" });
    const explicit = await threadsWith({ MEDIA_CONCURRENCY: "3", UV_THREADPOOL_SIZE: "7" });
    const libuvDefault = await threadsWith({ MEDIA_CONCURRENCY: "3", UV_THREADPOOL_SIZE: "4" });
    expect(sized).toBe(explicit);
    expect(sized - libuvDefault).toBe(3);
  }, 60_000);
});
