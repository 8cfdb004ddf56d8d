import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import net from "node:net";
import { Redis } from "ioredis";

/** The Redis the tests use: REDIS_URL or the machine's local one. */
export const TEST_REDIS_URL = process.env.REDIS_URL?.trim() || "redis://127.0.0.1:6379";

/**
 * Whether Redis answers PING, decided synchronously (jest needs to know at collection time
 * whether to run or skip the suites).
 */
function redisReachable(url: string): boolean {
  const script = `
    const { Redis } = require("ioredis");
    const r = new Redis(process.argv[1], { lazyConnect: true, connectTimeout: 1500, maxRetriesPerRequest: 0, retryStrategy: () => null });
    r.on("error", () => {});
    r.connect().then(() => r.ping()).then((p) => { r.disconnect(); process.exit(p === "PONG" ? 0 : 1); }, () => process.exit(1));
  `;
  const result = spawnSync(process.execPath, ["-e", script, url], { cwd: __dirname, timeout: 5000, stdio: "ignore" });
  return result.status === 0;
}

export const redisAvailable = redisReachable(TEST_REDIS_URL);

/**
 * `describe` when Redis is reachable. When it is not: a failure if REQUIRE_SERVICES=1 (CI),
 * else the suite is skipped (the documented skip: Redis unreachable on a developer machine).
 */
export function describeWithRedis(name: string, body: () => void): void {
  if (redisAvailable) {
    describe(name, body);
  } else if (process.env.REQUIRE_SERVICES === "1") {
    describe(name, () => {
      it("needs Redis", () => {
        throw new Error(`Redis is not reachable at ${TEST_REDIS_URL} and REQUIRE_SERVICES=1`);
      });
    });
  } else {
    describe.skip(`${name} (skipped: Redis not reachable at ${TEST_REDIS_URL})`, body);
  }
}

/** A key prefix unique to this test run, so parallel runs and leftovers never collide. */
export const uniqueRedisPrefix = (): string => `media-test:${process.pid}:${randomUUID()}:`;

/** Deletes every key under `prefix`. */
export async function deleteRedisPrefix(prefix: string, url = TEST_REDIS_URL): Promise<void> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 500);
      if (keys.length) await redis.del(...keys);
      cursor = next;
    } while (cursor !== "0");
  } finally {
    redis.disconnect();
  }
}

export interface TcpProxy {
  url: string;
  /** Stops listening and cuts every open connection: Redis "goes down" for the client. */
  close(): Promise<void>;
}

/** A loopback TCP proxy to Redis: closing it simulates Redis dying without touching the real one. */
export async function startRedisProxy(target = TEST_REDIS_URL): Promise<TcpProxy> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(port || 6379), hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address() as net.AddressInfo;
  return {
    url: `redis://127.0.0.1:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}

/** A loopback port where nothing listens (bound, then released). */
export async function closedPortUrl(): Promise<string> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `redis://127.0.0.1:${port}`;
}
