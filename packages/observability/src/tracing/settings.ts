/**
 * Whether tracing is on: an OTLP endpoint is configured (`OTEL_EXPORTER_OTLP_ENDPOINT` or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), `OTEL_TRACES_EXPORTER` is not `none` and
 * `OTEL_SDK_DISABLED` is not `true`. Everything else (protocol, sampler, propagators, resource) is
 * read by the OpenTelemetry SDK itself from the standard variables.
 */
export function tracingConfigured(env: Record<string, string | undefined> = process.env): boolean {
  if ((env.OTEL_SDK_DISABLED ?? "").trim().toLowerCase() === "true") return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? "").toLowerCase();
  if (exporters.split(",").some((e) => e.trim() === "none")) return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}

/** `service.name` given by OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES (then the default is not applied). */
export function serviceNameConfigured(env: Record<string, string | undefined> = process.env): boolean {
  if (env.OTEL_SERVICE_NAME?.trim()) return true;
  return (env.OTEL_RESOURCE_ATTRIBUTES ?? "").split(",").some((pair) => pair.trim().startsWith("service.name="));
}

/** A fraction of new traces sampled (0 to 1), or undefined when unknown. */
export type TraceIdRatioSampling = number | undefined;

/**
 * The fraction of new traces (requests without a propagated parent) that the SDK samples, read
 * from OTEL_TRACES_SAMPLER/OTEL_TRACES_SAMPLER_ARG exactly as the SDK reads them (unset: the
 * default parent-based always-on; a ratio sampler without a usable argument: 1). Undefined for a
 * value the SDK does not take, so nothing decides ahead of it.
 */
export function rootSampleRatio(env: Record<string, string | undefined> = process.env): TraceIdRatioSampling {
  const name = env.OTEL_TRACES_SAMPLER;
  if (name === undefined || name.trim() === "") return 1;
  switch (name) {
    case "always_on":
    case "parentbased_always_on":
      return 1;
    case "always_off":
    case "parentbased_always_off":
      return 0;
    case "traceidratio":
    case "parentbased_traceidratio": {
      const raw = env.OTEL_TRACES_SAMPLER_ARG;
      const ratio = raw === undefined || raw.trim() === "" ? NaN : Number(raw);
      return Number.isNaN(ratio) || ratio < 0 || ratio > 1 ? 1 : ratio;
    }
    default:
      return undefined;
  }
}
