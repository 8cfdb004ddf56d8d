import { inLinkedSpan } from "@media-platform/observability";

/**
 * One outbox delivery as the span `outbox.deliver <event type>`: a new trace (it runs later, maybe
 * on another replica) linked to the request that wrote the row; its HTTP call carries this span's
 * `traceparent`.
 */
export function deliverySpan<T>(
  d: { id: string; event_type: string; attempts: number; trace_context: string | null },
  deliver: () => Promise<T>,
): Promise<T> {
  return inLinkedSpan(
    `outbox.deliver ${d.event_type}`,
    d.trace_context,
    { "outbox.delivery_id": d.id, "outbox.event_type": d.event_type, "outbox.attempt": d.attempts + 1 },
    deliver,
  );
}
