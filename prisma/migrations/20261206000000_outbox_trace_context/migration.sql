-- The trace context (W3C traceparent/tracestate, JSON) of the request that wrote an outbox row: the
-- span that sends it later, from any replica, links back to that request (docs/tracing.md).
ALTER TABLE "webhook_deliveries" ADD COLUMN "trace_context" TEXT;
