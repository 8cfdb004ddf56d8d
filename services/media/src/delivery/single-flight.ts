/** A flight's work; `abort` ends the flight from inside (its timeout): one signal for both ways a flight stops. */
type FlightWork<T> = (signal: AbortSignal, abort: (reason: unknown) => void) => Promise<T>;

/**
 * How a caller says it has stopped waiting (its client disconnected): the flight hands it
 * `leave` once, and the caller calls it, at most once, whenever it goes. A call after the
 * caller's result has arrived does nothing. A plain callback rather than an AbortSignal: a
 * signal per request plus its listeners was a measurable share of a MISS's JavaScript.
 */
export type Departure = (leave: (reason: unknown) => void) => void;

/** The departure of a caller that holds an AbortSignal: it leaves when the signal aborts. */
export function departureOf(signal: AbortSignal): Departure {
  return (leave) => {
    if (signal.aborted) leave(signal.reason);
    else signal.addEventListener("abort", () => leave(signal.reason), { once: true });
  };
}

interface Flight<T> {
  /** Settles with the work's result, or rejects at once when the flight is aborted. */
  promise: Promise<T>;
  controller: AbortController;
  abort: (reason: unknown) => void;
  /** Callers still waiting for the result. */
  waiters: number;
}

/**
 * Coalesces concurrent work per key: the first caller (the leader) starts `work`, callers
 * arriving while it runs (followers) share its result. The key is forgotten as soon as the
 * flight settles, so errors are never remembered.
 *
 * Each caller may pass its departure (its client disconnecting): a caller that leaves stops
 * waiting at once, and when the last caller of a flight has gone the flight aborts: its signal
 * aborts, so no result is computed for nobody, and its promise rejects without waiting for the
 * work (which runs on until it notices the signal). A caller arriving after that starts a
 * fresh flight.
 */
export class SingleFlight<T> {
  private readonly flights = new Map<string, Flight<T>>();

  run(key: string, work: FlightWork<T>, departure?: Departure): { promise: Promise<T>; leader: boolean } {
    const existing = this.flights.get(key);
    const leader = !existing || existing.controller.signal.aborted;
    const flight = leader ? this.start(key, work) : existing;
    return { promise: this.wait(flight, departure), leader };
  }

  get inFlight(): number {
    return this.flights.size;
  }

  private start(key: string, work: FlightWork<T>): Flight<T> {
    const controller = new AbortController();
    let fail!: (reason: unknown) => void;
    const promise = new Promise<T>((resolve, reject) => {
      fail = reject;
      // Deferred so the map entry exists before the work can settle (even if it throws synchronously).
      queueMicrotask(() => {
        try {
          work(controller.signal, flight.abort).then(resolve, reject);
        } catch (err) {
          reject(err);
        }
      });
    });
    const flight: Flight<T> = {
      promise,
      controller,
      waiters: 0,
      abort: (reason) => {
        if (controller.signal.aborted) return;
        controller.abort(reason);
        fail(reason);
      },
    };
    // Registered before any caller's reaction, so a caller that reacts by asking again finds the key gone.
    const forget = () => {
      if (this.flights.get(key) === flight) this.flights.delete(key);
    };
    promise.then(forget, forget);
    this.flights.set(key, flight);
    return flight;
  }

  private wait(flight: Flight<T>, departure: Departure | undefined): Promise<T> {
    flight.waiters++;
    if (!departure) return flight.promise;
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      departure((reason) => {
        if (settled) return;
        settled = true;
        flight.waiters--;
        if (flight.waiters === 0) flight.abort(reason);
        reject(reason);
      });
      flight.promise.then(
        (value) => {
          settled = true;
          resolve(value);
        },
        (error: unknown) => {
          settled = true;
          reject(error);
        },
      );
    });
  }
}
