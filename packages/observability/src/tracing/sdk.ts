// Loaded only when tracing is configured (see start.ts): requiring this module loads the SDK and
// the instrumentations, which patch pg, ioredis, the AWS SDK, Prisma, node:http and undici (fetch)
// as they are required afterwards.
import { NodeSDK } from "@opentelemetry/sdk-node";
import { HttpInstrumentation } from "@opentelemetry/instrumentation-http";
import { UndiciInstrumentation } from "@opentelemetry/instrumentation-undici";
import { PgInstrumentation } from "@opentelemetry/instrumentation-pg";
import { IORedisInstrumentation } from "@opentelemetry/instrumentation-ioredis";
import { AwsInstrumentation } from "@opentelemetry/instrumentation-aws-sdk";
import { PrismaInstrumentation } from "@prisma/instrumentation";
import { trace, type Attributes, type Context, type Link, type SpanKind } from "@opentelemetry/api";
import { NewTraces } from "./roots";
import { type JournalOrigin, journalSettings, type ServerSpanJournal } from "./server-span-journal";
import { otlpHttpProtocol, WorkerSpanExporter } from "./worker-exporter";
import { rootSampleRatio, serviceNameConfigured } from "./settings";

/** The SDK sampler's decision (SamplingResult of @opentelemetry/sdk-trace-base). */
export interface SamplingResult {
  decision: number;
  attributes?: Readonly<Attributes>;
  traceState?: unknown;
}

export interface Sampler {
  shouldSample(
    context: Context,
    traceId: string,
    name: string,
    kind: SpanKind,
    attributes: Attributes,
    links: Link[],
  ): SamplingResult;
}

/** Where the journal's spans go and who decides on them: the SDK tracer's own exporter thread and sampler. */
export interface JournalRoute {
  journal: ServerSpanJournal;
  sampler: Sampler;
}

/** The fields of the SDK's Tracer (sdk-trace-base 2.x) the journal reads: its sampler, resource and scope. */
interface TracerFields {
  _sampler?: Sampler;
  _resource?: {
    attributes: Attributes;
    schemaUrl?: string;
    asyncAttributesPending?: boolean;
    waitForAsyncAttributes?: () => Promise<void>;
  };
  instrumentationScope?: { name: string; version?: string; schemaUrl?: string };
}

export interface StartedSdk {
  stop: () => Promise<void>;
  newTraces: NewTraces;
  /** The server span journal; undefined without the export thread. */
  journal: () => JournalRoute | undefined;
}

export function startSdk(defaultServiceName: string, tracerName: string): StartedSdk {
  // Traces only: logs stay pino JSON lines and metrics stay Prometheus /metrics, unless the
  // standard variables ask the SDK for them.
  const env = process.env;
  env.OTEL_LOGS_EXPORTER ??= "none";
  env.OTEL_METRICS_EXPORTER ??= "none";
  // The sampler stays the SDK's (read from OTEL_TRACES_SAMPLER); the id generator follows it, so
  // the request wrappers can drop an unsampled new trace before building its span.
  const newTraces = new NewTraces(rootSampleRatio(env));
  // OTLP over HTTP is sent from a worker thread (worker-exporter.ts); the SDK still batches
  // (OTEL_BSP_*). Anything else (gRPC, other exporters) is the SDK's own.
  const protocol = otlpHttpProtocol(env);
  const exporter = protocol && new WorkerSpanExporter(protocol);
  const sdk = new NodeSDK({
    idGenerator: newTraces,
    ...(exporter && { traceExporter: exporter }),
    ...(!serviceNameConfigured() && { serviceName: defaultServiceName }),
    instrumentations: [
      // Outgoing calls only: server spans come from traceRequests (index.ts).
      new HttpInstrumentation({ disableIncomingRequestInstrumentation: true }),
      new UndiciInstrumentation(),
      new PgInstrumentation({ requireParentSpan: true }),
      new IORedisInstrumentation({ requireParentSpan: true }),
      new AwsInstrumentation(),
      new PrismaInstrumentation(),
    ],
  });
  sdk.start();
  // Spans the SDK would give the exporter thread alone can skip the SDK (server-span-journal.ts):
  // its only processor is then the batch processor sending there.
  let route: JournalRoute | undefined;
  const tracer = trace.getTracer(tracerName) as TracerFields;
  const { _sampler: sampler, _resource: resource, instrumentationScope: scope } = tracer;
  if (exporter && sampler && resource && scope) {
    // The resource's attributes may still be detected (host.id): the first batch waits for them.
    let origin: Promise<JournalOrigin> | undefined;
    const describe = async (): Promise<JournalOrigin> => {
      if (resource.asyncAttributesPending) await resource.waitForAsyncAttributes?.();
      const { attributes, schemaUrl } = resource;
      return {
        resource: { attributes: { ...attributes }, ...(schemaUrl && { schemaUrl }) },
        scope: { name: scope.name, version: scope.version, schemaUrl: scope.schemaUrl },
      };
    };
    route = { journal: exporter.openJournal(() => (origin ??= describe()), journalSettings(env)), sampler };
  }
  return { stop: () => sdk.shutdown(), newTraces, journal: () => route };
}
