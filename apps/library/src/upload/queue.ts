/**
 * The upload queue: every file dropped is kept until it is stored or refused for a reason a
 * person can act on. At most `concurrency` files travel at once (the server's per-workspace
 * limit, from the page's <meta>), so a batch of any size meets no 503 of its own making; a 503
 * from elsewhere (other tabs, other people) pauses the queue for its Retry-After and the file
 * goes again. How a file travels is one replaceable function, `UploadTransport`.
 */
import { describeUploadFailure, type UploadFailure } from "./problems";

/** What a transport reports back: the HTTP status and parsed body, or a network failure (status 0). */
export interface TransportResult {
  status: number;
  body: unknown;
  /** The Retry-After header in seconds, when the answer carried one. */
  retryAfterSeconds?: number;
}

export interface TransportJob {
  file: File;
  /** Collection the asset goes to ("" = none). */
  collectionId: string;
  /** Bytes of the file sent so far; the transport calls it as they go. */
  onProgress(sentBytes: number): void;
  signal: AbortSignal;
}

/** Sends one file; resolves with the server's answer (never rejects for an HTTP status). */
export type UploadTransport = (job: TransportJob) => Promise<TransportResult>;

export type UploadState = "queued" | "uploading" | "paused" | "processing" | "done" | "refused";

export interface UploadItem<Asset = unknown> {
  key: number;
  name: string;
  size: number;
  state: UploadState;
  /** Bytes sent (uploading), the whole size once sent. */
  sent: number;
  /** Set while a queued file waits for the server's Retry-After: when it goes again (ms epoch). */
  retryAt?: number;
  attempts: number;
  asset?: Asset;
  failure?: UploadFailure;
}

export interface UploadQueueOptions<Asset> {
  transport: UploadTransport;
  /** Files in flight at once: the server's per-workspace upload limit. */
  concurrency: number;
  /** The server's size cap: larger files are refused before a byte is sent. */
  maxBytes: number;
  /** The success answer's body as the caller wants it (the uploaded asset). */
  accept(body: unknown): Asset;
  /** Called on every change with the current items (a new array each time). */
  onChange(items: readonly UploadItem<Asset>[]): void;
  /** A file finished (stored): the grid reloads. */
  onDone?(item: UploadItem<Asset>): void;
  /** Timers and clock (tests pin them). */
  now?: () => number;
  setTimer?: (fn: () => void, ms: number) => unknown;
}

/** How often a file may meet "busy" (503) or a dropped connection before it is refused. */
export const MAX_BUSY_ATTEMPTS = 30;
export const MAX_NETWORK_ATTEMPTS = 3;
/** Waits when the server named none: 2 s, then doubling, at most 30 s. */
const fallbackDelay = (attempt: number): number => Math.min(30_000, 2000 * 2 ** Math.max(0, attempt - 1));

export class UploadQueue<Asset = unknown> {
  private items: UploadItem<Asset>[] = [];
  private readonly files = new Map<number, { file: File; collectionId: string }>();
  private readonly controllers = new Map<number, AbortController>();
  /** Files their person paused while they travelled: their transport's end is not a failure. */
  private readonly pausing = new Set<number>();
  private active = 0;
  private pausedUntil = 0;
  private wakeScheduled = false;
  private nextKey = 0;
  private readonly now: () => number;
  private readonly setTimer: (fn: () => void, ms: number) => unknown;

  constructor(private readonly options: UploadQueueOptions<Asset>) {
    this.now = options.now ?? Date.now;
    this.setTimer = options.setTimer ?? ((fn, ms) => setTimeout(fn, ms));
  }

  get list(): readonly UploadItem<Asset>[] {
    return this.items;
  }

  /** Queues the files (in order); oversized ones are refused at once, naming the limit. */
  add(files: readonly File[], collectionId: string): void {
    for (const file of files) {
      const key = this.nextKey++;
      const item: UploadItem<Asset> = { key, name: file.name, size: file.size, state: "queued", sent: 0, attempts: 0 };
      if (file.size > this.options.maxBytes) {
        item.state = "refused";
        item.failure = describeUploadFailure(
          { status: 413, body: { type: "payload-too-large" } },
          { name: file.name, size: file.size, maxBytes: this.options.maxBytes },
        );
      } else {
        this.files.set(key, { file, collectionId });
      }
      this.items.push(item);
    }
    this.changed();
    this.pump();
  }

  /** A refused file that can go again (busy, connection lost) is queued anew. */
  retry(key: number): void {
    const item = this.items.find((i) => i.key === key);
    if (!item || item.state !== "refused" || !this.files.has(key)) return;
    this.patch(key, { state: "queued", sent: 0, attempts: 0, failure: undefined, retryAt: undefined });
    this.pump();
  }

  /**
   * Stops a queued or travelling file until `resume`. A resumable transport keeps what the
   * server holds, so the file goes on from there; the multipart one starts over.
   */
  pause(key: number): void {
    const item = this.items.find((i) => i.key === key);
    if (!item) return;
    if (item.state === "queued") this.patch(key, { state: "paused", retryAt: undefined });
    else if (item.state === "uploading") {
      this.pausing.add(key);
      this.controllers.get(key)?.abort();
    }
  }

  resume(key: number): void {
    const item = this.items.find((i) => i.key === key);
    if (!item || item.state !== "paused") return;
    this.patch(key, { state: "queued", attempts: 0 });
    this.pump();
  }

  /** Removes what is over (stored or refused) from the list. */
  clearFinished(): void {
    for (const item of this.items) if (item.state === "done" || item.state === "refused") this.files.delete(item.key);
    this.items = this.items.filter((i) => i.state !== "done" && i.state !== "refused");
    this.changed();
  }

  /** Stops every upload in flight (the view is leaving). */
  abortAll(): void {
    for (const controller of this.controllers.values()) controller.abort();
  }

  private patch(key: number, change: Partial<UploadItem<Asset>>): void {
    this.items = this.items.map((i) => (i.key === key ? { ...i, ...change } : i));
    this.changed();
  }

  private changed(): void {
    this.options.onChange(this.items);
  }

  /** Starts queued files while slots are free and the server has not asked to wait. */
  private pump(): void {
    const now = this.now();
    if (now < this.pausedUntil) {
      this.wakeAt(this.pausedUntil);
      return;
    }
    let nextRetry = Infinity;
    for (const item of this.items) {
      if (this.active >= this.options.concurrency) return;
      if (item.state !== "queued") continue;
      if (item.retryAt !== undefined && item.retryAt > now) {
        nextRetry = Math.min(nextRetry, item.retryAt);
        continue;
      }
      void this.send(item.key);
    }
    if (nextRetry !== Infinity) this.wakeAt(nextRetry);
  }

  private wakeAt(at: number): void {
    if (this.wakeScheduled) return;
    this.wakeScheduled = true;
    this.setTimer(
      () => {
        this.wakeScheduled = false;
        this.pump();
      },
      Math.max(0, at - this.now()),
    );
  }

  private async send(key: number): Promise<void> {
    const entry = this.files.get(key)!;
    const item = this.items.find((i) => i.key === key)!;
    const attempts = item.attempts + 1;
    this.active++;
    const controller = new AbortController();
    this.controllers.set(key, controller);
    this.patch(key, { state: "uploading", sent: 0, attempts, retryAt: undefined });
    let result: TransportResult;
    try {
      result = await this.options.transport({
        file: entry.file,
        collectionId: entry.collectionId,
        signal: controller.signal,
        onProgress: (sent) => {
          const current = this.items.find((i) => i.key === key);
          if (!current || current.state !== "uploading") return;
          // Every byte sent: the server is analysing and storing it now.
          if (sent >= entry.file.size) this.patch(key, { state: "processing", sent: entry.file.size });
          else this.patch(key, { sent });
        },
      });
    } catch {
      result = { status: 0, body: null };
    } finally {
      this.active--;
      this.controllers.delete(key);
    }
    this.settle(key, attempts, result);
    this.pump();
  }

  private settle(key: number, attempts: number, result: TransportResult): void {
    const { status } = result;
    if (this.pausing.delete(key) && status === 0) {
      this.patch(key, { state: "paused" });
      return;
    }
    if (status === 201 || status === 200) {
      this.files.delete(key);
      this.patch(key, {
        state: "done",
        sent: this.items.find((i) => i.key === key)!.size,
        asset: this.options.accept(result.body),
      });
      this.options.onDone?.(this.items.find((i) => i.key === key)!);
      return;
    }
    const busy = status === 503 || status === 429;
    const lost = status === 0;
    if ((busy && attempts < MAX_BUSY_ATTEMPTS) || (lost && attempts < MAX_NETWORK_ATTEMPTS)) {
      const wait = result.retryAfterSeconds !== undefined ? result.retryAfterSeconds * 1000 : fallbackDelay(attempts);
      const retryAt = this.now() + wait;
      // The server is full: nothing else goes before it said so either.
      if (busy) this.pausedUntil = Math.max(this.pausedUntil, retryAt);
      this.patch(key, { state: "queued", sent: 0, retryAt });
      return;
    }
    const item = this.items.find((i) => i.key === key)!;
    const failure = describeUploadFailure(result, {
      name: item.name,
      size: item.size,
      maxBytes: this.options.maxBytes,
    });
    // Only what may succeed later keeps its file for "Try again".
    if (!failure.retryable) this.files.delete(key);
    this.patch(key, { state: "refused", failure });
  }
}

/** The counts the summary line shows. */
export function summarize(items: readonly UploadItem[]): Record<UploadState, number> & { total: number } {
  const counts = { queued: 0, uploading: 0, paused: 0, processing: 0, done: 0, refused: 0, total: items.length };
  for (const item of items) counts[item.state]++;
  return counts;
}
