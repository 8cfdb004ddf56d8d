// Imported first by the entry point (index.ts): with an OTLP exporter configured, the
// OpenTelemetry SDK starts before the modules it instruments (pg, ioredis, the AWS SDK, Prisma)
// are loaded. Without one, nothing is loaded (docs/tracing.md).
import { startTracing } from "@media-platform/observability";

startTracing("management");
