// The trace exporter of both services (OTLP over HTTP, protobuf or JSON): each batch is serialized
// here with the SDK's own serializers and handed to a worker thread that posts it
// (otlp-export-worker.cjs, with the OTLP exporter's node transport). On the main thread a
// node:http client request, however rare, makes the code it shares with the server's responses
// polymorphic (V8 deoptimizes it), and every memory-tier HIT then runs measurably slower; in the
// worker it runs in an isolate of its own.
import path from "node:path";
import { Worker } from "node:worker_threads";
import type { NodeSDK } from "@opentelemetry/sdk-node";
import { JsonTraceSerializer, ProtobufTraceSerializer } from "@opentelemetry/otlp-transformer";
import { type JournalOrigin, type JournalSettings, ServerSpanJournal } from "./server-span-journal";

type SpanExporter = NonNullable<NonNullable<ConstructorParameters<typeof NodeSDK>[0]>["traceExporter"]>;
type ReadableSpan = Parameters<SpanExporter["export"]>[0][number];
type ExportResult = Parameters<Parameters<SpanExporter["export"]>[1]>[0];

/** Beside this module in the sources, and beside the bundle in dist (scripts/build.ts copies it). */
const WORKER_ENTRY = path.join(__dirname, "otlp-export-worker.cjs");

/** ExportResultCode of @opentelemetry/core. */
const SUCCESS = 0;
const FAILED = 1;

interface Reply {
  id: number;
  code: number;
  error?: string;
}

export type OtlpHttpProtocol = "http/protobuf" | "http/json";

/**
 * The protocol of an OTLP trace exporter over HTTP that the environment configures, or undefined
 * when it asks for something else (gRPC, other exporters), which the SDK then builds itself.
 */
export function otlpHttpProtocol(env: Record<string, string | undefined> = process.env): OtlpHttpProtocol | undefined {
  const exporters = (env.OTEL_TRACES_EXPORTER ?? "")
    .split(",")
    .map((name) => name.trim())
    .filter(Boolean);
  if (exporters.some((name) => name !== "otlp")) return undefined;
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? "").trim();
  if (protocol === "" || protocol === "http/protobuf") return "http/protobuf";
  return protocol === "http/json" ? "http/json" : undefined;
}

export class WorkerSpanExporter implements SpanExporter {
  private worker: Worker | undefined;
  private nextId = 0;
  private readonly pending = new Map<number, (reply: Reply) => void>();
  private readonly serializer: typeof ProtobufTraceSerializer | typeof JsonTraceSerializer;
  private stopped = false;
  private journal: ServerSpanJournal | undefined;

  constructor(private readonly protocol: OtlpHttpProtocol) {
    this.serializer = protocol === "http/json" ? JsonTraceSerializer : ProtobufTraceSerializer;
  }

  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    if (this.stopped) return resultCallback({ code: FAILED, error: new Error("exporter is shut down") });
    let bytes: Uint8Array | undefined;
    try {
      bytes = this.serializer.serializeRequest(spans);
    } catch (error) {
      return resultCallback({ code: FAILED, error: error instanceof Error ? error : new Error(String(error)) });
    }
    if (!bytes) return resultCallback({ code: FAILED, error: new Error("Nothing to send") });
    // Transfer the bytes when they own their buffer; a view into a shared one is copied.
    const owned = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice();
    this.request({ type: "export", bytes: owned, spans: spans.length }, [owned.buffer as ArrayBuffer]).then((reply) =>
      resultCallback(
        reply.code === SUCCESS ? { code: SUCCESS } : { code: FAILED, error: new Error(reply.error ?? "export failed") },
      ),
    );
  }

  /**
   * The journal of server spans sent through this exporter's thread (one per exporter); flushed and
   * stopped with the exporter.
   */
  openJournal(origin: () => Promise<JournalOrigin>, settings: JournalSettings): ServerSpanJournal {
    this.journal ??= new ServerSpanJournal(settings, async (batch, transfer) => {
      const from = await origin();
      if (this.stopped) return;
      const reply = await this.request({ type: "journal", batch, origin: from }, transfer);
      if (reply.code !== SUCCESS) throw new Error(reply.error ?? "export failed");
    });
    return this.journal;
  }

  async forceFlush(): Promise<void> {
    await this.journal?.flushAll();
    if (!this.worker) return;
    await this.request({ type: "flush" });
  }

  async shutdown(): Promise<void> {
    if (this.stopped) return;
    await this.journal?.flushAll();
    this.stopped = true;
    const worker = this.worker;
    if (!worker) return;
    await this.request({ type: "shutdown" });
    this.worker = undefined;
    await worker.terminate();
  }

  /** Posts to the worker (started on first use); resolves with its reply, or a failure if it dies. */
  private request(message: Record<string, unknown>, transfer: ArrayBuffer[] = []): Promise<Reply> {
    const worker = (this.worker ??= this.start());
    const id = ++this.nextId;
    // The thread keeps the process alive only while an answer is awaited (a flush at shutdown).
    worker.ref();
    return new Promise<Reply>((resolve) => {
      this.pending.set(id, resolve);
      worker.postMessage({ ...message, id }, transfer);
    });
  }

  private start(): Worker {
    const worker = new Worker(WORKER_ENTRY, { workerData: { protocol: this.protocol } });
    const settle = (reply: Reply) => {
      const resolve = this.pending.get(reply.id);
      if (!resolve) return;
      this.pending.delete(reply.id);
      if (this.pending.size === 0) worker.unref();
      resolve(reply);
    };
    worker.on("message", settle);
    const fail = (error: unknown) => {
      // A dead thread fails what it held; the next export starts a new one.
      if (this.worker === worker) this.worker = undefined;
      for (const id of [...this.pending.keys()]) settle({ id, code: FAILED, error: String(error) });
    };
    worker.on("error", fail);
    worker.on("exit", (code) => fail(`export worker exited with code ${code}`));
    worker.unref();
    return worker;
  }
}
