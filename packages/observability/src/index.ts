export { createLogger, REDACT_PATHS, type Logger, type LoggerOptions, type LogLevel } from "./logger";
export { REDACTED, isSensitiveKey, redactUrl, sanitize, sanitizeHeaders, scrubString } from "./redact";
export {
  REQUEST_ID_HEADER,
  MAX_REQUEST_ID_LENGTH,
  applyRequestId,
  generateRequestId,
  isValidRequestId,
  propagationHeaders,
  resolveRequestId,
} from "./requestId";
export {
  createMetrics,
  metricsHandler,
  metricsRouter,
  ROUTE_HOT_PATH,
  ROUTE_UNMATCHED,
  HTTP_DURATION_BUCKETS,
  type Dependency,
  type Metrics,
  type MetricsOptions,
} from "./metrics";
export {
  FastCounter,
  FastCounterSeries,
  FastHistogram,
  FastHistogramSeries,
  registerSourceMetric,
  type SourceMetricOptions,
  type SourceSample,
} from "./fastMetrics";
export {
  recordRawRequest,
  requestContext,
  routePattern,
  STATUS_CLIENT_CLOSED,
  trackRequest,
  type RequestContextOptions,
  type TrackedRequest,
  type TrackRequestOptions,
} from "./http";
export {
  checkReadiness,
  healthHandlers,
  healthRouter,
  type DependencyStatus,
  type HealthCheck,
  type HealthOptions,
  type OperationHandler,
  type ReadinessReport,
} from "./health";
export {
  gracefulShutdown,
  type CloseHook,
  type ShutdownController,
  type ShutdownLogger,
  type ShutdownOptions,
} from "./shutdown";
export {
  activeSpan,
  captureTraceContext,
  exemplarLabels,
  inLinkedSpan,
  inSpan,
  logTraceFields,
  nameRequestSpan,
  recordServerSpan,
  recordSpan,
  requestSpan,
  serviceNameConfigured,
  spanRecorder,
  startTracing,
  stopTracing,
  traceCarrier,
  traceRequests,
  tracingActive,
  tracingConfigured,
  type Attributes,
  type MeasuredSpan,
  type Span,
  type SpanIds,
} from "./tracing";
