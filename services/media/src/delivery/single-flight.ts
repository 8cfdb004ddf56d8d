/**
 * Coalesces concurrent work per key: the first caller (the leader) starts `work`, callers
 * arriving while it runs (followers) share its promise. The key is forgotten as soon as the
 * work settles, so errors are never remembered.
 */
export class SingleFlight<T> {
  private readonly flights = new Map<string, Promise<T>>();

  run(key: string, work: () => Promise<T>): { promise: Promise<T>; leader: boolean } {
    const existing = this.flights.get(key);
    if (existing) return { promise: existing, leader: false };
    const promise = (async () => {
      try {
        // Deferred so the map entry exists before the work can settle (even if it throws synchronously).
        return await Promise.resolve().then(work);
      } finally {
        this.flights.delete(key);
      }
    })();
    this.flights.set(key, promise);
    return { promise, leader: true };
  }

  get inFlight(): number {
    return this.flights.size;
  }
}
