/**
 * Chaos: a private redis-server is stopped (SIGKILL) and restarted mid-load while the media
 * service runs as a real process. Every response must still be 200 with exactly the bytes of a
 * reference render. Runs with REQUIRE_SERVICES=1 (the services-mode CI pass); skipped otherwise.
 * It never touches the machine's shared Redis: its own redis-server on a free port.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { parseMediaPath } from "@media-platform/contracts";
import { FilesystemBlobStore, originalKey } from "@media-platform/storage";
import { pipelineRender } from "./support/media-server";
import { freePort } from "../../../test/support/net";

const REPO = path.resolve(__dirname, "..", "..", "..");
const FIXTURES = path.join(REPO, "fixtures", "images");
const hasRedisServer = spawnSync("redis-server", ["--version"], { stdio: "ignore" }).status === 0;
const required = process.env.REQUIRE_SERVICES === "1";
const describeChaos = required ? describe : describe.skip;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, check: () => Promise<boolean>, attempts = 300): Promise<void> {
  for (let i = 0; i < attempts; i++) {
    if (await check().catch(() => false)) return;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}`);
}

const redisPing = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("error", () => resolve(false));
    socket.once("connect", () => socket.write("PING\r\n"));
    socket.once("data", (d) => {
      socket.destroy();
      resolve(d.toString().startsWith("+PONG"));
    });
  });

const redisCommand = (port: number, command: string) =>
  new Promise<string>((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("error", reject);
    socket.once("connect", () => socket.write(`${command}\r\n`));
    socket.once("data", (d) => {
      socket.destroy();
      resolve(d.toString());
    });
  });

function startRedis(port: number): ChildProcess {
  return spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], {
    stdio: "ignore",
  });
}

async function stop(child: ChildProcess | undefined, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill(signal);
  await exited;
}

describeChaos("media under a Redis restart (real processes, private redis-server)", () => {
  if (!hasRedisServer) {
    it("needs redis-server", () => {
      throw new Error("redis-server is not installed and REQUIRE_SERVICES=1");
    });
    return;
  }

  const dir = mkdtempSync(path.join(os.tmpdir(), "media-chaos-"));
  let redis: ChildProcess | undefined;
  let media: ChildProcess | undefined;
  let redisPort = 0;
  let base = "";
  const urls: string[] = [];
  const reference = new Map<string, Buffer>();

  beforeAll(async () => {
    const store = new FilesystemBlobStore(path.join(dir, "blobs"));
    const assets = [
      { id: "6f1c2f4e-8a39-4d6b-9f3e-0c1d2e3f4a5b", file: "astronaut.png", type: "image/png", ext: "png" },
      { id: "7a2d3e4f-9b4a-4e7c-8a4f-1d2e3f4a5b6c", file: "rocket.jpg", type: "image/jpeg", ext: "jpg" },
    ];
    for (const a of assets) await store.put(originalKey(a.id), readFileSync(path.join(FIXTURES, a.file)), a.type);
    for (const a of assets) {
      for (let size = 60; size < 72; size++) urls.push(`/thumbnail:size=${size}/${a.id}.${a.ext}`);
      urls.push(`/crop:width=120:height=90/grayscale/${a.id}.${a.ext}`);
      urls.push(`/fit:width=90:height=60:background=ff0000/${a.id}.${a.ext}`);
    }
    // The reference: the same pipeline, rendered in this process without any cache.
    const renderRef = pipelineRender();
    for (const url of urls) {
      const a = assets.find((x) => url.includes(x.id))!;
      const result = await renderRef(
        {
          original: readFileSync(path.join(FIXTURES, a.file)),
          contentType: a.type,
          steps: parseMediaPath(url).steps,
          cacheKey: url,
        },
        { signal: new AbortController().signal, deadline: Date.now() + 60_000 },
      );
      reference.set(url, result.data);
    }

    redisPort = await freePort();
    redis = startRedis(redisPort);
    await until("redis-server", () => redisPing(redisPort));

    const mediaPort = await freePort();
    base = `http://127.0.0.1:${mediaPort}`;
    media = spawn(process.execPath, ["--import", "tsx", path.join(REPO, "services/media/src/index.ts")], {
      cwd: REPO,
      env: {
        ...process.env,
        MEDIA_PORT: String(mediaPort),
        HOST: "127.0.0.1",
        STORAGE_DRIVER: "fs",
        STORAGE_DIR: path.join(dir, "blobs"),
        REDIS_URL: `redis://127.0.0.1:${redisPort}`,
        REDIS_KEY_PREFIX: "chaos:",
        REDIS_COMMAND_TIMEOUT_MS: "200",
        // No in-process tier: every request goes through Redis (or finds it down).
        CACHE_MEMORY_BYTES: "0",
        LOG_LEVEL: "silent",
      },
      stdio: "ignore",
    });
    await until("media /healthz", async () => (await fetch(`${base}/healthz`)).status === 200);
  });

  afterAll(async () => {
    await stop(media);
    await stop(redis);
    rmSync(dir, { recursive: true, force: true });
  });

  it("answers every request 200 with the reference bytes while Redis dies and comes back", async () => {
    type Outcome = { phase: string; url: string; status: number; body: Buffer };
    const outcomes: Outcome[] = [];
    let phase = "up";
    let running = true;
    const loop = async (offset: number) => {
      for (let i = offset; running; i++) {
        const url = urls[i % urls.length]!;
        const at = phase;
        const res = await fetch(`${base}${url}`);
        outcomes.push({ phase: at, url, status: res.status, body: Buffer.from(await res.arrayBuffer()) });
      }
    };
    const loops = [0, 7, 13, 21].map((o) => loop(o));

    await sleep(1500);
    phase = "down";
    await stop(redis, "SIGKILL");
    await sleep(2500);
    phase = "restarted";
    redis = startRedis(redisPort);
    await until("redis-server restart", () => redisPing(redisPort));
    await sleep(2500);
    running = false;
    await Promise.all(loops);

    const wrong = outcomes.filter((o) => o.status !== 200 || !o.body.equals(reference.get(o.url)!));
    expect(wrong.map((o) => `${o.phase} ${o.url} ${o.status}`)).toEqual([]);
    for (const p of ["up", "down", "restarted"])
      expect(outcomes.filter((o) => o.phase === p).length).toBeGreaterThan(0);

    // Back up, the service uses Redis again: results written to the fresh server.
    await until("results stored in the restarted Redis", async () => {
      await fetch(`${base}${urls[0]}?after-restart=${Date.now()}`);
      return Number((await redisCommand(redisPort, "DBSIZE")).replace(/^:/, "")) > 0;
    });
    const metrics = await (await fetch(`${base}/metrics`)).text();
    const redisErrors = /dependency_errors_total\{[^}]*dependency="redis"[^}]*\} (\d+)/.exec(metrics);
    expect(Number(redisErrors?.[1])).toBeGreaterThan(0);
  });
});
