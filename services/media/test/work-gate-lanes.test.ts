import { LIGHT_REQUEST_COST_MS, Limiter, QueueFullError, WorkGate, type Slot } from "../src/delivery/limiter";

/** A task held in a limiter slot until `finish()`; `admitted` once the gate let it in. */
function gatedTask(limiter: Limiter, gate: WorkGate, weight: number, costMs: number, signal?: AbortSignal) {
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const state = { admitted: false };
  const done = limiter.run(async (slot: Slot) => {
    const release = await gate.acquire(weight, signal, costMs, slot);
    state.admitted = true;
    try {
      await finished;
    } finally {
      release();
    }
  }, signal);
  return { done, finish, state };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("WorkGate lanes by cost, and heavy renders beyond their share waiting without a slot", () => {
  it("lets a cheap request of many pixels pass a heavy one in the light lane", async () => {
    const gate = new WorkGate(64_000);
    // 1/64 of the capacity is 1000: both requests are heavy by their pixels.
    const heavy = await gate.acquire(60_000, undefined, 5000);
    let cheapAdmitted = false;
    const cheap = gate.acquire(5000, undefined, LIGHT_REQUEST_COST_MS).then((release) => {
      cheapAdmitted = true;
      return release;
    });
    let costlyAdmitted = false;
    const costly = gate.acquire(5000, undefined, LIGHT_REQUEST_COST_MS + 1).then((release) => {
      costlyAdmitted = true;
      return release;
    });
    (await cheap)();
    await Promise.resolve();
    expect([cheapAdmitted, costlyAdmitted]).toEqual([true, false]);
    heavy();
    (await costly)();
    expect(gate.inFlight).toBe(0);
  });

  it("runs at most its limit of heavy renders; the rest wait without a slot, light ones run beside them", async () => {
    const limiter = new Limiter(4, 10);
    const gate = new WorkGate(64_000, 2);
    // Five heavy renders that would fit the lane's pixels: only the limit runs.
    const heavy = [0, 1, 2, 3, 4].map(() => gatedTask(limiter, gate, 2000, 5000));
    await settle();
    expect(heavy.map((t) => t.state.admitted)).toEqual([true, true, false, false, false]);
    expect(gate.heavyRunning).toBe(2);
    // The three waiting ones gave their slots up and count as queued.
    expect([limiter.active, limiter.waiting]).toEqual([2, 3]);
    // A light render takes a free slot at once.
    const light = gatedTask(limiter, gate, 500, 10);
    await settle();
    expect(light.state.admitted).toBe(true);
    expect(limiter.active).toBe(3);
    light.finish();
    await light.done;
    // Each heavy render that ends lets the next in, in order.
    heavy[0]!.finish();
    await heavy[0]!.done;
    await settle();
    expect(heavy.map((t) => t.state.admitted)).toEqual([true, true, true, false, false]);
    expect([limiter.active, limiter.waiting, gate.heavyRunning]).toEqual([2, 2, 2]);
    for (const task of heavy) {
      task.finish();
      await settle();
    }
    await Promise.all(heavy.map((t) => t.done));
    expect(heavy.every((t) => t.state.admitted)).toBe(true);
    expect([limiter.active, limiter.waiting, gate.inFlight, gate.heavyRunning]).toEqual([0, 0, 0, 0]);
  });

  it("refuses a heavy render with QueueFullError only when the queue is full, parked ones counted", async () => {
    const limiter = new Limiter(2, 1);
    const gate = new WorkGate(64_000, 1);
    const first = gatedTask(limiter, gate, 2000, 5000);
    const parked = gatedTask(limiter, gate, 2000, 5000);
    await settle();
    expect([limiter.active, limiter.waiting]).toEqual([1, 1]);
    // A third heavy render gets the free slot, then finds the queue full.
    const refused = gatedTask(limiter, gate, 2000, 5000);
    await expect(refused.done).rejects.toBeInstanceOf(QueueFullError);
    // The refused render gave its slot back: a light one still runs.
    const light = gatedTask(limiter, gate, 500, 10);
    await settle();
    expect(light.state.admitted).toBe(true);
    light.finish();
    first.finish();
    await settle();
    expect(parked.state.admitted).toBe(true);
    parked.finish();
    await Promise.all([first.done, parked.done, light.done]);
    expect([limiter.active, limiter.waiting, gate.inFlight]).toEqual([0, 0, 0]);
  });

  it("takes a slot back ahead of the queue once admitted, and never more slots than the limiter has", async () => {
    const limiter = new Limiter(2, 10);
    const gate = new WorkGate(64_000, 1);
    const heavyA = gatedTask(limiter, gate, 2000, 5000);
    const heavyB = gatedTask(limiter, gate, 2000, 5000);
    await settle();
    // B parked; two light renders fill the slots, a third queues for one.
    const lights = [0, 1, 2].map(() => gatedTask(limiter, gate, 500, 10));
    await settle();
    expect(lights.map((t) => t.state.admitted)).toEqual([true, false, false]);
    expect([limiter.active, limiter.waiting]).toEqual([2, 3]);
    // A ends: the gate admits B, and B takes A's slot back ahead of the two queued light renders.
    heavyA.finish();
    await heavyA.done;
    await settle();
    expect([heavyB.state.admitted, ...lights.map((t) => t.state.admitted)]).toEqual([true, true, false, false]);
    expect([limiter.active, limiter.waiting]).toEqual([2, 2]);
    lights[0]!.finish();
    await lights[0]!.done;
    await settle();
    expect(lights.map((t) => t.state.admitted)).toEqual([true, true, false]);
    expect([limiter.active, limiter.waiting]).toEqual([2, 1]);
    for (const task of [heavyB, lights[1]!, lights[2]!]) {
      task.finish();
      await settle();
    }
    await Promise.all([heavyB.done, ...lights.map((t) => t.done)]);
    expect([limiter.active, limiter.waiting, gate.inFlight]).toEqual([0, 0, 0]);
  });

  it("frees the place of a heavy render aborted while it waits, without giving a slot back twice", async () => {
    const limiter = new Limiter(2, 10);
    const gate = new WorkGate(64_000, 1);
    const first = gatedTask(limiter, gate, 2000, 5000);
    const abort = new AbortController();
    const waiting = gatedTask(limiter, gate, 2000, 5000, abort.signal);
    await settle();
    expect([limiter.active, limiter.waiting]).toEqual([1, 1]);
    abort.abort(new Error("gone"));
    await expect(waiting.done).rejects.toThrow("gone");
    expect([limiter.active, limiter.waiting]).toEqual([1, 0]);
    const next = gatedTask(limiter, gate, 2000, 5000);
    await settle();
    expect(next.state.admitted).toBe(false);
    first.finish();
    await first.done;
    await settle();
    expect(next.state.admitted).toBe(true);
    next.finish();
    await next.done;
    expect([limiter.active, limiter.waiting, gate.inFlight]).toEqual([0, 0, 0]);
  });
});
