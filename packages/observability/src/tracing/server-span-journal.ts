// The server spans of requests answered synchronously (the media service's memory-tier HITs), kept
// as numbers in a typed batch instead of SDK span objects. A HIT is answered in about 30 µs of CPU;
// an SDK span, with its batch processor and serializer on the main thread, cost it 15-50 µs more
// per request in the service, mostly garbage: thousands of span objects a second, each held until
// its batch is sent. Here a span is ten numbers written in place, and a full batch's buffer moves
// to the export thread (otlp-export-worker.cjs), which builds the spans and serializes them with
// the same OTLP serializer as every other span.
import type { Attributes } from "@opentelemetry/api";

/** What the export thread needs besides the numbers: where the spans come from. */
export interface JournalOrigin {
  resource: { attributes: Attributes; schemaUrl?: string };
  scope: { name: string; version?: string; schemaUrl?: string };
}

/** One batch as posted to the export thread (its buffers are transferred, not copied). */
export interface JournalBatch {
  count: number;
  /** Per span: trace id (4 words), span id (2), parent span id (2; zero: a root span). */
  ids: Uint32Array;
  /** Per span: start and end, epoch milliseconds. */
  times: Float64Array;
  /** Per span: status code, route and method (indexes into `names`), flags ({@link JournalFlags}). */
  meta: Uint16Array;
  names: string[];
}

/** Bits of a span's flags. */
export const JournalFlags = { parentRemote: 1, sampled: 2 } as const;

export const ID_WORDS = 8;
const TIMES = 2;
const META = 4;
const INITIAL_CAPACITY = 1024;

export interface JournalSettings {
  /** Spans per batch (OTEL_BSP_MAX_EXPORT_BATCH_SIZE). */
  batchSize: number;
  /** Spans that may wait for the export thread before new ones are dropped (OTEL_BSP_MAX_QUEUE_SIZE). */
  queueSize: number;
  /** Milliseconds a span waits at most before its batch is sent (OTEL_BSP_SCHEDULE_DELAY). */
  delayMs: number;
}

/** The batch processor's settings, read from the same variables and defaults as the SDK's. */
export function journalSettings(env: Record<string, string | undefined> = process.env): JournalSettings {
  const read = (name: string, fallback: number): number => {
    const value = Number(env[name]);
    return env[name]?.trim() && Number.isFinite(value) && value > 0 ? value : fallback;
  };
  const queueSize = read("OTEL_BSP_MAX_QUEUE_SIZE", 2048);
  return {
    queueSize,
    batchSize: Math.min(read("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512), queueSize),
    delayMs: read("OTEL_BSP_SCHEDULE_DELAY", 5000),
  };
}

export class ServerSpanJournal {
  private ids!: Uint32Array;
  private times!: Float64Array;
  private meta!: Uint16Array;
  private count = 0;
  /** Spans posted to the export thread and not yet answered. */
  private inFlight = 0;
  /** Route and method names by index; 0 is "other", for anything past the table's bound. */
  private readonly nameIndex = new Map<string, number>([["other", 0]]);
  private readonly names: string[] = ["other"];
  private timer: NodeJS.Timeout | undefined;
  private dropped = 0;

  constructor(
    private readonly settings: JournalSettings,
    /** Sends a batch; resolves once the export thread has answered for it. */
    private readonly send: (batch: JournalBatch, transfer: ArrayBuffer[]) => Promise<void>,
  ) {
    this.allocate();
  }

  /** Spans refused because the export thread was `queueSize` spans behind. */
  get droppedSpans(): number {
    return this.dropped;
  }

  /**
   * The slot of a new span, whose ids the caller writes into {@link idWords} at `slot * ID_WORDS`
   * before calling {@link close}; -1 when the queue is full (the span is dropped).
   */
  open(): number {
    if (this.inFlight + this.count >= this.settings.queueSize) {
      this.dropped++;
      return -1;
    }
    if (this.count * ID_WORDS === this.ids.length) this.grow();
    return this.count;
  }

  /** The id words of the batch being filled (see {@link open}). */
  get idWords(): Uint32Array {
    return this.ids;
  }

  /** Records the span in `slot` (from {@link open}, its ids written) and sends the batch when full. */
  close(
    slot: number,
    startMs: number,
    endMs: number,
    status: number,
    route: string,
    method: string,
    flags: number,
  ): void {
    this.times[slot * TIMES] = startMs;
    this.times[slot * TIMES + 1] = endMs;
    const m = slot * META;
    this.meta[m] = status;
    this.meta[m + 1] = this.nameOf(route);
    this.meta[m + 2] = this.nameOf(method);
    this.meta[m + 3] = flags;
    this.count = slot + 1;
    if (this.count >= this.settings.batchSize) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.settings.delayMs).unref();
  }

  /** Sends the spans recorded so far; resolves when every batch sent until now is answered. */
  async flushAll(): Promise<void> {
    this.flush();
    await this.sending;
  }

  private sending: Promise<void> = Promise.resolve();

  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const count = this.count;
    if (count === 0) return;
    const batch: JournalBatch = {
      count,
      ids: this.ids,
      times: this.times,
      meta: this.meta,
      names: this.names.slice(),
    };
    this.allocate();
    this.inFlight += count;
    const sent = this.send(batch, [
      batch.ids.buffer as ArrayBuffer,
      batch.times.buffer as ArrayBuffer,
      batch.meta.buffer as ArrayBuffer,
    ])
      .catch(() => undefined)
      .finally(() => {
        this.inFlight -= count;
      });
    this.sending = Promise.all([this.sending, sent]).then(() => undefined);
  }

  /** A new batch, sized for the usual batch (a large OTEL_BSP_MAX_EXPORT_BATCH_SIZE grows it as it fills). */
  private allocate(): void {
    this.count = 0;
    this.resize(Math.min(this.settings.batchSize, INITIAL_CAPACITY));
  }

  private grow(): void {
    this.resize(Math.min(this.settings.batchSize, (this.ids.length / ID_WORDS) * 2));
  }

  private resize(spans: number): void {
    const ids = new Uint32Array(spans * ID_WORDS);
    const times = new Float64Array(spans * TIMES);
    const meta = new Uint16Array(spans * META);
    if (this.count > 0) {
      ids.set(this.ids.subarray(0, this.count * ID_WORDS));
      times.set(this.times.subarray(0, this.count * TIMES));
      meta.set(this.meta.subarray(0, this.count * META));
    }
    this.ids = ids;
    this.times = times;
    this.meta = meta;
  }

  private nameOf(name: string): number {
    let index = this.nameIndex.get(name);
    if (index === undefined) {
      // A bounded table: routes are patterns and methods are few; anything past it is "other".
      if (this.names.length >= 0xffff) return 0;
      index = this.names.push(name) - 1;
      this.nameIndex.set(name, index);
    }
    return index;
  }
}
