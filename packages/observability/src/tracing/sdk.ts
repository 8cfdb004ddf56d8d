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
import { NewTraces } from "./roots";
import { rootSampleRatio, serviceNameConfigured } from "./settings";

export function startSdk(defaultServiceName: string): { stop: () => Promise<void>; newTraces: NewTraces } {
  // Traces only: logs stay pino JSON lines and metrics stay Prometheus /metrics, unless the
  // standard variables ask the SDK for them.
  const env = process.env;
  env.OTEL_LOGS_EXPORTER ??= "none";
  env.OTEL_METRICS_EXPORTER ??= "none";
  // The sampler stays the SDK's (read from OTEL_TRACES_SAMPLER); the id generator follows it, so
  // the request wrappers can drop an unsampled new trace before building its span.
  const newTraces = new NewTraces(rootSampleRatio(env));
  const sdk = new NodeSDK({
    idGenerator: newTraces,
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
  return { stop: () => sdk.shutdown(), newTraces };
}
