import os from "node:os";
import path from "node:path";
import { Worker } from "node:worker_threads";
import type { RawImage } from "../types";
import type { PixelWorkers } from "../types";

export interface PixelWorkerOptions {
  /** Number of worker threads (started on demand). Default: os.availableParallelism(). */
  size?: number;
  /**
   * Extra modules (absolute paths, .ts or .js) whose `kernels` export is merged into every
   * worker's registry: a way to plug in kernels without touching the built-in table.
   */
  kernelModules?: string[];
  /** A kernel running longer than this is abandoned: its promise rejects and its worker is replaced. */
  taskTimeoutMs?: number;
}

export interface PixelWorkerStats {
  size: number;
  /** Live worker threads. */
  workers: number;
  busy: number;
  queued: number;
  completed: number;
  failed: number;
  /** Workers that died (crash, exit, timeout, abandoned task) and were replaced on demand. */
  replaced: number;
  /** Input buffers that could not be transferred (e.g. sharp's external memory) and were cloned. */
  cloned: number;
}

export interface PixelWorkerPool extends PixelWorkers {
  /**
   * The untyped transport under PixelWorkers.run: any kernel the workers loaded (built-in or from
   * kernelModules). An aborted `signal` drops a queued task or terminates the worker running it.
   */
  run(kernel: string, image: RawImage, params: unknown, signal?: AbortSignal): Promise<RawImage>;
  close(): Promise<void>;
  stats(): PixelWorkerStats;
}

/** A kernel threw, its worker died, it timed out, or the pool was closed. */
export class PixelKernelError extends Error {
  constructor(
    readonly kernel: string,
    message: string,
    readonly causeName?: string,
  ) {
    super(message);
    this.name = "PixelKernelError";
  }
}

interface Task {
  id: number;
  kernel: string;
  image: RawImage;
  params: unknown;
  resolve(image: RawImage): void;
  reject(error: Error): void;
  timer?: NodeJS.Timeout;
  signal?: AbortSignal;
  onAbort?: () => void;
}

interface Slot {
  worker: Worker;
  task?: Task;
  /** Being terminated: takes no new task. */
  retiring?: boolean;
  /** Kernels loaded; a task's time limit counts from here, not from thread start-up. */
  ready?: boolean;
}

type Reply =
  | { ready: true }
  | { id: number; ok: true; image: { data: Uint8Array; width: number; height: number; channels: 3 | 4 } }
  | { id: number; ok: false; error: { name: string; message: string } };

const WORKER_ENTRY = path.join(__dirname, "worker.cjs");

/**
 * A fixed-size pool of worker threads running the raw-pixel kernels of pixels/kernels, so
 * pixel work never blocks the event loop. Tasks queue when every worker is busy. Pixel
 * buffers go in the transfer list: the caller's buffer is detached by `run` (do not reuse
 * it) and results come back without a copy. A kernel that throws rejects its promise and
 * the worker carries on; a worker that dies rejects its task and is replaced.
 */
export function createPixelWorkers(options: PixelWorkerOptions = {}): PixelWorkerPool {
  const size = Math.max(1, Math.floor(options.size ?? os.availableParallelism()));
  const kernelModules = options.kernelModules ?? [];
  const slots = new Set<Slot>();
  const queue: Task[] = [];
  const counters = { completed: 0, failed: 0, replaced: 0, cloned: 0 };
  let nextId = 1;
  let closed = false;

  const settle = (slot: Slot, outcome: { image: RawImage } | { error: Error }): void => {
    const task = slot.task;
    if (!task) return;
    slot.task = undefined;
    clearTimeout(task.timer);
    if (task.onAbort) task.signal?.removeEventListener("abort", task.onAbort);
    // An idle worker must not keep the process alive.
    slot.worker.unref();
    if ("image" in outcome) {
      counters.completed++;
      task.resolve(outcome.image);
    } else {
      counters.failed++;
      task.reject(outcome.error);
    }
  };

  const spawn = (): Slot => {
    const worker = new Worker(WORKER_ENTRY, { workerData: { kernelModules } });
    const slot: Slot = { worker };
    worker.on("message", (reply: Reply) => {
      if ("ready" in reply) {
        slot.ready = true;
        if (slot.task) armTimeout(slot, slot.task);
        return;
      }
      if (!slot.task || reply.id !== slot.task.id) return;
      if (reply.ok) {
        const { data, width, height, channels } = reply.image;
        settle(slot, {
          image: { data: Buffer.from(data.buffer, data.byteOffset, data.byteLength), width, height, channels },
        });
      } else {
        settle(slot, { error: new PixelKernelError(slot.task.kernel, reply.error.message, reply.error.name) });
      }
      dispatch();
    });
    worker.on("error", (error) => {
      slot.retiring = true;
      const kernel = slot.task?.kernel ?? "(none)";
      settle(slot, { error: new PixelKernelError(kernel, `pixel worker failed: ${error.message}`, error.name) });
    });
    worker.on("exit", (code) => {
      slots.delete(slot);
      const kernel = slot.task?.kernel ?? "(none)";
      settle(slot, {
        error: new PixelKernelError(kernel, `pixel worker exited (code ${code}) while running "${kernel}"`),
      });
      if (!closed) {
        counters.replaced++;
        // Replacement is lazy: a new worker starts when a queued task needs one.
        dispatch();
      }
    });
    slots.add(slot);
    return slot;
  };

  const armTimeout = (slot: Slot, task: Task): void => {
    if (options.taskTimeoutMs === undefined) return;
    task.timer = setTimeout(() => {
      slot.retiring = true;
      settle(slot, {
        error: new PixelKernelError(task.kernel, `pixel kernel "${task.kernel}" exceeded ${options.taskTimeoutMs} ms`),
      });
      void slot.worker.terminate();
    }, options.taskTimeoutMs);
  };

  const start = (slot: Slot, task: Task): void => {
    slot.task = task;
    slot.worker.ref();
    if (slot.ready) armTimeout(slot, task);
    const { data, width, height, channels } = task.image;
    // A view into a larger buffer (e.g. Node's small-buffer pool) is copied so that
    // transferring it does not detach memory that belongs to someone else.
    const own =
      data.byteOffset === 0 && data.byteLength === data.buffer.byteLength
        ? data
        : Uint8Array.prototype.slice.call(data);
    const message = {
      id: task.id,
      kernel: task.kernel,
      image: { data: own, width, height, channels },
      params: task.params,
    };
    try {
      try {
        slot.worker.postMessage(message, [own.buffer as ArrayBuffer]);
      } catch (error) {
        // External memory (sharp's output buffers) cannot be detached: Node 20 clones it on its
        // own, Node 22+ throws DataCloneError. Either way it is sent as a copy.
        if ((error as { name?: unknown } | null)?.name !== "DataCloneError") throw error;
        slot.worker.postMessage(message);
      }
    } catch (error) {
      settle(slot, { error: error instanceof Error ? error : new Error(String(error)) });
      return;
    }
    if (own.buffer.byteLength !== 0) counters.cloned++;
  };

  const dispatch = (): void => {
    while (queue.length > 0 && !closed) {
      let idle: Slot | undefined;
      for (const slot of slots) {
        if (!slot.task && !slot.retiring) {
          idle = slot;
          break;
        }
      }
      let live = 0;
      for (const slot of slots) if (!slot.retiring) live++;
      if (!idle && live < size) idle = spawn();
      if (!idle) return;
      start(idle, queue.shift()!);
    }
  };

  return {
    run(kernel: string, image: RawImage, params: unknown, signal?: AbortSignal): Promise<RawImage> {
      if (closed) return Promise.reject(new PixelKernelError(kernel, "pixel worker pool is closed"));
      if (signal?.aborted) return Promise.reject(signal.reason);
      return new Promise<RawImage>((resolve, reject) => {
        const task: Task = { id: nextId++, kernel, image, params, resolve, reject, signal };
        if (signal) {
          // Nobody waits for the result any more: a queued task is dropped, a running one's
          // worker is terminated (a kernel cannot be interrupted otherwise) and replaced on demand.
          task.onAbort = () => {
            const queued = queue.indexOf(task);
            if (queued >= 0) {
              queue.splice(queued, 1);
              reject(signal.reason);
              return;
            }
            for (const slot of slots) {
              if (slot.task !== task) continue;
              slot.retiring = true;
              settle(slot, {
                error: signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason)),
              });
              void slot.worker.terminate();
            }
          };
          signal.addEventListener("abort", task.onAbort, { once: true });
        }
        queue.push(task);
        dispatch();
      });
    },
    stats() {
      let busy = 0;
      for (const slot of slots) if (slot.task) busy++;
      return { size, workers: slots.size, busy, queued: queue.length, ...counters };
    },
    async close() {
      closed = true;
      for (const task of queue.splice(0)) task.reject(new PixelKernelError(task.kernel, "pixel worker pool is closed"));
      await Promise.all([...slots].map((slot) => slot.worker.terminate()));
    },
  };
}
