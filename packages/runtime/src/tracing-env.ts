import { z } from "zod";
import { blankAsUnset } from "./env";

const optional = (schema: z.ZodType) => z.preprocess(blankAsUnset, schema.optional());

const SAMPLERS = [
  "always_on",
  "always_off",
  "traceidratio",
  "parentbased_always_on",
  "parentbased_always_off",
  "parentbased_traceidratio",
] as const;
const PROPAGATORS = ["tracecontext", "baggage", "b3", "b3multi", "jaeger", "none"] as const;

/** A comma-separated list whose every item is one of `allowed`. */
const listOf = (allowed: readonly string[]) =>
  optional(
    z
      .string()
      .refine(
        (v) => v.split(",").every((item) => allowed.includes(item.trim())),
        `must be a comma-separated list of ${allowed.join(", ")}`,
      ),
  );

/**
 * The standard OpenTelemetry variables both services accept (docs/tracing.md). The OpenTelemetry
 * SDK reads them itself, and only when an OTLP endpoint is set; the schema refuses a typo at start.
 */
export const tracingEnvShape = {
  OTEL_EXPORTER_OTLP_ENDPOINT: optional(z.url()).describe(
    "OTLP collector base URL (traces go to <it>/v1/traces); unset = tracing off, no OpenTelemetry package loaded",
  ),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: optional(z.url()).describe(
    "Full OTLP traces URL, instead of OTEL_EXPORTER_OTLP_ENDPOINT; set = tracing on",
  ),
  OTEL_EXPORTER_OTLP_PROTOCOL: optional(z.enum(["http/protobuf", "http/json", "grpc"])).describe(
    "OTLP encoding: http/protobuf (the SDK's default), http/json or grpc",
  ),
  OTEL_EXPORTER_OTLP_HEADERS: optional(z.string()).describe(
    "Headers sent with every export (`key=value,...`, e.g. a collector's API key)",
  ),
  OTEL_TRACES_EXPORTER: listOf(["otlp", "console", "none"]).describe("`none` turns tracing off; default otlp"),
  OTEL_TRACES_SAMPLER: optional(z.enum(SAMPLERS)).describe("Sampler; default parentbased_always_on"),
  OTEL_TRACES_SAMPLER_ARG: optional(z.coerce.number().min(0).max(1)).describe(
    "Ratio of the traceidratio samplers, 0-1 (0.01 = 1% of the traces started here)",
  ),
  OTEL_SERVICE_NAME: optional(z.string()).describe("service.name of the spans; default management / media"),
  OTEL_RESOURCE_ATTRIBUTES: optional(z.string()).describe(
    "Resource attributes of every span (`key=value,...`, e.g. deployment.environment.name=prod)",
  ),
  OTEL_PROPAGATORS: listOf(PROPAGATORS).describe(
    "Trace context formats read and written; default tracecontext,baggage (b3 / b3multi for Zipkin B3)",
  ),
  OTEL_BSP_SCHEDULE_DELAY: optional(z.coerce.number().int().min(0)).describe(
    "Milliseconds between span exports; default 5000",
  ),
  OTEL_SDK_DISABLED: optional(z.stringbool()).describe("true = tracing off even with an endpoint"),
  OTEL_LOGS_EXPORTER: listOf(["otlp", "console", "none"]).describe(
    "Logs through OpenTelemetry; default none (logs are JSON lines on stdout)",
  ),
  OTEL_METRICS_EXPORTER: listOf(["otlp", "console", "prometheus", "none"]).describe(
    "Metrics through OpenTelemetry; default none (metrics are served at /metrics)",
  ),
};
