import { Webhook } from "standardwebhooks";
import type { Logger } from "pino";
import type { WebhookConfig } from "../config/webhooks";
import type { PrismaClient } from "../generated/prisma/client";
import { Periodic } from "../jobs/periodic";
import { EAGER_EVENT_TYPE } from "./outbox";
import { deliverySpan } from "./delivery-span";

export interface DispatcherOptions {
  prisma: PrismaClient;
  log: Logger;
  /** WEBHOOK_SECRET (whsec_<base64>); unset when only internal rows (media.eager) are sent. */
  secret: string | undefined;
  /**
   * The media purge secret: rows for the media service (EAGER_EVENT_TYPE) carry it as a bearer
   * token, as the purge calls do, instead of a webhook signature.
   */
  internalSecret?: string;
  /** Retry window (WEBHOOK_RETRY_HOURS): after it a failing delivery is dead. */
  retryMs: number;
  /** First retry delay, doubled per failure, capped at MAX_BACKOFF_MS. */
  backoffBaseMs: number;
  pollIntervalMs: number;
  /** Deliveries claimed per poll. Default 20. */
  batchSize?: number;
  /** Per-request timeout. Default 10 s. */
  timeoutMs?: number;
  /** Requests in flight to one endpoint from this replica. Default 4. */
  perEndpoint?: number;
  /** Counts outcomes: delivered, failed (will retry), dead. */
  onOutcome?: (outcome: "delivered" | "failed" | "dead") => void;
}

const MAX_BACKOFF_MS = 3600_000;

interface ClaimedDelivery {
  id: string;
  event_id: string;
  event_type: string;
  url: string;
  payload: unknown;
  attempts: number;
  created_at: Date;
  trace_context: string | null;
}

/**
 * Sends the outbox (webhook_deliveries), at least once, signed per Standard Webhooks (the
 * `standardwebhooks` package: webhook-id, webhook-timestamp, webhook-signature).
 *
 * Claiming is one statement: due pending rows are locked with FOR UPDATE SKIP LOCKED and leased
 * (next_attempt_at pushed past the send timeout) in the same UPDATE, so with several replicas each
 * delivery is claimed by exactly one of them, and no transaction stays open while the HTTP request
 * runs. A replica that dies mid-send lets the lease run out and another one retries it.
 *
 * Each endpoint has its own lane: at most `perEndpoint` requests in flight to one URL, and the
 * claim skips URLs with sends still in flight, so an endpoint that never answers holds only its own lane
 * until the timeout while the others keep receiving. The poll does not wait for the sends.
 */
export class WebhookDispatcher {
  private readonly webhook: Webhook | undefined;
  private readonly periodic: Periodic;
  private readonly timeoutMs: number;
  private readonly perEndpoint: number;
  /** Sends in flight from this replica, per endpoint URL. */
  private readonly inFlight = new Map<string, Set<Promise<void>>>();

  constructor(private readonly options: DispatcherOptions) {
    this.webhook = options.secret ? new Webhook(options.secret) : undefined;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.perEndpoint = options.perEndpoint ?? 4;
    this.periodic = new Periodic(options.pollIntervalMs, () => this.pump(), options.log, "webhook dispatch");
  }

  start(): void {
    this.periodic.start();
  }

  /** Stops polling and waits for the sends in flight. */
  async stop(): Promise<void> {
    await this.periodic.stop();
    await Promise.all([...this.inFlight.values()].flatMap((lane) => [...lane]));
  }

  /**
   * Claims and starts sending what is due now, without waiting for the next poll (a change just
   * committed a row). Safe beside a poll: claims are exclusive (SKIP LOCKED, leases).
   */
  wake(): void {
    this.pump().catch((err: unknown) => this.options.log.error({ err }, "outbox dispatch failed"));
  }

  /** Claims and sends one batch of due deliveries, waiting for them; returns how many were attempted. */
  async runOnce(): Promise<number> {
    const sends = await this.pump();
    await Promise.all(sends);
    return sends.length;
  }

  /** Claims one batch for the endpoints with nothing in flight and starts sending it. */
  private async pump(): Promise<Promise<void>[]> {
    const leaseMs = this.timeoutMs + 5000;
    // An endpoint with sends in flight waits for them before its next wave: at most perEndpoint at once.
    const busy = [...this.inFlight.keys()];
    const claimed = await this.options.prisma.$queryRaw<ClaimedDelivery[]>`
      UPDATE webhook_deliveries d
         SET next_attempt_at = now() + make_interval(secs => ${leaseMs / 1000}::float8)
        FROM (SELECT id FROM webhook_deliveries
               WHERE status = 'pending' AND next_attempt_at <= now()
                 AND id IN (SELECT id FROM (
                              SELECT id, row_number() OVER (PARTITION BY url ORDER BY next_attempt_at) AS n
                                FROM webhook_deliveries
                               WHERE status = 'pending' AND next_attempt_at <= now()
                                 AND url <> ALL(${busy}::text[])) per_url
                             WHERE n <= ${this.perEndpoint})
               ORDER BY next_attempt_at
               LIMIT ${this.options.batchSize ?? 20}
               FOR UPDATE SKIP LOCKED) due
       WHERE d.id = due.id
   RETURNING d.id::text, d.event_id::text, d.event_type, d.url, d.payload, d.attempts, d.created_at, d.trace_context`;
    return claimed.map((d) => this.track(d));
  }

  private track(d: ClaimedDelivery): Promise<void> {
    let lane = this.inFlight.get(d.url);
    if (!lane) this.inFlight.set(d.url, (lane = new Set()));
    const send: Promise<void> = deliverySpan(d, () => this.deliver(d))
      .catch((err: unknown) => this.options.log.error({ err, deliveryId: d.id }, "webhook delivery bookkeeping failed"))
      .finally(() => {
        lane.delete(send);
        if (lane.size === 0) this.inFlight.delete(d.url);
      });
    lane.add(send);
    return send;
  }

  /** A webhook's Standard Webhooks signature, or the bearer secret of an internal media call. */
  private authentication(d: ClaimedDelivery, now: Date, body: string): Record<string, string> {
    if (d.event_type === EAGER_EVENT_TYPE) {
      if (!this.options.internalSecret) throw new Error("no media purge secret to send an eager render request with");
      return { Authorization: `Bearer ${this.options.internalSecret}` };
    }
    if (!this.webhook) throw new Error("no WEBHOOK_SECRET to sign a webhook with");
    return {
      "webhook-id": d.event_id,
      "webhook-timestamp": String(Math.floor(now.getTime() / 1000)),
      "webhook-signature": this.webhook.sign(d.event_id, now, body),
    };
  }

  private async deliver(d: ClaimedDelivery): Promise<void> {
    const body = JSON.stringify(d.payload);
    const now = new Date();
    let error: string | undefined;
    try {
      const res = await fetch(d.url, {
        method: "POST",
        headers: { "Content-Type": "application/json", ...this.authentication(d, now, body) },
        body,
        signal: AbortSignal.timeout(this.timeoutMs),
        redirect: "manual",
      });
      await res.arrayBuffer().catch(() => undefined);
      if (res.status < 200 || res.status >= 300) error = `HTTP ${res.status}`;
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
    }
    const attempts = d.attempts + 1;
    const { prisma, log } = this.options;
    if (error === undefined) {
      await prisma.webhookDelivery.update({
        where: { id: d.id },
        data: { status: "delivered", attempts, deliveredAt: new Date(), lastError: null },
      });
      this.options.onOutcome?.("delivered");
      return;
    }
    const delay = Math.min(this.options.backoffBaseMs * 2 ** (attempts - 1), MAX_BACKOFF_MS);
    // Full jitter on the upper half, so replicas retrying one failing endpoint spread out.
    const next = Date.now() + delay / 2 + Math.random() * (delay / 2);
    const dead = next - d.created_at.getTime() > this.options.retryMs;
    await prisma.webhookDelivery.update({
      where: { id: d.id },
      data: {
        status: dead ? "dead" : "pending",
        attempts,
        lastError: error.slice(0, 500),
        nextAttemptAt: new Date(next),
      },
    });
    this.options.onOutcome?.(dead ? "dead" : "failed");
    if (dead) {
      log.error(
        { deliveryId: d.id, eventId: d.event_id, type: d.event_type, url: d.url, attempts, error },
        "webhook delivery dead: failing for longer than the retry window",
      );
    } else {
      log.warn(
        { deliveryId: d.id, type: d.event_type, url: d.url, attempts, error },
        "webhook delivery failed; will retry",
      );
    }
  }
}

export interface OutboxDelivery {
  prisma: PrismaClient;
  log: Logger;
  webhooks: WebhookConfig;
  /**
   * The media purge secret when the outbox also carries eager-render requests to media
   * (MEDIA_EAGER_RENDERS); undefined = none.
   */
  eagerSecret: string | undefined;
  onOutcome?: DispatcherOptions["onOutcome"];
}

/**
 * Starts the dispatcher when the outbox has anything to send: webhooks (WEBHOOK_URLS with a
 * secret) or eager-render requests. Undefined when it has nothing.
 */
export function startDispatcher(delivery: OutboxDelivery): WebhookDispatcher | undefined {
  const { webhooks, eagerSecret } = delivery;
  if (!(webhooks.urls.length > 0 && webhooks.secret) && eagerSecret === undefined) return undefined;
  const dispatcher = new WebhookDispatcher({
    prisma: delivery.prisma,
    log: delivery.log,
    secret: webhooks.secret,
    internalSecret: eagerSecret,
    retryMs: webhooks.retryMs,
    backoffBaseMs: webhooks.backoffBaseMs,
    pollIntervalMs: webhooks.pollIntervalMs,
    onOutcome: delivery.onOutcome,
  });
  dispatcher.start();
  return dispatcher;
}
