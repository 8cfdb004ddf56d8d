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

/** A light request is at most this fraction of the capacity (a 150 M capacity: 2.3 MP held, a web-sized decode). */
const LIGHT_REQUEST_SHARE = 1 / 64;
/**
 * A request of at most this estimated CPU time (RenderPlan.workCost) is light whatever its
 * pixels: a crop of a 12 MP photo holds its decode but costs a few milliseconds.
 */
export const LIGHT_REQUEST_COST_MS = 50;
/** The light lane's reserve: room for several light renders beside any heavy work. */
const LIGHT_LANE_SHARE = 1 / 8;

/**
 * Who a request is charged to, for the per-client share (client-share.ts): the gate orders its
 * waiters by it and refuses a client beyond its share while other clients wait.
 */
export interface WorkParty {
  /** Within its share with `weight` more admitted: served before requests of clients beyond theirs. */
  withinShare(weight: number): boolean;
  /** Throws (429) when the request may not wait: its client is beyond its share while another client waits. */
  mayWait(weight: number): void;
  /** The request waits in the gate; returns the end of its wait. */
  waits(weight: number): () => void;
  /** The request is admitted; returns its release. */
  admitted(weight: number): () => void;
}

interface GateWaiter {
  weight: number;
  party: WorkParty | undefined;
  start: () => void;
}

/** One FIFO lane of the WorkGate: the pixels and requests it holds, and its waiters. */
interface Lane {
  held: number;
  holding: number;
  readonly queue: GateWaiter[];
}

/**
 * Bounds the pixels held in memory at once across renders (MEDIA_MAX_INFLIGHT_PIXELS): a render
 * acquires what it holds at its peak (RenderPlan.heldPixels, its decode at the decoder's scale and
 * its intermediate images) before decoding and releases it when done. Two lanes, so a small
 * request is never queued behind a large one: light requests (at most 1/64 of the capacity, or
 * estimated at most LIGHT_REQUEST_COST_MS) have 1/8 of it reserved, the rest is the heavy lane's,
 * and at most `heavyLimit` heavy renders run at once, so slots stay free for light ones.
 *
 * Work-conserving: room idle in the heavy lane is lent to light requests while no heavy request
 * waits, and a request larger than its lane runs once its lane holds nothing, so renders that fit
 * in the capacity together are never run one after the other. A heavy request that must wait
 * gives its transformation slot up meanwhile (Slot.yieldWhile) and counts against the queue limit
 * instead. Within a lane FIFO, no overtaking (a large request is never starved by smaller ones),
 * except that a request whose client is within its share (WorkParty) goes before those of
 * clients beyond theirs.
 */
export class WorkGate {
  private readonly light: Lane = { held: 0, holding: 0, queue: [] };
  private readonly heavy: Lane = { held: 0, holding: 0, queue: [] };
  private readonly lightReserve: number;
  private readonly lightLimit: number;

  constructor(
    readonly capacity: number,
    readonly heavyLimit = Number.POSITIVE_INFINITY,
  ) {
    this.lightReserve = Math.floor(capacity * LIGHT_LANE_SHARE);
    this.lightLimit = Math.floor(capacity * LIGHT_REQUEST_SHARE);
  }

  /** Pixels currently admitted, both lanes. */
  get inFlight(): number {
    return this.light.held + this.heavy.held;
  }

  /** Heavy renders admitted now. */
  get heavyRunning(): number {
    return this.heavy.holding;
  }

  /** Requests waiting, both lanes. */
  get waiting(): number {
    return this.light.queue.length + this.heavy.queue.length;
  }

  /**
   * Resolves with the release once `weight` fits its lane; rejects with the signal's reason when
   * aborted first. `costMs`: the request's estimated CPU time; at most LIGHT_REQUEST_COST_MS
   * makes it light whatever its weight. `slot`: the caller's transformation slot, given up while
   * a heavy request waits (QueueFullError when the queue is full). `party`: the client it is
   * charged to (ClientShareExceededError when it may not wait).
   */
  acquire(weight: number, signal?: AbortSignal, costMs?: number, slot?: Slot, party?: WorkParty): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const light = weight <= this.lightLimit || (costMs !== undefined && costMs <= LIGHT_REQUEST_COST_MS);
    const lane = light ? this.light : this.heavy;
    if (this.goesNow(lane, party, weight) && this.fits(lane, weight))
      return Promise.resolve(this.take(lane, weight, party));
    try {
      party?.mayWait(weight);
    } catch (err) {
      return Promise.reject(err);
    }
    if (!light && slot) return slot.yieldWhile(() => this.wait(lane, weight, party, signal));
    return this.wait(lane, weight, party, signal);
  }

  private wait(lane: Lane, weight: number, party: WorkParty | undefined, signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.goesNow(lane, party, weight) && this.fits(lane, weight))
      return Promise.resolve(this.take(lane, weight, party));
    return new Promise((resolve, reject) => {
      const endWait = party?.waits(weight);
      const onAbort = () => {
        const i = lane.queue.indexOf(waiter);
        if (i >= 0) lane.queue.splice(i, 1);
        endWait?.();
        reject(signal!.reason);
        this.drain();
      };
      const waiter: GateWaiter = {
        weight,
        party,
        start: () => {
          signal?.removeEventListener("abort", onAbort);
          endWait?.();
          resolve(this.take(lane, weight, party));
        },
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      lane.queue.push(waiter);
    });
  }

  /**
   * A newcomer goes ahead of the lane's waiters only when it would be served before all of them:
   * the lane has none, or its client is within its share and every waiter's client is beyond theirs.
   */
  private goesNow(lane: Lane, party: WorkParty | undefined, weight: number): boolean {
    if (lane.queue.length === 0) return true;
    if (party !== undefined && !party.withinShare(weight)) return false;
    return lane.queue.every((w) => w.party !== undefined && !w.party.withinShare(w.weight));
  }

  /** The waiter served next: the first within its client's share, else the first. */
  private next(lane: Lane): GateWaiter | undefined {
    return lane.queue.find((w) => w.party === undefined || w.party.withinShare(w.weight)) ?? lane.queue[0];
  }

  private fits(lane: Lane, weight: number): boolean {
    if (lane === this.light) {
      if (lane.held === 0 || lane.held + weight <= this.lightReserve) return true;
      // Borrowed from the heavy lane's idle room, while no heavy request waits for it.
      return this.heavy.queue.length === 0 && this.inFlight + weight <= this.capacity;
    }
    if (lane.holding >= this.heavyLimit) return false;
    // The heavy lane's room: the capacity less the light lane's reserve or what it holds, if more.
    const room = this.capacity - Math.max(this.lightReserve, this.light.held);
    if (lane.held + weight <= room) return true;
    // Larger than the lane: alone, once no light request borrows from it.
    return lane.held === 0 && this.light.held <= this.lightReserve;
  }

  private take(lane: Lane, weight: number, party: WorkParty | undefined): () => void {
    lane.held += weight;
    lane.holding++;
    const uncharge = party?.admitted(weight);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      lane.held -= weight;
      lane.holding--;
      uncharge?.();
      this.drain();
    };
  }

  /** Starts every waiter that fits now, in each lane's order; heavy first (its waiters stop the lending). */
  private drain(): void {
    for (let started = true; started;) {
      started = false;
      for (const lane of [this.heavy, this.light]) {
        for (let w = this.next(lane); w && this.fits(lane, w.weight); w = this.next(lane)) {
          lane.queue.splice(lane.queue.indexOf(w), 1);
          w.start();
          started = true;
        }
      }
    }
  }
}
