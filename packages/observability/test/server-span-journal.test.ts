import { spawnSync } from "node:child_process";
import path from "node:path";
import { ID_WORDS, journalSettings, ServerSpanJournal, type JournalBatch } from "../src/tracing/server-span-journal";

const PACKAGE = path.resolve(__dirname, "..");

/** A journal whose sends stay pending until `answer()` is called, each batch kept (copied). */
function journal(settings = { batchSize: 4, queueSize: 6, delayMs: 60_000 }) {
  const sent: { count: number; ids: number[]; names: string[]; answer: () => void }[] = [];
  const j = new ServerSpanJournal(settings, (batch: JournalBatch) => {
    return new Promise<void>((resolve) =>
      sent.push({
        count: batch.count,
        ids: [...batch.ids.slice(0, batch.count * ID_WORDS)],
        names: batch.names,
        answer: resolve,
      }),
    );
  });
  const record = (n: number) => {
    const slot = j.open();
    if (slot < 0) return false;
    j.idWords.set([n, n, n, n, n, 1, 0, 0], slot * ID_WORDS);
    j.close(slot, 1000, 1001, 200, "hot_path", "GET", 2);
    return true;
  };
  return { j, sent, record };
}

describe("ServerSpanJournal: the batches of memory-tier server spans", () => {
  it("sends a full batch at once, and keeps at most the queue size waiting for the export thread", async () => {
    const { j, sent, record } = journal();
    for (let n = 1; n <= 4; n++) expect(record(n)).toBe(true);
    expect(sent.map((b) => b.count)).toEqual([4]);
    expect(sent[0]!.ids.filter((_, i) => i % ID_WORDS === 0)).toEqual([1, 2, 3, 4]);
    expect(sent[0]!.names).toEqual(["other", "hot_path", "GET"]);
    // 4 in flight, queue 6: two more are kept, the third is dropped.
    expect(record(5)).toBe(true);
    expect(record(6)).toBe(true);
    expect(record(7)).toBe(false);
    expect(j.droppedSpans).toBe(1);
    sent[0]!.answer();
    await new Promise((r) => setImmediate(r));
    expect(record(8)).toBe(true);
    const flushed = j.flushAll();
    expect(sent.map((b) => b.count)).toEqual([4, 3]);
    expect(sent[1]!.ids.filter((_, i) => i % ID_WORDS === 0)).toEqual([5, 6, 8]);
    let done = false;
    void flushed.then(() => (done = true));
    await new Promise((r) => setImmediate(r));
    expect(done).toBe(false);
    sent[1]!.answer();
    await flushed;
  });

  it("sends a batch that is not full after the schedule delay", async () => {
    const { sent, record } = journal({ batchSize: 512, queueSize: 2048, delayMs: 30 });
    record(1);
    record(2);
    expect(sent).toEqual([]);
    await new Promise((r) => setTimeout(r, 120));
    expect(sent.map((b) => b.count)).toEqual([2]);
  });

  it("grows a large batch as it fills, keeping the spans recorded", () => {
    const { j, sent, record } = journal({ batchSize: 3000, queueSize: 3000, delayMs: 60_000 });
    for (let n = 1; n <= 2999; n++) record(n);
    expect(j.idWords.length).toBe(3000 * ID_WORDS);
    expect(sent).toEqual([]);
    record(3000);
    expect(sent.map((b) => b.count)).toEqual([3000]);
    expect(sent[0]!.ids.filter((_, i) => i % ID_WORDS === 0)).toEqual(Array.from({ length: 3000 }, (_, i) => i + 1));
    // The next batch starts small again.
    expect(j.idWords.length).toBe(1024 * ID_WORDS);
  });

  it("reads the batch processor's variables as the SDK does", () => {
    expect(journalSettings({})).toEqual({ batchSize: 512, queueSize: 2048, delayMs: 5000 });
    expect(
      journalSettings({
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "64",
        OTEL_BSP_MAX_QUEUE_SIZE: "256",
        OTEL_BSP_SCHEDULE_DELAY: "100",
      }),
    ).toEqual({ batchSize: 64, queueSize: 256, delayMs: 100 });
    expect(journalSettings({ OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "4096", OTEL_BSP_SCHEDULE_DELAY: "soon" })).toEqual({
      batchSize: 2048,
      queueSize: 2048,
      delayMs: 5000,
    });
  });
});

interface JsonSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  traceState?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string | number;
  endTimeUnixNano: string | number;
  attributes: { key: string; value: Record<string, unknown> }[];
  status: { code?: number };
  flags: number;
}
interface JsonExport {
  resourceSpans: {
    resource: { attributes: { key: string; value: { stringValue?: string } }[] };
    scopeSpans: { scope: { name: string }; spans: JsonSpan[] }[];
  }[];
}

describe("memory-tier server spans in a process, through the journal and the export thread", () => {
  // recordServerSpan for the four kinds of request a CDN sends, then a shutdown, which must flush them.
  const code = `
    const http = require("node:http");
    const received = [];
    const collector = http.createServer((req, res) => {
      const chunks = [];
      req.on("data", (c) => chunks.push(c));
      req.on("end", () => {
        received.push({ type: req.headers["content-type"], body: Buffer.concat(chunks).toString(req.headers["content-type"] === "application/json" ? "utf8" : "base64") });
        res.writeHead(200).end();
      });
    });
    collector.listen(0, "127.0.0.1", async () => {
      process.env.OTEL_EXPORTER_OTLP_ENDPOINT = "http://127.0.0.1:" + collector.address().port;
      const o = require("./src");
      o.startTracing("probe");
      const request = (headers) => ({ method: "GET", headers });
      const before = Date.now();
      const start = performance.now();
      const kinds = {};
      const record = (name, headers, status) => {
        const span = o.recordServerSpan(request(headers), status, "hot_path", start);
        // A journal span answers its ids as words (for the exemplar), an SDK span itself.
        const hex = (words, from, count) => Array.from(words.subarray(from, from + count), (w) => w.toString(16).padStart(8, "0")).join("");
        kinds[name] = span && (span instanceof Uint32Array
          ? { type: "journal", traceId: hex(span, 0, 4), spanId: hex(span, 4, 2), traceFlags: 1 }
          : { type: span.constructor.name, ...span.spanContext() });
      };
      record("root", {}, 200);
      record("child", { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" }, 304);
      record("unsampled", { traceparent: "00-1af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00" }, 200);
      record("tracestate", { traceparent: "00-2af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", tracestate: "cdn=edge1" }, 200);
      record("failed", {}, 503);
      await o.stopTracing();
      console.log(JSON.stringify({ before, after: Date.now(), kinds, received }));
      process.exit(0);
    });`;

  function runProbe(protocol: string) {
    const run = spawnSync(process.execPath, ["--import", "tsx", "-e", code], {
      cwd: PACKAGE,
      env: {
        PATH: process.env.PATH ?? "",
        OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
        OTEL_RESOURCE_ATTRIBUTES: "deployment.environment.name=test",
      },
      encoding: "utf8",
      timeout: 60_000,
    });
    if (run.status !== 0) throw new Error(`exit ${run.status}: ${run.stderr}`);
    return JSON.parse(run.stdout.trim().split("\n").at(-1)!) as {
      before: number;
      after: number;
      kinds: Record<string, { type: string; traceId: string; spanId: string; traceFlags: number } | undefined>;
      received: { type: string; body: string }[];
    };
  }

  it("http/json: every sampled span arrives as the SDK would send it, the ones it samples as is without an SDK span", () => {
    const { before, after, kinds, received } = runProbe("http/json");
    // Journal spans carry only their ids; the trace state needs the SDK's own span.
    expect(kinds.root?.type).toBe("journal");
    expect(kinds.child?.type).toBe("journal");
    expect(kinds.failed?.type).toBe("journal");
    expect(kinds.unsampled).toBeUndefined();
    expect(kinds.tracestate?.type).not.toBe("journal");
    for (const r of received) expect(r.type).toBe("application/json");
    const exports = received.map((r) => JSON.parse(r.body) as JsonExport);
    const spans = exports.flatMap((e) =>
      e.resourceSpans.flatMap((rs) => {
        const resource = Object.fromEntries(rs.resource.attributes.map((a) => [a.key, a.value.stringValue]));
        return rs.scopeSpans.flatMap((ss) => ss.spans.map((s) => ({ ...s, resource, scope: ss.scope.name })));
      }),
    );
    expect(spans).toHaveLength(4);
    const byTrace = (id: string) => spans.find((s) => s.traceId === id)!;
    const attributes = (s: JsonSpan) =>
      Object.fromEntries(s.attributes.map((a) => [a.key, a.value.stringValue ?? Number(a.value.intValue)]));
    for (const s of spans) {
      expect(s.name).toBe("GET hot_path");
      expect(s.kind).toBe(2); // SERVER
      expect(s.scope).toBe("media-platform");
      expect(s.resource).toMatchObject({ "service.name": "probe", "deployment.environment.name": "test" });
      const start = Number(BigInt(s.startTimeUnixNano) / 1_000_000n);
      const end = Number(BigInt(s.endTimeUnixNano) / 1_000_000n);
      expect(start).toBeGreaterThanOrEqual(before - 50); // the performance clock may drift from Date.now()
      expect(end).toBeGreaterThanOrEqual(start);
      expect(end).toBeLessThanOrEqual(after + 50);
    }
    const root = byTrace(kinds.root!.traceId);
    expect(root.spanId).toBe(kinds.root!.spanId);
    expect(root.parentSpanId ?? "").toBe("");
    expect(root.flags).toBe(0x101); // sampled, parent is not remote (there is none)
    expect(attributes(root)).toEqual({
      "http.request.method": "GET",
      "http.route": "hot_path",
      "http.response.status_code": 200,
    });
    expect(root.status.code ?? 0).toBe(0);

    const child = byTrace("0af7651916cd43dd8448eb211c80319c");
    expect(child.spanId).toBe(kinds.child!.spanId);
    expect(child.parentSpanId).toBe("b7ad6b7169203331");
    expect(child.flags).toBe(0x301); // sampled, remote parent
    expect(attributes(child)["http.response.status_code"]).toBe(304);

    const failed = byTrace(kinds.failed!.traceId);
    expect(attributes(failed)["http.response.status_code"]).toBe(503);
    expect(failed.status.code).toBe(2); // ERROR

    const withState = byTrace("2af7651916cd43dd8448eb211c80319c");
    expect(withState.traceState).toBe("cdn=edge1");
    expect(withState.parentSpanId).toBe("b7ad6b7169203331");
    expect(spans.some((s) => s.traceId === "1af7651916cd43dd8448eb211c80319c")).toBe(false);
  });

  it("http/protobuf: the same spans arrive protobuf-encoded", () => {
    const { kinds, received } = runProbe("http/protobuf");
    expect(received.length).toBeGreaterThanOrEqual(1);
    for (const r of received) expect(r.type).toBe("application/x-protobuf");
    const bytes = Buffer.concat(received.map((r) => Buffer.from(r.body, "base64")));
    for (const name of ["root", "child", "failed", "tracestate"]) {
      expect(bytes.includes(Buffer.from(kinds[name]!.traceId, "hex"))).toBe(true);
      expect(bytes.includes(Buffer.from(kinds[name]!.spanId, "hex"))).toBe(true);
    }
    expect(bytes.includes(Buffer.from("1af7651916cd43dd8448eb211c80319c", "hex"))).toBe(false);
    expect(bytes.includes(Buffer.from("GET hot_path"))).toBe(true);
    expect(bytes.includes(Buffer.from("deployment.environment.name"))).toBe(true);
  });
});
