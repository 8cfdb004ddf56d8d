// Tracing for both services. Off (the default) unless an OTLP endpoint is configured: then no
// OpenTelemetry SDK is loaded and every helper here is one boolean test before calling through.
import {
  context,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type Tracer,
} from "@opentelemetry/api";
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import type { NewTraces } from "./roots";
import type { JournalRoute } from "./sdk";
import { ID_WORDS, JournalFlags } from "./server-span-journal";
import { tracingConfigured } from "./settings";

export { tracingConfigured, serviceNameConfigured } from "./settings";
export type { Span, Attributes } from "@opentelemetry/api";

/**
 * The ids of the span {@link recordServerSpan} last wrote to the journal: trace id (4 words), span
 * id (2). One array, overwritten by the next span: read it at once (an exemplar, metrics.ts).
 */
export type SpanIds = Uint32Array;
const journalIds: SpanIds = new Uint32Array(6);

let active = false;
let stopSdk: (() => Promise<void>) | undefined;
let sdkTracer: Tracer | undefined;
let newTraces: NewTraces | undefined;
let journalRoute: (() => JournalRoute | undefined) | undefined;
/** The request headers the configured propagators read (`traceparent`, `tracestate`, `baggage`, B3). */
let propagationFields: string[] = [];

/**
 * Starts the OpenTelemetry SDK when the environment configures an exporter, before the modules it
 * instruments are loaded (call it first thing in the entry point). `service` is the default
 * `service.name` (OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override it). Returns whether
 * tracing is on.
 */
export function startTracing(service: string, env: Record<string, string | undefined> = process.env): boolean {
  if (active) return true;
  if (!tracingConfigured(env)) return false;
  // A run-time require, so the SDK is loaded only here (also in the bundle, where it stays external).
  const { startSdk } = require("./sdk") as typeof import("./sdk");
  const sdk = startSdk(service, TRACER_NAME);
  stopSdk = sdk.stop;
  newTraces = sdk.newTraces;
  journalRoute = sdk.journal;
  sdkTracer = trace.getTracer(TRACER_NAME);
  propagationFields = propagation.fields();
  active = true;
  return true;
}

/** Flushes the spans still buffered and stops the SDK (a shutdown hook). */
export async function stopTracing(): Promise<void> {
  const stop = stopSdk;
  stopSdk = undefined;
  active = false;
  sdkTracer = undefined;
  newTraces = undefined;
  journalRoute = undefined;
  await stop?.();
}

export const tracingActive = (): boolean => active;

const TRACER_NAME = "media-platform";
const tracer = (): Tracer => sdkTracer ?? trace.getTracer(TRACER_NAME);

/** Whether the request carries a header some propagator reads (else it starts a new trace). */
function propagated(headers: IncomingHttpHeaders): boolean {
  for (const field of propagationFields) if (headers[field] !== undefined) return true;
  return false;
}

function failed(span: Span, error: unknown): void {
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
}

function run<T>(span: Span, fn: (span: Span) => T): T {
  let result: T;
  try {
    result = fn(span);
  } catch (error) {
    failed(span, error);
    span.end();
    throw error;
  }
  if (result instanceof Promise) {
    return result.then(
      (value: unknown) => {
        span.end();
        return value;
      },
      (error: unknown) => {
        failed(span, error);
        span.end();
        throw error;
      },
    ) as T;
  }
  span.end();
  return result;
}

/**
 * Runs `fn` in a child span of the active one, ended when `fn` returns or its promise settles (a
 * throw or rejection marks it failed). With tracing off, `fn(undefined)` and nothing else.
 */
export function inSpan<T>(name: string, attributes: Attributes | undefined, fn: (span: Span | undefined) => T): T {
  if (!active) return fn(undefined);
  return tracer().startActiveSpan(name, { attributes }, (span) => run(span, fn));
}

/** The current span, to add attributes to (undefined when tracing is off or nothing is recording). */
export function activeSpan(): Span | undefined {
  if (!active) return undefined;
  const span = trace.getActiveSpan();
  return span?.isRecording() ? span : undefined;
}

/**
 * A span already measured elsewhere (a render process, a worker thread), recorded as a child of
 * the active span with its own start and end (epoch milliseconds).
 */
export function recordSpan(name: string, startMs: number, endMs: number, attributes?: Attributes): void {
  if (!active) return;
  tracer().startSpan(name, { startTime: startMs, attributes }).end(endMs);
}

/** The propagation headers (`traceparent`, `tracestate`, `baggage`, or B3) of the active context. */
export function traceCarrier(): Record<string, string> | undefined {
  if (!active) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return Object.keys(carrier).length > 0 ? carrier : undefined;
}

/**
 * The active trace context as text, stored beside work done later (an outbox row), so the span
 * that does it links back to the request that asked for it. Undefined when tracing is off.
 */
export function captureTraceContext(): string | undefined {
  const carrier = traceCarrier();
  return carrier ? JSON.stringify(carrier) : undefined;
}

function storedContext(stored: string | null | undefined): Context | undefined {
  if (!stored) return undefined;
  try {
    const carrier = JSON.parse(stored) as unknown;
    if (!carrier || typeof carrier !== "object") return undefined;
    return propagation.extract(ROOT_CONTEXT, carrier as Record<string, string>);
  } catch {
    return undefined;
  }
}

/**
 * Runs `fn` in a new trace whose root span links to a context stored by {@link captureTraceContext}
 * (possibly by another replica, before a restart): outbox deliveries.
 */
export function inLinkedSpan<T>(
  name: string,
  stored: string | null | undefined,
  attributes: Attributes | undefined,
  fn: (span: Span | undefined) => T,
): T {
  if (!active) return fn(undefined);
  const links: Link[] = [];
  const linked = storedContext(stored);
  const spanContext = linked && trace.getSpanContext(linked);
  if (spanContext && isSpanContextValid(spanContext)) links.push({ context: spanContext });
  return tracer().startActiveSpan(
    name,
    { root: true, kind: SpanKind.PRODUCER, links, attributes },
    ROOT_CONTEXT,
    (span) => run(span, fn),
  );
}

/** `trace_id` and `span_id` of the active span, for log lines (pino mixin); {} outside a span. */
export function logTraceFields(): { trace_id?: string; span_id?: string } {
  const span = trace.getActiveSpan();
  if (!span) return {};
  const { traceId, spanId } = span.spanContext();
  return isSpanContextValid(span.spanContext()) ? { trace_id: traceId, span_id: spanId } : {};
}

/** Exemplar labels (OpenMetrics `trace_id`/`span_id`) of the active sampled span, or undefined. */
export function exemplarLabels(span: Span | undefined = activeSpan()): Record<string, string> | undefined {
  if (!span) return undefined;
  const c = span.spanContext();
  // Only sampled spans (flag bit 1) reach the backend, so only they make useful exemplars.
  if (!isSpanContextValid(c) || (c.traceFlags & 1) === 0) return undefined;
  return { trace_id: c.traceId, span_id: c.spanId };
}

/** Paths whose requests get no server span: probes and scrapes. */
const UNTRACED_PATHS = new Set(["/healthz", "/readyz", "/metrics"]);

/**
 * Wraps a node:http request handler: each request runs in a server span that continues the
 * caller's trace (`traceparent`, or B3 with OTEL_PROPAGATORS), named by its route once the route
 * is known (trackRequest / recordRawRequest), ended when the response closes. Returns `handler`
 * itself when tracing is off. Cheaper than the http instrumentation's incoming side, which
 * measured at a fraction of the media service's HIT throughput.
 */
export function traceRequests<Rest extends unknown[]>(
  handler: (req: IncomingMessage, res: ServerResponse, ...rest: Rest) => void,
): (req: IncomingMessage, res: ServerResponse, ...rest: Rest) => void {
  if (!active) return handler;
  const t = tracer();
  return (req, res, ...rest) => {
    const url = req.url ?? "/";
    const query = url.indexOf("?");
    if (UNTRACED_PATHS.has(query === -1 ? url : url.slice(0, query))) return handler(req, res, ...rest);
    let parent = ROOT_CONTEXT;
    if (propagated(req.headers)) parent = propagation.extract(ROOT_CONTEXT, req.headers);
    else if (newTraces?.sampleNew() === false) {
      // A new trace the sampler drops: its context only (trace id for the logs, an unsampled
      // traceparent for the calls it makes), as the SDK would make it, without the SDK.
      const spanContext = { traceId: newTraces.droppedTraceId(), spanId: "", traceFlags: TraceFlags.NONE };
      spanContext.spanId = newTraces.generateSpanId();
      context.with(
        trace.setSpan(ROOT_CONTEXT, trace.wrapSpanContext(spanContext)),
        handler,
        undefined,
        req,
        res,
        ...rest,
      );
      return;
    }
    const method = req.method ?? "GET";
    const span = t.startSpan(
      method,
      {
        kind: SpanKind.SERVER,
        attributes: { "http.request.method": method, "url.path": query === -1 ? url : url.slice(0, query) },
      },
      parent,
    );
    newTraces?.settle();
    if (span.isRecording()) {
      res.once("close", () => {
        span.setAttribute("http.response.status_code", res.statusCode);
        if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        if (!res.writableFinished) span.setAttribute("http.aborted", true);
        span.end();
      });
    }
    context.with(trace.setSpan(parent, span), handler, undefined, req, res, ...rest);
  };
}

/**
 * The server span of a request answered synchronously outside {@link traceRequests} (the media
 * service's memory-tier HITs), recorded once answered: no context is entered and no listener
 * added. With OTLP over HTTP it goes to the server span journal (server-span-journal.ts) as numbers,
 * decided by the SDK's own sampler; otherwise it is an SDK span. Returns what carries the span's ids
 * for an exemplar (the SDK span, or {@link SpanIds} of a journal span), or undefined when nothing is
 * recorded. `startMs`: performance.now() at arrival.
 */
export function recordServerSpan(
  req: IncomingMessage,
  status: number,
  route: string,
  startMs: number,
): Span | SpanIds | undefined {
  if (!active) return undefined;
  const journal = journalRoute?.();
  let parent = ROOT_CONTEXT;
  if (propagated(req.headers)) {
    parent = propagation.extract(ROOT_CONTEXT, req.headers);
    if (journal) {
      const recorded = journalChild(journal, parent, req.method ?? "GET", status, route, startMs);
      if (recorded !== SDK_SPAN) return recorded;
    }
  } else {
    const sampled = newTraces?.sampleNew();
    // A new trace the sampler drops gets no span at all (nothing would be recorded or propagated).
    if (sampled === false) return undefined;
    if (sampled === true && journal) return journalRoot(journal, req.method ?? "GET", status, route, startMs);
  }
  const method = req.method ?? "GET";
  const span = tracer().startSpan(
    `${method} ${route}`,
    {
      kind: SpanKind.SERVER,
      startTime: performance.timeOrigin + startMs,
      attributes: { "http.request.method": method, "http.route": route, "http.response.status_code": status },
    },
    parent,
  );
  newTraces?.settle();
  if (!span.isRecording()) return undefined;
  span.end();
  return span;
}

/** recordServerSpan's answer when the journal cannot take a span as the SDK would make it. */
const SDK_SPAN = Symbol("sdk span");

/** A new trace's root span, sampled by {@link NewTraces}, into the journal. */
function journalRoot(
  route: JournalRoute,
  method: string,
  status: number,
  name: string,
  startMs: number,
): SpanIds | undefined {
  const { journal } = route;
  const slot = journal.open();
  if (slot < 0) {
    newTraces!.settle();
    return undefined;
  }
  const ids = journal.idWords;
  const at = slot * ID_WORDS;
  newTraces!.takeTraceWords(ids, at);
  newTraces!.drawSpanWords(ids, at + 4);
  ids[at + 6] = 0;
  ids[at + 7] = 0;
  return closeJournalSpan(journal, slot, startMs, status, name, method, JournalFlags.sampled);
}

/**
 * A span continuing a propagated trace, into the journal when the SDK's sampler samples it as is
 * (no attributes or trace state of its own); SDK_SPAN for anything else the journal does not carry.
 */
function journalChild(
  route: JournalRoute,
  parent: Context,
  method: string,
  status: number,
  name: string,
  startMs: number,
): SpanIds | undefined | typeof SDK_SPAN {
  const parentContext = trace.getSpanContext(parent);
  if (!parentContext || !isSpanContextValid(parentContext) || parentContext.traceState) return SDK_SPAN;
  const attributes = { "http.request.method": method, "http.route": name, "http.response.status_code": status };
  const result = route.sampler.shouldSample(
    parent,
    parentContext.traceId,
    `${method} ${name}`,
    SpanKind.SERVER,
    attributes,
    [],
  );
  if (result.decision === NOT_RECORD) return undefined;
  if (
    result.decision !== RECORD_AND_SAMPLED ||
    result.traceState ||
    (result.attributes && Object.keys(result.attributes).length > 0)
  )
    return SDK_SPAN;
  const { journal } = route;
  const slot = journal.open();
  if (slot < 0) return undefined;
  const ids = journal.idWords;
  const at = slot * ID_WORDS;
  hexWords(parentContext.traceId, ids, at);
  newTraces!.drawSpanWords(ids, at + 4);
  hexWords(parentContext.spanId, ids, at + 6);
  const flags = JournalFlags.sampled | (parentContext.isRemote ? JournalFlags.parentRemote : 0);
  return closeJournalSpan(journal, slot, startMs, status, name, method, flags);
}

/** Ends the journal span at `slot` (its ids written), now; returns its ids. */
function closeJournalSpan(
  journal: JournalRoute["journal"],
  slot: number,
  startMs: number,
  status: number,
  name: string,
  method: string,
  flags: number,
): SpanIds {
  const ids = journal.idWords;
  const at = slot * ID_WORDS;
  for (let i = 0; i < 6; i++) journalIds[i] = ids[at + i]!;
  journal.close(
    slot,
    performance.timeOrigin + startMs,
    performance.timeOrigin + performance.now(),
    status,
    name,
    method,
    flags,
  );
  return journalIds;
}

/** SamplingDecision of @opentelemetry/sdk-trace-base. */
const NOT_RECORD = 0;
const RECORD_AND_SAMPLED = 2;

/** A hex id (32 or 16 digits, validated) as words into `target` at `offset`. */
function hexWords(id: string, target: Uint32Array, offset: number): void {
  for (let i = 0; i < id.length; i += 8) target[offset + i / 8] = parseInt(id.slice(i, i + 8), 16) >>> 0;
}

/** A span measured elsewhere: name, epoch-millisecond start and end, attributes. */
export interface MeasuredSpan {
  name: string;
  startMs: number;
  endMs: number;
  attributes?: Attributes;
}

/**
 * Records spans measured elsewhere (a render process over IPC, a worker thread) as children of the
 * span active now, whenever they arrive. Undefined when tracing is off or nothing is recording, so
 * the caller measures nothing.
 */
export function spanRecorder(): ((span: MeasuredSpan) => void) | undefined {
  if (!active) return undefined;
  const parent = context.active();
  if (!trace.getSpan(parent)?.isRecording()) return undefined;
  return ({ name, startMs, endMs, attributes }) =>
    tracer().startSpan(name, { startTime: startMs, attributes }, parent).end(endMs);
}

/**
 * The server span of the request being handled (started by the http instrumentation around the
 * request's handlers); undefined when tracing is off. Read it when the request arrives.
 */
export const requestSpan = activeSpan;

/** Names a server span by its route once the route is known (`GET /v1/assets/:id`). */
export function nameRequestSpan(span: Span, method: string | undefined, route: string): void {
  span.updateName(`${method ?? "GET"} ${route}`);
  span.setAttribute("http.route", route);
}
