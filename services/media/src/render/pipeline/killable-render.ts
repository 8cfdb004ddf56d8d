import { fork, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { formatOfMimeType } from "@media-platform/contracts";
import { FaceDetectionError } from "../../faces";
import { PixelKernelError } from "../pixels/pool";
import { render, type RenderCallOptions, type RenderDeps, type RenderFn } from "./render";
import { ImagePixelLimitError, TransformationInputError, UndecodableImageError } from "../errors";
import { OriginalSource } from "./original";
import type { RenderPlan } from "./plan";
import type { RenderInput, Rendition } from "./render";
import type { RenderProcessReply, RenderProcessRequest, RenderProcessSettings } from "./render-process-protocol";
import type { RenderStageSink } from "./render-stages";
import { inRenderProcessSpan } from "./render-process-span";

/** The pipeline's and the workers' errors, rebuilt from a render process's answer so app.ts maps them as usual. */
function reviveError(error: { name: string; message: string; [field: string]: unknown }): Error {
  let revived: Error;
  switch (error.name) {
    case "TransformationInputError":
      return new TransformationInputError(String(error.path), String(error.reason));
    case "ImagePixelLimitError":
      revived = new ImagePixelLimitError(Number(error.limitInputPixels), undefined, String(error.path));
      break;
    case "FaceDetectionError":
      return new FaceDetectionError(String(error.reason));
    case "PixelKernelError":
      return new PixelKernelError(String(error.kernel), error.message, error.causeName as string | undefined);
    case "UndecodableImageError":
      revived = new UndecodableImageError("");
      break;
    default:
      revived = new Error();
      revived.name = error.name;
  }
  revived.message = error.message;
  return revived;
}

/** A render process died or was closed while rendering. */
export class RenderProcessError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RenderProcessError";
  }
}

interface Task {
  request: RenderProcessRequest;
  signal: AbortSignal;
  onStep?: (transformation: string, seconds: number) => void;
  onStage?: RenderStageSink;
  resolve(rendition: Rendition): void;
  reject(err: unknown): void;
}

interface Slot {
  child: ChildProcess;
  ready: Promise<void>;
  task?: Task;
}

/**
 * Scheduling priority of the render processes (a nice value): their long renders yield the CPU to
 * the service process, whose small renders and cache hits then keep their latency under load.
 */
const RENDER_PROCESS_NICE = 10;

// Compiled (the media bundle's dist/render-process.js) or, from sources, through tsx.
const COMPILED_ENTRY = path.join(__dirname, "render-process.js");
const SOURCE_ENTRY = path.join(__dirname, "render-process.ts");

/**
 * Child processes that run renders which may outlive their deadline. A worker thread would not
 * do: libvips runs on the process's own threads, so only ending the process stops an encoder.
 * A render whose signal aborts (deadline, every client gone) has its process killed with
 * SIGKILL at once, and a new process is started on demand. FIFO beyond `size` renders.
 */
export class RenderProcessPool {
  private readonly slots = new Set<Slot>();
  private readonly queue: Task[] = [];
  private nextId = 1;
  private closed = false;
  /** Processes killed at a deadline or an abort (tests, metrics). */
  killed = 0;

  constructor(
    readonly size: number,
    private readonly settings: RenderProcessSettings,
  ) {}

  /** Pids of the live render processes. */
  get pids(): number[] {
    return [...this.slots].map((slot) => slot.child.pid!).filter((pid) => pid !== undefined);
  }

  render(
    input: Omit<RenderInput, "original">,
    original: Buffer,
    options: Pick<RenderCallOptions, "signal" | "deadline" | "onStep" | "onStage">,
  ): Promise<Rendition> {
    const { signal } = options;
    if (signal.aborted) return Promise.reject(signal.reason);
    if (this.closed) return Promise.reject(new RenderProcessError("the render processes are closed"));
    return new Promise<Rendition>((resolve, reject) => {
      const task: Task = {
        request: {
          id: this.nextId++,
          input,
          original,
          deadline: options.deadline || undefined,
          ...(options.onStage && { stages: true }),
        },
        signal,
        onStep: options.onStep,
        onStage: options.onStage,
        resolve,
        reject,
      };
      signal.addEventListener("abort", () => this.abort(task), { once: true });
      this.queue.push(task);
      this.dispatch();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const task of this.queue.splice(0)) task.reject(new RenderProcessError("the render processes are closed"));
    await Promise.all(
      [...this.slots].map((slot) => this.kill(slot, new RenderProcessError("the render processes are closed"))),
    );
  }

  private abort(task: Task): void {
    const queued = this.queue.indexOf(task);
    if (queued >= 0) {
      this.queue.splice(queued, 1);
      task.reject(task.signal.reason);
      return;
    }
    const slot = [...this.slots].find((s) => s.task === task);
    if (!slot) return;
    // The only way to stop libvips mid-encode: the process goes, its CPU with it.
    this.killed++;
    void this.kill(slot, task.signal.reason);
    this.dispatch();
  }

  private kill(slot: Slot, reason: unknown): Promise<void> {
    this.slots.delete(slot);
    const task = slot.task;
    slot.task = undefined;
    task?.reject(reason);
    const child = slot.child;
    if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGKILL");
    return exited;
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      let slot = [...this.slots].find((s) => s.task === undefined);
      if (!slot) {
        if (this.slots.size >= this.size) return;
        slot = this.spawn();
      }
      const task = this.queue.shift()!;
      slot.task = task;
      const busy = slot;
      busy.child.ref();
      busy.ready.then(
        () => {
          if (busy.task === task) busy.child.send(task.request);
        },
        (err: unknown) => {
          if (busy.task === task) void this.kill(busy, err);
          this.dispatch();
        },
      );
    }
  }

  private spawn(): Slot {
    const compiled = existsSync(COMPILED_ENTRY);
    const child = fork(compiled ? COMPILED_ENTRY : SOURCE_ENTRY, [], {
      execArgv: compiled ? [] : ["--import", "tsx"],
      serialization: "advanced",
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    child.send({ settings: this.settings });
    try {
      if (child.pid !== undefined) os.setPriority(child.pid, RENDER_PROCESS_NICE);
    } catch {
      // Not permitted here (some containers): the processes keep the service's priority.
    }
    let markReady!: () => void;
    let failStart!: (err: Error) => void;
    const slot: Slot = {
      child,
      ready: new Promise<void>((resolve, reject) => ((markReady = resolve), (failStart = reject))),
    };
    // An unhandled start failure is reported through the task that waits for it.
    slot.ready.catch(() => undefined);
    child.on("message", (reply: RenderProcessReply) => {
      if ("ready" in reply) return markReady();
      const task = slot.task;
      if (!task || task.request.id !== reply.id) return;
      if ("step" in reply) return task.onStep?.(reply.step.transformation, reply.step.seconds);
      if ("stage" in reply) return task.onStage?.(reply.stage);
      slot.task = undefined;
      // Idle: the process never keeps the service alive on its own.
      child.unref();
      if ("rendition" in reply) {
        const r = reply.rendition;
        task.resolve({ ...r, data: Buffer.from(r.data.buffer, r.data.byteOffset, r.data.byteLength) });
      } else {
        task.reject(reviveError(reply.error));
      }
      this.dispatch();
    });
    child.once("exit", (code, signal) => {
      const err = new RenderProcessError(`a render process exited (${signal ?? `code ${code}`})`);
      failStart(err);
      if (this.slots.has(slot)) void this.kill(slot, err);
      this.dispatch();
    });
    this.slots.add(slot);
    return slot;
  }
}

/** Thrown through the in-process render's admission to take the render elsewhere; never leaves isolatingRender. */
class RenderDiverted extends Error {
  constructor(readonly plan: RenderPlan) {
    super("diverted to a render process");
  }
}

/**
 * Renders whose planned cost (RenderPlan.workCost, estimated CPU ms) reaches `minCost`, and every
 * page of a PDF, run in a render process that is killed at their deadline; every other render stays on `inProcess`, the
 * same call as without isolation (no extra hop for the small renders that make most MISSes).
 * The plan comes from the original's stored header: an original without one stays in process.
 */
export function isolatingRender(deps: RenderDeps, pool: RenderProcessPool, minCost: number): RenderFn {
  const inProcess: RenderFn = (input, options) => render(input, deps, options);
  return async (input, options) => {
    if (!input.header) return inProcess(input, options);
    // The in-process render plans from the header (reading no byte of the original) and asks to be
    // admitted: a costly plan leaves there. Its close must not end a stream the process still needs.
    const shared = shareable(input.original);
    try {
      return await inProcess(
        { ...input, original: shared.original },
        {
          ...options,
          admit: async (plan) => {
            // A PDF page is drawn by pdf.js, whose time no plan bounds: always in a process that can be killed.
            if (plan.workCost >= minCost || formatOfMimeType(input.contentType) === "pdf") {
              shared.divert();
              throw new RenderDiverted(plan);
            }
            shared.admitted();
            return options.admit ? options.admit(plan) : () => undefined;
          },
        },
      );
    } catch (err) {
      if (!(err instanceof RenderDiverted)) throw err;
      const release = await options.admit?.(err.plan);
      const source = new OriginalSource(shared.rest());
      try {
        options.signal.throwIfAborted();
        const bytes = await source.all();
        const { original: _original, ...rest } = input;
        return await inRenderProcessSpan(options, (onStage) => pool.render(rest, bytes, { ...options, onStage }));
      } finally {
        release?.();
        await source.close();
      }
    }
  };
}

/**
 * The original, handed to the in-process render such that a diverted render can still read all of
 * it: what the in-process render read before admission (an SVG, read whole to price its elements)
 * is kept until admission decides, and replayed first to a diverted render.
 */
function shareable(original: RenderInput["original"]) {
  if (Buffer.isBuffer(original) || !(Symbol.asyncIterator in original)) {
    return { original, divert: () => undefined, admitted: () => undefined, rest: () => original };
  }
  let iterator: AsyncIterator<Buffer> | undefined;
  let diverted = false;
  let read: Buffer[] | undefined = [];
  const iterate = () => (iterator ??= (original as AsyncIterable<Buffer>)[Symbol.asyncIterator]());
  const guarded: AsyncIterable<Buffer> = {
    [Symbol.asyncIterator]: () => ({
      next: async () => {
        const chunk = await iterate().next();
        if (!chunk.done) read?.push(chunk.value);
        return chunk;
      },
      return: async (value?: unknown) =>
        diverted ? { done: true, value: undefined } : (iterate().return?.(value) ?? { done: true, value: undefined }),
    }),
  };
  return {
    original: guarded,
    divert: () => (diverted = true),
    /** Admitted in process: nothing is replayed, so nothing is kept. */
    admitted: () => (read = undefined),
    rest: (): AsyncIterable<Buffer> => {
      const replay = read ?? [];
      read = undefined;
      return {
        async *[Symbol.asyncIterator]() {
          let done = false;
          try {
            yield* replay;
            for (let chunk = await iterate().next(); !chunk.done; chunk = await iterate().next()) yield chunk.value;
            done = true;
          } finally {
            // Closed early (an abort): the store's stream is closed as before.
            if (!done) await iterate().return?.();
          }
        },
      };
    },
  };
}
