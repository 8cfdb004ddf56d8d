import { DomainError } from "@media-platform/contracts";

/**
 * The transformation queue is full: answered 503 with Retry-After. The answer says only that;
 * the slots and queue limit stay fields, for the logs.
 */
export class QueueFullError extends DomainError<"overloaded"> {
  readonly code = "overloaded";

  constructor(
    readonly concurrency: number,
    readonly queueLimit: number,
  ) {
    super("Too many transformations are running or waiting; retry shortly");
    this.name = "QueueFullError";
  }
}

interface Waiter {
  start: () => void;
}

/** The transformation slot a task of Limiter.run holds. */
export interface Slot {
  /**
   * Gives the slot up while `wait` runs (a request parked until the work gate admits it), then
   * takes one back ahead of the queue. The parked request counts against the queue limit:
   * QueueFullError at once when it is full. When `wait` rejects, the slot stays given up.
   */
  yieldWhile<T>(wait: () => Promise<T>): Promise<T>;
}

/**
 * Bounded concurrency with a bounded FIFO queue (MEDIA_CONCURRENCY, MEDIA_QUEUE_LIMIT).
 * A slot is held until the task really settles, so an abandoned (timed-out) request never
 * lets more than `concurrency` transformations run at once. A task may park without its slot
 * (Slot.yieldWhile); parked tasks count as waiting.
 */
export class Limiter {
  private running = 0;
  private parked = 0;
  private readonly queue: Waiter[] = [];

  constructor(
    readonly concurrency: number,
    readonly queueLimit: number,
  ) {}

  get active(): number {
    return this.running;
  }

  /** Requests waiting for a slot, and parked ones. */
  get waiting(): number {
    return this.queue.length + this.parked;
  }

  /** Runs `task` in a slot; rejects with QueueFullError at once when no slot or queue place is free. */
  run<T>(task: (slot: Slot) => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.running < this.concurrency) return this.execute(task);
    if (this.waiting >= this.queueLimit) return Promise.reject(new QueueFullError(this.concurrency, this.queueLimit));
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => {
        const i = this.queue.indexOf(waiter);
        if (i >= 0) this.queue.splice(i, 1);
        reject(signal!.reason);
      };
      const waiter: Waiter = {
        start: () => {
          signal?.removeEventListener("abort", onAbort);
          this.execute(task).then(resolve, reject);
        },
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.queue.push(waiter);
    });
  }

  private async execute<T>(task: (slot: Slot) => Promise<T>): Promise<T> {
    this.running++;
    let held = true;
    const giveUp = () => {
      held = false;
      this.running--;
      this.queue.shift()?.start();
    };
    const slot: Slot = {
      yieldWhile: async <U>(wait: () => Promise<U>): Promise<U> => {
        if (this.waiting >= this.queueLimit) throw new QueueFullError(this.concurrency, this.queueLimit);
        giveUp();
        this.parked++;
        let value: U;
        try {
          value = await wait();
        } finally {
          this.parked--;
        }
        // Back ahead of every queued request: this one was admitted before them. The slot is
        // taken when it is handed over, so no request arriving meanwhile can take it.
        if (this.running < this.concurrency) this.running++;
        else
          await new Promise<void>((resume) =>
            this.queue.unshift({
              start: () => {
                this.running++;
                resume();
              },
            }),
          );
        held = true;
        return value;
      },
    };
    try {
      return await task(slot);
    } finally {
      if (held) giveUp();
    }
  }
}

/** A light request is at most this fraction of the capacity (a 150 M capacity: 2.3 MP, a web-sized image). */
const LIGHT_REQUEST_SHARE = 1 / 64;
/**
 * A request of at most this estimated CPU time (RenderPlan.workCost) is light whatever its
 * pixels: a thumbnail of a 12 MP photo reads many pixels but costs a few milliseconds.
 */
export const LIGHT_REQUEST_COST_MS = 50;
/** The light lane's own part of the capacity: room for several light renders beside any heavy work. */
const LIGHT_LANE_SHARE = 1 / 8;

/**
 * Bounds the pixels being processed at once across requests (MEDIA_MAX_INFLIGHT_PIXELS): a
 * render acquires its planned work (RenderPlan.workPixels) before decoding and releases it when
 * done, so memory follows the work in flight rather than the number of requests. Two lanes, so a
 * small request is never queued behind a large one: light requests (at most 1/64 of the
 * capacity, or estimated at most LIGHT_REQUEST_COST_MS) share 1/8 of it, the rest is the heavy
 * lane's, and at most `heavyLimit` heavy renders run at once, so slots stay free for light ones.
 * A heavy request that must wait gives its transformation slot up meanwhile (Slot.yieldWhile)
 * and counts against the queue limit instead. Within a lane FIFO, no overtaking (a large request
 * is never starved by smaller ones); a request larger than its lane runs alone in it.
 */
export class WorkGate {
  private readonly light: WorkLane;
  private readonly heavy: WorkLane;
  private readonly lightLimit: number;

  constructor(
    readonly capacity: number,
    readonly heavyLimit = Number.POSITIVE_INFINITY,
  ) {
    const lightCapacity = Math.floor(capacity * LIGHT_LANE_SHARE);
    this.lightLimit = Math.floor(capacity * LIGHT_REQUEST_SHARE);
    this.light = new WorkLane(lightCapacity, Number.POSITIVE_INFINITY);
    this.heavy = new WorkLane(Math.max(1, capacity - lightCapacity), heavyLimit);
  }

  /** Pixels currently admitted, both lanes. */
  get inFlight(): number {
    return this.light.inFlight + this.heavy.inFlight;
  }

  /** Heavy renders admitted now. */
  get heavyRunning(): number {
    return this.heavy.holders;
  }

  /**
   * Resolves with the release once `weight` fits its lane; rejects with the signal's reason when
   * aborted first. `costMs`: the request's estimated CPU time; at most LIGHT_REQUEST_COST_MS
   * makes it light whatever its weight. `slot`: the caller's transformation slot, given up while
   * a heavy request waits (QueueFullError when the queue is full).
   */
  acquire(weight: number, signal?: AbortSignal, costMs?: number, slot?: Slot): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const light = weight <= this.lightLimit || (costMs !== undefined && costMs <= LIGHT_REQUEST_COST_MS);
    const lane = light ? this.light : this.heavy;
    const now = lane.tryTake(weight);
    if (now) return Promise.resolve(now);
    if (!light && slot) return slot.yieldWhile(() => lane.acquire(weight, signal));
    return lane.acquire(weight, signal);
  }
}

/** One FIFO lane of the WorkGate. */
class WorkLane {
  private held = 0;
  private holding = 0;
  private readonly queue: Array<{ weight: number; start: () => void }> = [];

  /** `maxHolders`: requests admitted at once, whatever their pixels. */
  constructor(
    readonly capacity: number,
    readonly maxHolders: number,
  ) {}

  /** Pixels currently admitted. */
  get inFlight(): number {
    return this.held;
  }

  /** Requests currently admitted. */
  get holders(): number {
    return this.holding;
  }

  /** The release when `weight` fits now and nobody waits before it; undefined otherwise. */
  tryTake(weight: number): (() => void) | undefined {
    return this.queue.length === 0 && this.fits(weight) ? this.take(weight) : undefined;
  }

  /** Resolves with the release once `weight` fits; rejects with the signal's reason when aborted first. */
  acquire(weight: number, signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const now = this.tryTake(weight);
    if (now) return Promise.resolve(now);
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        const i = this.queue.indexOf(waiter);
        if (i >= 0) this.queue.splice(i, 1);
        reject(signal!.reason);
        this.drain();
      };
      const waiter = {
        weight,
        start: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve(this.take(weight));
        },
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.queue.push(waiter);
    });
  }

  private fits(weight: number): boolean {
    return this.held === 0 || (this.holding < this.maxHolders && this.held + weight <= this.capacity);
  }

  private take(weight: number): () => void {
    this.held += weight;
    this.holding++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.held -= weight;
      this.holding--;
      this.drain();
    };
  }

  private drain(): void {
    while (this.queue.length > 0 && this.fits(this.queue[0]!.weight)) this.queue.shift()!.start();
  }
}
