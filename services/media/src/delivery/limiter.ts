/** The transformation queue is full: answered 503 with Retry-After. */
export class QueueFullError extends Error {
  constructor(
    readonly concurrency: number,
    readonly queueLimit: number,
  ) {
    super(`all ${concurrency} transformation slots are busy and ${queueLimit} requests are already waiting`);
    this.name = "QueueFullError";
  }
}

interface Waiter {
  start: () => void;
}

/**
 * Bounded concurrency with a bounded FIFO queue (MEDIA_CONCURRENCY, MEDIA_QUEUE_LIMIT).
 * A slot is held until the task really settles, so an abandoned (timed-out) request never
 * lets more than `concurrency` transformations run at once.
 */
export class Limiter {
  private running = 0;
  private readonly queue: Waiter[] = [];

  constructor(
    readonly concurrency: number,
    readonly queueLimit: number,
  ) {}

  get active(): number {
    return this.running;
  }

  get waiting(): number {
    return this.queue.length;
  }

  /** Runs `task` in a slot; rejects with QueueFullError at once when no slot or queue place is free. */
  run<T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.running < this.concurrency) return this.execute(task);
    if (this.queue.length >= this.queueLimit)
      return Promise.reject(new QueueFullError(this.concurrency, this.queueLimit));
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

  private async execute<T>(task: () => Promise<T>): Promise<T> {
    this.running++;
    try {
      return await task();
    } finally {
      this.running--;
      this.queue.shift()?.start();
    }
  }
}

/** The heavy lane holds this many requests, running and waiting; more are refused (503 + Retry-After). */
export class HeavyLaneFullError extends QueueFullError {
  constructor(readonly heavyLimit: number) {
    super(heavyLimit, 0);
    this.message = `${heavyLimit} large transformations are already running or waiting`;
    this.name = "HeavyLaneFullError";
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
 * capacity) share 1/8 of it, the rest is the heavy lane's. Within a lane FIFO, no overtaking (a
 * large request is never starved by smaller ones); a request larger than its lane runs alone in it.
 */
export class WorkGate {
  private readonly light: WorkLane;
  private readonly heavy: WorkLane;
  private readonly lightLimit: number;

  private heavyInProgress = 0;

  /**
   * `heavyLimit`: heavy requests running or waiting at once; beyond it HeavyLaneFullError at
   * once. Waiting heavy requests hold their transformation slot (Limiter), so this keeps slots
   * free for light ones.
   */
  constructor(
    readonly capacity: number,
    readonly heavyLimit = Number.POSITIVE_INFINITY,
  ) {
    const lightCapacity = Math.floor(capacity * LIGHT_LANE_SHARE);
    this.lightLimit = Math.floor(capacity * LIGHT_REQUEST_SHARE);
    this.light = new WorkLane(lightCapacity);
    this.heavy = new WorkLane(Math.max(1, capacity - lightCapacity));
  }

  /** Pixels currently admitted, both lanes. */
  get inFlight(): number {
    return this.light.inFlight + this.heavy.inFlight;
  }

  /**
   * Resolves with the release once `weight` fits its lane; rejects with the signal's reason when
   * aborted first. `costMs`: the request's estimated CPU time; at most LIGHT_REQUEST_COST_MS
   * makes it light whatever its weight.
   */
  acquire(weight: number, signal?: AbortSignal, costMs?: number): Promise<() => void> {
    if (weight <= this.lightLimit || (costMs !== undefined && costMs <= LIGHT_REQUEST_COST_MS))
      return this.light.acquire(weight, signal);
    if (this.heavyInProgress >= this.heavyLimit) return Promise.reject(new HeavyLaneFullError(this.heavyLimit));
    this.heavyInProgress++;
    let done = false;
    const leave = () => {
      if (done) return;
      done = true;
      this.heavyInProgress--;
    };
    return this.heavy.acquire(weight, signal).then(
      (release) => () => {
        release();
        leave();
      },
      (err: unknown) => {
        leave();
        throw err;
      },
    );
  }
}

/** One FIFO lane of the WorkGate. */
class WorkLane {
  private held = 0;
  private readonly queue: Array<{ weight: number; start: () => void }> = [];

  constructor(readonly capacity: number) {}

  /** Pixels currently admitted. */
  get inFlight(): number {
    return this.held;
  }

  /** Resolves with the release once `weight` fits; rejects with the signal's reason when aborted first. */
  acquire(weight: number, signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.queue.length === 0 && this.fits(weight)) return Promise.resolve(this.take(weight));
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
    return this.held === 0 || this.held + weight <= this.capacity;
  }

  private take(weight: number): () => void {
    this.held += weight;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.held -= weight;
      this.drain();
    };
  }

  private drain(): void {
    while (this.queue.length > 0 && this.fits(this.queue[0]!.weight)) this.queue.shift()!.start();
  }
}
