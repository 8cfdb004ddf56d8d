import type { IncomingMessage } from "node:http";
import proxyaddr from "proxy-addr";
import { DomainError } from "@media-platform/contracts";
import type { Slot, WorkGate } from "./limiter";

/** Seconds a client over its share is told to wait (Retry-After of the 429). */
export const CLIENT_SHARE_RETRY_AFTER_SECONDS = 1;

/** A client asked for more render work than its share (MEDIA_CLIENT_SHARE): answered 429 with Retry-After. */
export class ClientShareExceededError extends DomainError<"client-share-exceeded"> {
  readonly code = "client-share-exceeded";

  constructor(
    readonly share: number,
    readonly limit: number,
  ) {
    super(
      `this client already holds its share of the render capacity (${share} of it, ${limit} pixels of work, MEDIA_CLIENT_SHARE); retry shortly`,
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

/**
 * Per-client fairness of the render capacity (the WorkGate's, MEDIA_MAX_INFLIGHT_PIXELS): work a
 * client has admitted or waiting in the gate is charged to it, and a request that would take the
 * client past `share` of the capacity is refused at once instead of queueing. A client holding
 * nothing is always admitted, so one request as large as the whole capacity still runs.
 * Cache hits never reach this (the hot path and single-flight followers render nothing).
 */
export class ClientShare {
  private readonly held = new Map<string, number>();
  readonly limit: number;

  constructor(
    capacity: number,
    readonly share: number,
  ) {
    this.limit = Math.max(1, Math.floor(capacity * share));
  }

  /** Work charged to `client` now. */
  holding(client: string): number {
    return this.held.get(client) ?? 0;
  }

  /** Charges `weight` to `client` and returns the release; throws ClientShareExceededError beyond its share. */
  charge(client: string, weight: number): () => void {
    const held = this.holding(client);
    if (held > 0 && held + weight > this.limit) throw new ClientShareExceededError(this.share, this.limit);
    this.held.set(client, held + weight);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = this.holding(client) - weight;
      if (left > 0) this.held.set(client, left);
      else this.held.delete(client);
    };
  }
}

/** One render asking for admission: its client, planned work and estimated cost, and the slot it holds. */
export interface WorkRequest {
  client: string | undefined;
  /** RenderPlan.workPixels. */
  weight: number;
  /** RenderPlan.workCost, estimated CPU milliseconds. */
  costMs: number;
  signal: AbortSignal;
  /** The transformation slot, given up while a heavy render waits in the gate. */
  slot?: Slot;
}

/**
 * Admission of one render: charged to its client (when fairness is on), then through the gate.
 * The client's charge covers its wait in the gate too, so queued work counts against its share.
 */
export async function admitWork(
  gate: WorkGate,
  clients: ClientShare | undefined,
  work: WorkRequest,
): Promise<() => void> {
  const { client, weight } = work;
  const releaseShare = clients && client !== undefined ? clients.charge(client, weight) : undefined;
  try {
    const releaseGate = await gate.acquire(weight, work.signal, work.costMs, work.slot);
    return () => {
      releaseGate();
      releaseShare?.();
    };
  } catch (err) {
    releaseShare?.();
    throw err;
  }
}
