import type { IncomingMessage } from "node:http";
import proxyaddr from "proxy-addr";
import { DomainError } from "@media-platform/contracts";
import type { Slot, WorkGate, WorkParty } from "./limiter";

/** Seconds a client over its share is told to wait (Retry-After of the 429). */
export const CLIENT_SHARE_RETRY_AFTER_SECONDS = 1;

/** A client asked for more than its share of the render capacity (MEDIA_CLIENT_SHARE) while others wait: 429 with Retry-After. */
export class ClientShareExceededError extends DomainError<"client-share-exceeded"> {
  readonly code = "client-share-exceeded";

  constructor(
    readonly share: number,
    readonly limit: number,
  ) {
    super(
      `this client already holds its share of the render capacity (${share} of it, ${limit} pixels, MEDIA_CLIENT_SHARE) while other clients wait for it; retry shortly`,
    );
    this.name = "ClientShareExceededError";
  }
}

/**
 * Who a request is charged to: the peer address, or with MEDIA_TRUSTED_PROXIES the first
 * address in X-Forwarded-For that is not a trusted proxy (proxy-addr, as Express's trust proxy).
 * Signing keys carry no key id, so a signed URL is charged to its client's address as well.
 */
export function clientIdentity(trustedProxies: readonly string[]): (req: IncomingMessage) => string {
  if (trustedProxies.length === 0) return (req) => req.socket.remoteAddress ?? "";
  const trust = proxyaddr.compile([...trustedProxies]);
  return (req) => proxyaddr(req, trust);
}

/** One client's charge: work admitted, and work and requests waiting in the gate. */
interface Charge {
  admitted: number;
  waiting: number;
  waiters: number;
}

/**
 * Per-client fairness of the render capacity (the WorkGate's, MEDIA_MAX_INFLIGHT_PIXELS),
 * work-conserving: it only acts while clients compete. A request that fits the gate now is
 * admitted whoever sends it, so one client alone (a CDN filling its cache, a browser opening a
 * gallery) may use all the capacity. When the gate is full, the waiting requests of clients
 * within their share (`share` of the capacity, admitted work) are served before those of clients
 * beyond theirs; and a client whose admitted and waiting work would pass its share is refused
 * (429) instead of queueing, but only while another client has a request waiting. A client
 * holding nothing is never refused. Cache hits never reach this (the hot path and single-flight
 * followers render nothing).
 */
export class ClientShare {
  private readonly charges = new Map<string, Charge>();
  /** Requests waiting in the gate, all clients. */
  private waiters = 0;
  readonly limit: number;

  constructor(
    capacity: number,
    readonly share: number,
  ) {
    this.limit = Math.max(1, Math.floor(capacity * share));
  }

  /** Work charged to `client` now: admitted and waiting. */
  holding(client: string): number {
    const charge = this.charges.get(client);
    return charge ? charge.admitted + charge.waiting : 0;
  }

  /** The gate's view of one request of `client` (WorkParty). */
  party(client: string): WorkParty {
    return {
      withinShare: (weight) => {
        const admitted = this.charges.get(client)?.admitted ?? 0;
        return admitted === 0 || admitted + weight <= this.limit;
      },
      mayWait: (weight) => {
        const charge = this.charges.get(client);
        if (!charge) return;
        const held = charge.admitted + charge.waiting;
        const othersWaiting = this.waiters - charge.waiters > 0;
        if (othersWaiting && held > 0 && held + weight > this.limit)
          throw new ClientShareExceededError(this.share, this.limit);
      },
      waits: (weight) => {
        this.waiters++;
        return this.change(
          client,
          (c) => {
            c.waiting += weight;
            c.waiters++;
          },
          (c) => {
            c.waiting -= weight;
            c.waiters--;
            this.waiters--;
          },
        );
      },
      admitted: (weight) =>
        this.change(
          client,
          (c) => (c.admitted += weight),
          (c) => (c.admitted -= weight),
        ),
    };
  }

  /** Applies `apply` to the client's charge now and returns its undoing (once), dropping an empty charge. */
  private change(client: string, apply: (c: Charge) => void, undo: (c: Charge) => void): () => void {
    let charge = this.charges.get(client);
    if (!charge) this.charges.set(client, (charge = { admitted: 0, waiting: 0, waiters: 0 }));
    apply(charge);
    let undone = false;
    return () => {
      if (undone) return;
      undone = true;
      const c = this.charges.get(client)!;
      undo(c);
      if (c.admitted === 0 && c.waiting === 0 && c.waiters === 0) this.charges.delete(client);
    };
  }
}

/** One render asking for admission: its client, its memory and estimated cost, and the slot it holds. */
export interface WorkRequest {
  client: string | undefined;
  /** RenderPlan.heldPixels. */
  weight: number;
  /** RenderPlan.workCost, estimated CPU milliseconds. */
  costMs: number;
  signal: AbortSignal;
  /** The transformation slot, given up while a heavy render waits in the gate. */
  slot?: Slot;
}

/**
 * Admission of one render through the gate, charged to its client when fairness is on: admitted
 * at once when it fits, else queued in the client's order, or refused (ClientShareExceededError)
 * when its client is beyond its share while another client waits.
 */
export function admitWork(gate: WorkGate, clients: ClientShare | undefined, work: WorkRequest): Promise<() => void> {
  const party = clients && work.client !== undefined ? clients.party(work.client) : undefined;
  return gate.acquire(work.weight, work.signal, work.costMs, work.slot, party);
}
