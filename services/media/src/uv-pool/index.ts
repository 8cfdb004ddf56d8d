import { mediaEnvSchema, renderSlots } from "../config";

/** Threads libuv's pool gets beyond the render slots, so blob reads never wait for a whole render. */
export const UV_POOL_SPARE_THREADS = 4;

/**
 * libuv's pool runs both sharp's pipelines and every fs call. With MEDIA_CONCURRENCY renders
 * holding its threads, a blob read would wait for a whole render, so the pool gets
 * MEDIA_CONCURRENCY + 4 threads unless UV_THREADPOOL_SIZE is set. libuv reads the variable once,
 * when the pool starts, and loading sharp starts it. So this runs before any module loads sharp:
 * the entry point's first import is ./apply, and `pnpm start` (whose tsx loader starts the pool
 * before any of the service's code runs) sets it in the child's environment. Set later, as it
 * was until 2026-11-27, it changed nothing and the pool kept libuv's default of 4 threads.
 * An unreadable MEDIA_CONCURRENCY leaves the pool alone: the config load reports it.
 */
export function sizeUvPool(env: NodeJS.ProcessEnv = process.env): void {
  if (env.UV_THREADPOOL_SIZE) return;
  const configured = mediaEnvSchema.shape.MEDIA_CONCURRENCY.safeParse(env.MEDIA_CONCURRENCY);
  if (!configured.success) return;
  env.UV_THREADPOOL_SIZE = String(renderSlots(configured.data) + UV_POOL_SPARE_THREADS);
}
