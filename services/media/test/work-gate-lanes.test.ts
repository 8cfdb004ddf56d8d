import { HeavyLaneFullError, LIGHT_REQUEST_COST_MS, QueueFullError, WorkGate } from "../src/delivery/limiter";

describe("WorkGate lanes by cost and the heavy lane's limit", () => {
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

  it("refuses heavy requests beyond its limit at once, running and waiting counted, light ones never", async () => {
    const gate = new WorkGate(64_000, 2);
    const first = await gate.acquire(60_000, undefined, 5000);
    const waiting = gate.acquire(60_000, undefined, 5000);
    const refused = gate.acquire(2000, undefined, 5000);
    await expect(refused).rejects.toBeInstanceOf(HeavyLaneFullError);
    await expect(gate.acquire(2000, undefined, 5000)).rejects.toBeInstanceOf(QueueFullError);
    const light = await gate.acquire(500, undefined, 5000);
    light();
    first();
    (await waiting)();
    // Both left: the lane takes heavy requests again.
    const again = await gate.acquire(2000, undefined, 5000);
    again();
    expect(gate.inFlight).toBe(0);
  });

  it("frees the heavy place of a request aborted while waiting", async () => {
    const gate = new WorkGate(64_000, 2);
    const first = await gate.acquire(60_000, undefined, 5000);
    const abort = new AbortController();
    const waiting = gate.acquire(60_000, abort.signal, 5000);
    abort.abort(new Error("gone"));
    await expect(waiting).rejects.toThrow("gone");
    const next = gate.acquire(60_000, undefined, 5000);
    first();
    (await next)();
    expect(gate.inFlight).toBe(0);
  });
});
