import { Redis } from "ioredis";
import pino from "pino";
import { RedisCache } from "../src/cache/redis-cache";
import { deleteRedisPrefix, describeWithRedis, TEST_REDIS_URL, uniqueRedisPrefix } from "./support/redis";

/** Above the ~100k arguments a spread (`push(...members)`) takes before the stack overflows. */
const VARIANTS = 150_000;

describeWithRedis("purge of an asset with many variants", () => {
  const prefix = uniqueRedisPrefix();
  const redis = new Redis(TEST_REDIS_URL);
  const subscriber = new Redis(TEST_REDIS_URL);
  const cache = new RedisCache({
    url: TEST_REDIS_URL,
    keyPrefix: prefix,
    timeoutMs: 10_000,
    ttlSeconds: 600,
    maxEntryBytes: 1024,
    logger: pino({ level: "silent" }),
    metrics: { dependencyError: () => undefined },
  });

  afterAll(async () => {
    await cache.close();
    subscriber.disconnect();
    await deleteRedisPrefix(prefix);
    redis.disconnect();
  });

  it(`bumps the generation, broadcasts and deletes every stored result of an asset with ${VARIANTS} of them`, async () => {
    const assetId = "many-variants";
    // The key set lists the stored results' full keys, as RedisCache.set writes them.
    const members = Array.from({ length: VARIANTS }, (_, i) => `${prefix}r:0:/resize:width=${i + 1}/${assetId}.png`);
    for (let i = 0; i < members.length; i += 10_000) {
      const batch = members.slice(i, i + 10_000);
      const pipeline = redis.pipeline();
      pipeline.sadd(`${prefix}keys:${assetId}`, ...batch);
      for (const key of batch) pipeline.set(key, "image/png\nx", "EX", 600);
      await pipeline.exec();
    }
    expect(await redis.scard(`${prefix}keys:${assetId}`)).toBe(VARIANTS);

    const heard: string[] = [];
    await subscriber.subscribe(`${prefix}purge`);
    subscriber.on("message", (_channel: string, message: string) => heard.push(message));
    await cache.waitReady();

    await cache.purgeAssets([assetId]);

    expect(await redis.get(`${prefix}gen:${assetId}`)).toBe("1");
    for (let i = 0; i < 50 && heard.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(heard).toEqual([JSON.stringify([assetId])]);
    expect(await redis.exists(`${prefix}keys:${assetId}`)).toBe(0);
    let left = 0;
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}r:*`, "COUNT", 5000);
      left += keys.length;
      cursor = next;
    } while (cursor !== "0");
    expect(left).toBe(0);
  });
});
