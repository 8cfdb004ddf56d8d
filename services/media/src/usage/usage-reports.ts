import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import { USAGE_REPORT_PREFIX, type UsageReport } from "@media-platform/contracts";
import type { BlobStore } from "@media-platform/storage";

type Counts = [renders: number, egressBytes: number];

/**
 * Counts renders and bytes sent per asset and UTC day in memory (two additions on the hot path,
 * no I/O), and writes them to the blob store every `intervalMs` and on shutdown, where the
 * management service picks them up (usage/ingest.ts). A write that fails keeps its counts for
 * the next one; a crash loses at most one interval.
 */
export class UsageReporter {
  private days = new Map<string, Map<string, Counts>>();
  private day = "";
  private dayEnds = 0;
  private current = new Map<string, Counts>();
  private readonly replica = randomBytes(6).toString("hex");
  private seq = 0;
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: BlobStore,
    private readonly options: { intervalMs: number; log?: Logger; now?: () => number },
  ) {}

  /** A rendition computed for `assetId`. */
  rendered(assetId: string | undefined): void {
    if (assetId) this.counts(assetId)[0] += 1;
  }

  /** `bytes` of `assetId` sent to a client. */
  sent(assetId: string | undefined, bytes: number): void {
    if (assetId && bytes > 0) this.counts(assetId)[1] += bytes;
  }

  private counts(assetId: string): Counts {
    const now = this.options.now?.() ?? Date.now();
    if (now >= this.dayEnds) this.rollDay(now);
    let c = this.current.get(assetId);
    if (!c) this.current.set(assetId, (c = [0, 0]));
    return c;
  }

  private rollDay(now: number): void {
    const start = new Date(now);
    start.setUTCHours(0, 0, 0, 0);
    this.day = start.toISOString().slice(0, 10);
    this.dayEnds = start.getTime() + 86_400_000;
    let bucket = this.days.get(this.day);
    if (!bucket) this.days.set(this.day, (bucket = new Map()));
    this.current = bucket;
  }

  start(): void {
    this.timer ??= setInterval(() => void this.flush(), this.options.intervalMs);
    this.timer.unref();
  }

  /** Writes what was counted since the last flush (one at a time). */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.write());
    return this.flushing;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  private async write(): Promise<void> {
    if (this.days.size === 0) return;
    const taken = this.days;
    this.days = new Map();
    this.dayEnds = 0; // the next count starts a fresh bucket
    const report: UsageReport = { version: 1, days: {} };
    for (const [day, assets] of taken) {
      if (assets.size > 0) report.days[day] = Object.fromEntries(assets);
    }
    if (Object.keys(report.days).length === 0) return;
    const key = `${USAGE_REPORT_PREFIX}/${this.replica}-${Date.now()}-${this.seq++}.json`;
    try {
      await this.store.put(key, Buffer.from(JSON.stringify(report)), "application/json");
    } catch (err) {
      // Put back for the next flush: counts are never dropped on a storage fault.
      for (const [day, assets] of taken) {
        let bucket = this.days.get(day);
        if (!bucket) this.days.set(day, (bucket = new Map()));
        for (const [id, [r, e]] of assets) {
          const c = bucket.get(id) ?? [0, 0];
          bucket.set(id, [c[0] + r, c[1] + e]);
        }
      }
      this.dayEnds = 0;
      this.options.log?.warn({ err }, "usage report not written; kept for the next flush");
    }
  }
}
