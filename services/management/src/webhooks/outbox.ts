import { randomUUID } from "node:crypto";
import { EAGER_PATH, IMAGE_FORMATS, type AssetFormat, type EagerRequest } from "@media-platform/contracts";
import { captureTraceContext } from "@media-platform/observability";
import type { Prisma } from "../generated/prisma/client";

export const WEBHOOK_EVENT_TYPES = [
  "asset.created",
  "asset.updated",
  "asset.deleted",
  "asset.restored",
  "asset.replaced",
  "collection.created",
  "collection.deleted",
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export interface WebhookEvent {
  type: WebhookEventType;
  workspaceId: string;
  /** The event's `data`: the asset or collection as the API serializes it, or its id. */
  data: Record<string, unknown>;
}

/** The database client of a transaction (prisma.$transaction's callback argument). */
export type Tx = Prisma.TransactionClient;

/**
 * Transactional outbox: writes one pending delivery per endpoint (WEBHOOK_URLS) inside the caller's
 * transaction, so an event exists exactly when its change committed. The body follows the Standard
 * Webhooks shape `{type, timestamp, data}`; the dispatcher signs and sends it.
 */
export async function recordEvents(tx: Tx, urls: readonly string[], events: readonly WebhookEvent[]): Promise<void> {
  if (urls.length === 0 || events.length === 0) return;
  const timestamp = new Date().toISOString();
  const traceContext = captureTraceContext();
  const rows: Prisma.WebhookDeliveryCreateManyInput[] = [];
  for (const event of events) {
    const eventId = randomUUID();
    const payload = { type: event.type, timestamp, data: event.data } as Prisma.InputJsonValue;
    for (const url of urls) {
      rows.push({
        id: randomUUID(),
        eventId,
        eventType: event.type,
        workspaceId: event.workspaceId,
        url,
        payload,
        traceContext,
      });
    }
  }
  await tx.webhookDelivery.createMany({ data: rows });
}

/** Event type of the outbox rows that ask the media service to render eager presets. */
export const EAGER_EVENT_TYPE = "media.eager";

/**
 * Asks the media service (each of `mediaUrls`, MEDIA_PURGE_URLS when MEDIA_EAGER_RENDERS is on)
 * to render the eager presets of an asset whose original was just uploaded or replaced: one outbox
 * row per media URL, written inside the caller's transaction, so the request exists exactly when
 * the new original committed and survives a crash. The dispatcher sends it with the purge secret.
 */
export async function recordEagerRenders(
  tx: Tx,
  mediaUrls: readonly string[],
  workspaceId: string,
  asset: { id: string; format: string },
  replaced: boolean,
): Promise<void> {
  if (mediaUrls.length === 0) return;
  const extension = IMAGE_FORMATS[asset.format as AssetFormat].extensions[0];
  const payload: EagerRequest = { assetId: asset.id, extension, ...(replaced && { replaced }) };
  const eventId = randomUUID();
  await tx.webhookDelivery.createMany({
    data: mediaUrls.map((base) => ({
      id: randomUUID(),
      eventId,
      eventType: EAGER_EVENT_TYPE,
      workspaceId,
      url: `${base}${EAGER_PATH}`,
      payload: payload as Prisma.InputJsonValue,
      traceContext: captureTraceContext(),
    })),
  });
}
