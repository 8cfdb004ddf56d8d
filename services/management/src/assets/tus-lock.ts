import type { Lock, Locker, RequestRelease } from "@tus/utils" with { "resolution-mode": "import" };
import type Redis from "ioredis";
import { Mutex, TimeoutError } from "redis-semaphore";

/** How long a PATCH waits for another one of the same upload, on any replica, before 423. */
const ACQUIRE_TIMEOUT_MS = 30_000;
/** A lock refreshed while held; one whose holder died lapses after this. */
const LOCK_TIMEOUT_MS = 20_000;

/**
 * @tus/server's Locker over Redis (redis-semaphore's Mutex): two requests of one upload never
 * write at once, whichever replica each reaches. A waiting request does not ask the holder to
 * stop (there is no channel across replicas); the holder's request ends on its own.
 */
export class RedisUploadLocker implements Locker {
  constructor(private readonly redis: Redis) {}

  newLock(id: string): Lock {
    const mutex = new Mutex(this.redis, `tus-upload:${id}`, {
      acquireTimeout: ACQUIRE_TIMEOUT_MS,
      lockTimeout: LOCK_TIMEOUT_MS,
      retryInterval: 50,
      refreshInterval: LOCK_TIMEOUT_MS / 4,
    });
    return {
      lock: async (signal: AbortSignal, _release: RequestRelease) => {
        try {
          await mutex.acquire(signal);
        } catch (err) {
          // tus' own lock timeout is a 500; a busy upload is the client's to retry.
          if (err instanceof TimeoutError) throw { status_code: 423, body: "Another request is writing this upload\n" };
          throw err;
        }
      },
      unlock: async () => mutex.release(),
    };
  }
}
