// The OTLP HTTP sender of tracing, in a worker thread (started by worker-exporter.ts). It receives
// each batch already serialized and posts it with the OTLP exporter's own node transport:
// OTEL_EXPORTER_OTLP_* endpoint, headers, timeout and compression, retries and the concurrency
// limit all come from @opentelemetry/otlp-exporter-base, configured from the environment as the
// SDK's exporter is. Posting here keeps node:http's client off the main thread: a client request
// there reshapes the code the server's responses run through, and every response pays for it.
const { parentPort, workerData } = require("node:worker_threads");
const { OTLPExporterBase } = require("@opentelemetry/otlp-exporter-base");
const {
  convertLegacyHttpOptions,
  createOtlpHttpExportDelegate,
} = require("@opentelemetry/otlp-exporter-base/node-http");
const { JsonTraceSerializer, ProtobufTraceSerializer } = require("@opentelemetry/otlp-transformer");

const json = workerData.protocol === "http/json";
/** Serializes the spans of journal batches; the SDK's batches arrive serialized. */
const requests = json ? JsonTraceSerializer : ProtobufTraceSerializer;
const responses = requests;

/** A batch is `{ bytes, spans }`: the request body, and how many spans it holds (for the exporter's metrics). */
const serializer = {
  serializeRequest: (batch) => batch.bytes,
  deserializeResponse: (data) => responses.deserializeResponse(data),
};
const metricsHelper = { name: "span", countItems: (batch) => batch.spans };

const exporter = new OTLPExporterBase(
  createOtlpHttpExportDelegate(
    convertLegacyHttpOptions({}, "TRACES", "v1/traces", {
      "Content-Type": json ? "application/json" : "application/x-protobuf",
    }),
    serializer,
    "otlp_http_span_exporter",
    metricsHelper,
  ),
);

const hex = (words, offset, count) => {
  const bytes = Buffer.allocUnsafe(count * 4);
  for (let i = 0; i < count; i++) bytes.writeUInt32BE(words[offset + i], i * 4);
  return bytes.toString("hex");
};
const epochHrTime = (ms) => {
  const seconds = Math.floor(ms / 1000);
  return [seconds, Math.round((ms - seconds * 1000) * 1e6)];
};
const SERVER = 1; // SpanKind.SERVER of @opentelemetry/api
const ERROR = 2; // SpanStatusCode.ERROR
const PARENT_REMOTE = 1; // JournalFlags of server-span-journal.ts
const SAMPLED = 2;

/**
 * The spans of a journal batch (server-span-journal.ts: ids as words, epoch-millisecond times, status,
 * route and method) as the SDK's ReadableSpans, the shape the OTLP serializer reads.
 */
function journalSpans({ count, ids, times, meta, names }, origin) {
  const spans = new Array(count);
  for (let i = 0; i < count; i++) {
    const w = i * 8;
    const status = meta[i * 4];
    const route = names[meta[i * 4 + 1]];
    const method = names[meta[i * 4 + 2]];
    const flags = meta[i * 4 + 3];
    const context = { traceId: hex(ids, w, 4), spanId: hex(ids, w + 4, 2), traceFlags: flags & SAMPLED ? 1 : 0 };
    const root = ids[w + 6] === 0 && ids[w + 7] === 0;
    spans[i] = {
      name: `${method} ${route}`,
      kind: SERVER,
      spanContext: () => context,
      parentSpanContext: root
        ? undefined
        : {
            traceId: context.traceId,
            spanId: hex(ids, w + 6, 2),
            traceFlags: context.traceFlags,
            isRemote: (flags & PARENT_REMOTE) !== 0,
          },
      startTime: epochHrTime(times[i * 2]),
      endTime: epochHrTime(times[i * 2 + 1]),
      attributes: { "http.request.method": method, "http.route": route, "http.response.status_code": status },
      droppedAttributesCount: 0,
      status: { code: status >= 500 ? ERROR : 0 },
      events: [],
      droppedEventsCount: 0,
      links: [],
      droppedLinksCount: 0,
      resource: origin.resource,
      instrumentationScope: origin.scope,
    };
  }
  return spans;
}

const reply = (id) => (result) => parentPort.postMessage({ id, code: result.code, error: result.error?.message });

parentPort.on("message", (message) => {
  if (message.type === "export") {
    exporter.export({ bytes: message.bytes, spans: message.spans }, reply(message.id));
  } else if (message.type === "journal") {
    let bytes;
    try {
      bytes = requests.serializeRequest(journalSpans(message.batch, message.origin));
    } catch (error) {
      return reply(message.id)({ code: 1, error });
    }
    exporter.export({ bytes, spans: message.batch.count }, reply(message.id));
  } else if (message.type === "flush" || message.type === "shutdown") {
    const done = message.type === "flush" ? exporter.forceFlush() : exporter.shutdown();
    done.then(
      () => parentPort.postMessage({ id: message.id, code: 0 }),
      (error) => parentPort.postMessage({ id: message.id, code: 1, error: String(error?.message ?? error) }),
    );
  }
});
