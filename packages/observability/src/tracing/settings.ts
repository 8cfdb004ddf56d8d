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
