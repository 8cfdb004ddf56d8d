import os from "node:os";
import path from "node:path";
import { Worker } from "node:worker_threads";

/**
 * Worker threads for the formats whose decoders run WebAssembly or draw for long on upload
 * (format-worker.cjs: HEVC, PDF pages, SVG sanitising), so an upload never blocks the event
 * loop. At most `size` threads, tasks beyond them queue; a thread is kept for the next task (the
 * decoders load once per thread) and terminated when a task passes its time limit, which is the
 * one way to stop WebAssembly mid-run.
 */

// Beside this file in sources (src/assets), beside index.js in the bundle (scripts/build.ts copies it).
const WORKER_ENTRY = path.join(__dirname, "format-worker.cjs");

export type FormatTask = "heic" | "pdf" | "svg";

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

  constructor(private readonly size = Math.max(1, Math.min(2, os.availableParallelism()))) {}

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
      slot.timer = setTimeout(() => {
        void this.retire(slot);
        task.reject(new FormatTaskTimeoutError(task.kind, task.timeoutMs));
        this.dispatch();
      }, task.timeoutMs);
      slot.worker.postMessage({ id: task.id, kind: task.kind, input: task.input });
    }
  }

  private spawn(): Slot {
    const worker = new Worker(WORKER_ENTRY);
    const slot: Slot = { worker };
    worker.on("message", (reply: { id: number; output: unknown }) => {
      const task = slot.task;
      if (!task || task.id !== reply.id) return;
      clearTimeout(slot.timer);
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
