import os from "node:os";
import path from "node:path";
import { Worker } from "node:worker_threads";
import { UndecodableImageError } from "@media-platform/contracts";
import { problem } from "../problem";

/**
 * Worker threads for the formats whose decoders run WebAssembly or draw for long on upload
 * (format-worker.cjs: HEVC, PDF pages, SVG sanitising), so an upload never blocks the event
 * loop. At most `size` threads, tasks beyond them queue; a thread is kept for the next task (the
 * decoders load once per thread) and terminated when a task passes its time limit, which is the
 * one way to stop WebAssembly mid-run. A task's time limit counts its own work: the clock starts
 * when the thread says the task's decoder is loaded (jsdom, pdf.js and libheif take 0.5-2 s to
 * load on a quiet machine, many times that on a loaded one), so a busy machine never turns a
 * small file into a refusal. Loading has its own, longer limit (START_TIMEOUT_MS).
 */

// Beside this file in sources (src/assets), beside index.js in the bundle (scripts/build.ts copies it).
const WORKER_ENTRY = path.join(__dirname, "format-worker.cjs");

export type FormatTask = "heic" | "pdf" | "svg";

/** How long a thread may take to load a task's decoder before the task is given up. */
export const START_TIMEOUT_MS = 120_000;

/** A task's decoder did not load within START_TIMEOUT_MS: the instance is overloaded, not the file at fault. */
export class FormatWorkerStartTimeoutError extends Error {
  constructor(
    readonly task: FormatTask,
    readonly timeoutMs: number,
  ) {
    super(`the ${task} decoder did not load within ${timeoutMs / 1000} s`);
    this.name = "FormatWorkerStartTimeoutError";
  }
}

/**
 * A format task's failure as the upload's answer: past its time limit the file is at fault (422
 * undecodable-image, `tookTooLong` names the work); a decoder that did not load, this instance
 * (503 uploads-busy, retry later). Anything else is passed on.
 */
export function formatTaskRefusal(err: unknown, tookTooLong: (seconds: number) => string): never {
  if (err instanceof FormatTaskTimeoutError) throw new UndecodableImageError(tookTooLong(err.timeoutMs / 1000));
  if (err instanceof FormatWorkerStartTimeoutError) {
    throw problem("uploads-busy", `This instance is too busy to read the file now (${err.message}); retry later`);
  }
  throw err;
}

/** A task ran past its time limit: its thread was terminated. */
export class FormatTaskTimeoutError extends Error {
  constructor(
    readonly task: FormatTask,
    readonly timeoutMs: number,
  ) {
    super(`${task} decoding took longer than ${timeoutMs} ms`);
    this.name = "FormatTaskTimeoutError";
  }
}

interface Pending {
  id: number;
  kind: FormatTask;
  input: unknown;
  timeoutMs: number;
  resolve(output: unknown): void;
  reject(err: Error): void;
}

interface Slot {
  worker: Worker;
  task?: Pending;
  timer?: NodeJS.Timeout;
}

export class FormatWorkers {
  private readonly slots = new Set<Slot>();
  private readonly queue: Pending[] = [];
  private nextId = 1;

  private readonly size: number;
  private readonly startTimeoutMs: number;
  private readonly entry: string;

  /** `entry`: the thread's script (the tests give a stand-in); the others as the fields above say. */
  constructor(options: { size?: number; startTimeoutMs?: number; entry?: string } = {}) {
    this.size = options.size ?? Math.max(1, Math.min(2, os.availableParallelism()));
    this.startTimeoutMs = options.startTimeoutMs ?? START_TIMEOUT_MS;
    this.entry = options.entry ?? WORKER_ENTRY;
  }

  /** Tasks running in a thread now (not those queued). */
  get running(): number {
    let running = 0;
    for (const slot of this.slots) if (slot.task) running++;
    return running;
  }

  run<T>(kind: FormatTask, input: unknown, timeoutMs: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ id: this.nextId++, kind, input, timeoutMs, resolve: resolve as (o: unknown) => void, reject });
      this.dispatch();
    });
  }

  async close(): Promise<void> {
    for (const task of this.queue.splice(0)) task.reject(new Error("the format workers are closed"));
    await Promise.all([...this.slots].map((slot) => this.retire(slot)));
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      let slot = [...this.slots].find((s) => !s.task);
      if (!slot) {
        if (this.slots.size >= this.size) return;
        slot = this.spawn();
      }
      const task = this.queue.shift()!;
      slot.task = task;
      slot.worker.ref();
      this.arm(
        slot,
        task,
        this.startTimeoutMs,
        () => new FormatWorkerStartTimeoutError(task.kind, this.startTimeoutMs),
      );
      slot.worker.postMessage({ id: task.id, kind: task.kind, input: task.input });
    }
  }

  private spawn(): Slot {
    const worker = new Worker(this.entry);
    const slot: Slot = { worker };
    worker.on("message", (reply: { id: number; started?: true; output?: unknown }) => {
      const task = slot.task;
      if (!task || task.id !== reply.id) return;
      clearTimeout(slot.timer);
      if (reply.started) {
        // The decoder is loaded: the task's own time limit starts now.
        this.arm(slot, task, task.timeoutMs, () => new FormatTaskTimeoutError(task.kind, task.timeoutMs));
        return;
      }
      slot.task = undefined;
      // An idle thread never keeps the process alive.
      worker.unref();
      task.resolve(reply.output);
      this.dispatch();
    });
    worker.on("error", (err) => {
      const task = slot.task;
      void this.retire(slot);
      task?.reject(err);
      this.dispatch();
    });
    worker.on("exit", () => {
      if (!this.slots.has(slot)) return;
      const task = slot.task;
      void this.retire(slot);
      task?.reject(new Error("a format worker exited"));
      this.dispatch();
    });
    this.slots.add(slot);
    return slot;
  }

  /** Past `ms`, the thread is terminated and the task rejected with `error()`. */
  private arm(slot: Slot, task: Pending, ms: number, error: () => Error): void {
    slot.timer = setTimeout(() => {
      void this.retire(slot);
      task.reject(error());
      this.dispatch();
    }, ms);
  }

  private async retire(slot: Slot): Promise<void> {
    if (!this.slots.delete(slot)) return;
    clearTimeout(slot.timer);
    slot.task = undefined;
    await slot.worker.terminate();
  }
}

/** The process's threads, started on the first HEIC, PDF or SVG upload. */
let shared: FormatWorkers | undefined;
export const formatWorkers = (): FormatWorkers => (shared ??= new FormatWorkers());
