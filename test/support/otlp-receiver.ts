// An in-process OTLP/HTTP trace receiver for tests: accepts `POST /v1/traces` in both encodings the
// services export (http/protobuf, decoded with the OTLP protobuf types that
// @opentelemetry/otlp-transformer generates with protobufjs, and http/json) and keeps the spans.
import http from "node:http";
import type { AddressInfo } from "node:net";

// protobufjs static module of the OTLP protos (opentelemetry.proto.*), shipped by otlp-transformer.
const otlpRoot = require("@opentelemetry/otlp-transformer/build/src/generated/root") as {
  opentelemetry: {
    proto: {
      collector: {
        trace: {
          v1: {
            ExportTraceServiceRequest: {
              decode(bytes: Uint8Array): unknown;
              toObject(message: unknown, options: Record<string, unknown>): OtlpRequest;
            };
          };
        };
      };
    };
  };
};

type Id = string | Uint8Array | undefined;
interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}
interface OtlpAttribute {
  key: string;
  value?: OtlpValue;
}
interface OtlpSpan {
  traceId: Id;
  spanId: Id;
  parentSpanId?: Id;
  name: string;
  kind?: number | string;
  startTimeUnixNano?: string | number;
  endTimeUnixNano?: string | number;
  attributes?: OtlpAttribute[];
  links?: { traceId: Id; spanId: Id }[];
}
interface OtlpRequest {
  resourceSpans?: { resource?: { attributes?: OtlpAttribute[] }; scopeSpans?: { spans?: OtlpSpan[] }[] }[];
}

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** "" for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 2 is SERVER. */
  kind: number;
  /** Epoch milliseconds. */
  startMs: number;
  endMs: number;
  /** The resource's `service.name`. */
  service: string;
  resource: Record<string, unknown>;
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string }[];
}

const hex = (id: Id): string => (id === undefined ? "" : typeof id === "string" ? id : Buffer.from(id).toString("hex"));

function value(v: OtlpValue | undefined): unknown {
  if (!v) return undefined;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  return v.boolValue;
}

const attributes = (list: OtlpAttribute[] | undefined): Record<string, unknown> =>
  Object.fromEntries((list ?? []).map((a) => [a.key, value(a.value)]));

function spansOf(request: OtlpRequest): ReceivedSpan[] {
  return (request.resourceSpans ?? []).flatMap((rs) => {
    const resource = attributes(rs.resource?.attributes);
    return (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => ({
        traceId: hex(s.traceId),
        spanId: hex(s.spanId),
        parentSpanId: hex(s.parentSpanId),
        name: s.name,
        kind: Number(s.kind ?? 0),
        startMs: Number(BigInt(s.startTimeUnixNano ?? 0) / 1_000_000n),
        endMs: Number(BigInt(s.endTimeUnixNano ?? 0) / 1_000_000n),
        service: String(resource["service.name"]),
        resource,
        attributes: attributes(s.attributes),
        links: (s.links ?? []).map((l) => ({ traceId: hex(l.traceId), spanId: hex(l.spanId) })),
      })),
    );
  });
}

export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  /** The content types the exports arrived with. */
  contentTypes: Set<string>;
  /** Resolves once `match` holds for the spans received (polls; rejects after `limitMs`). */
  waitFor<T>(match: (spans: ReceivedSpan[]) => T | undefined | false, what: string, limitMs?: number): Promise<T>;
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes = new Set<string>();
  const Request = otlpRoot.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim();
      if (req.method !== "POST" || req.url !== "/v1/traces") {
        res.writeHead(404).end();
        return;
      }
      contentTypes.add(type);
      const decoded =
        type === "application/json"
          ? (JSON.parse(body.toString("utf8")) as OtlpRequest)
          : Request.toObject(Request.decode(body), { longs: String, arrays: true });
      spans.push(...spansOf(decoded));
      res.writeHead(200, { "Content-Type": type }).end(type === "application/json" ? "{}" : undefined);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    spans,
    contentTypes,
    async waitFor(match, what, limitMs = 60_000) {
      const until = Date.now() + limitMs;
      for (;;) {
        const found = match(spans);
        if (found) return found;
        if (Date.now() > until) {
          const names = spans.map((s) => `${s.service} ${s.name} ${s.traceId}`).join("\n");
          throw new Error(`no ${what} among the ${spans.length} spans received:\n${names}`);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
