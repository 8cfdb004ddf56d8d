/** A flight's work; `abort` ends the flight from inside (its timeout): one signal for both ways a flight stops. */
type FlightWork<T> = (signal: AbortSignal, abort: (reason: unknown) => void) => Promise<T>;

interface Flight<T> {
  promise: Promise<T>;
  controller: AbortController;
  /** Callers still waiting for the result. */
  waiters: number;
}

/**
 * Coalesces concurrent work per key: the first caller (the leader) starts `work`, callers
 * arriving while it runs (followers) share its result. The key is forgotten as soon as the
 * work settles, so errors are never remembered.
 *
 * Each caller may pass its own signal (its client disconnecting): an aborted caller stops
 * waiting at once, and when the last caller of a flight has gone the flight's own signal aborts,
 * so no result is computed for nobody. A caller arriving after that starts a fresh flight.
 */
export class SingleFlight<T> {
  private readonly flights = new Map<string, Flight<T>>();

  run(key: string, work: FlightWork<T>, signal?: AbortSignal): { promise: Promise<T>; leader: boolean } {
    const existing = this.flights.get(key);
    const leader = !existing || existing.controller.signal.aborted;
    const flight = leader ? this.start(key, work) : existing;
    return { promise: this.wait(flight, signal), leader };
  }

  get inFlight(): number {
    return this.flights.size;
  }

  private start(key: string, work: FlightWork<T>): Flight<T> {
    const controller = new AbortController();
    const flight: Flight<T> = { controller, waiters: 0, promise: undefined as unknown as Promise<T> };
    flight.promise = (async () => {
      try {
        // Deferred so the map entry exists before the work can settle (even if it throws synchronously).
        return await Promise.resolve().then(() => work(controller.signal, (reason) => controller.abort(reason)));
      } finally {
        if (this.flights.get(key) === flight) this.flights.delete(key);
      }
    })();
    this.flights.set(key, flight);
    return flight;
  }

  private wait(flight: Flight<T>, signal: AbortSignal | undefined): Promise<T> {
    flight.waiters++;
    if (!signal) return flight.promise;
    return new Promise<T>((resolve, reject) => {
      const leave = () => {
        flight.waiters--;
        if (flight.waiters === 0) flight.controller.abort(signal.reason);
        reject(signal.reason);
      };
      if (signal.aborted) return leave();
      signal.addEventListener("abort", leave, { once: true });
      flight.promise.then(
        (value) => {
          signal.removeEventListener("abort", leave);
          resolve(value);
        },
        (error: unknown) => {
          signal.removeEventListener("abort", leave);
          reject(error);
        },
      );
    });
  }
}
