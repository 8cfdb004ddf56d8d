import request from "supertest";
import { USAGE_REPORT_PREFIX, usageReportSchema, type UsageReport } from "@media-platform/contracts";
import { UsageReporter } from "../src/usage/usage-reports";
import { MemoryBlobStore } from "./support/memory-store";
import { startTestMedia, type TestMedia } from "./support/media-server";

const reportsIn = (store: MemoryBlobStore): UsageReport[] =>
  [...store.blobs.entries()]
    .filter(([key]) => key.startsWith(`${USAGE_REPORT_PREFIX}/`))
    .map(([, blob]) => usageReportSchema.parse(JSON.parse(blob.data.toString("utf8"))));

/** Sums renders and bytes of `assetId` over every report. */
function totals(reports: UsageReport[], assetId: string): [number, number] {
  let renders = 0;
  let bytes = 0;
  for (const r of reports)
    for (const assets of Object.values(r.days)) {
      const c = assets[assetId];
      if (c) {
        renders += c[0];
        bytes += c[1];
      }
    }
  return [renders, bytes];
}

describe("usage reports", () => {
  let media: TestMedia;
  let id: string;
  beforeAll(async () => {
    // A long interval: the reports written are those of the explicit stop below.
    media = await startTestMedia({ usageReportIntervalMs: 3_600_000 });
    id = await media.store.putFixture("rocket.jpg");
  });
  afterAll(() => media.close());

  it("counts a MISS as a render, every 200 body as egress, and writes them at shutdown", async () => {
    const url = `/thumbnail:size=60/${id}.jpg`;
    const miss = await request(media.server).get(url);
    expect(miss.headers["x-cache"]).toBe("MISS");
    const hit = await request(media.server).get(url);
    expect(hit.headers["x-cache"]).toBe("HIT");
    await request(media.server).head(url);
    const notModified = await request(media.server).get(url).set("If-None-Match", miss.headers.etag!);
    expect(notModified.status).toBe(304);
    expect(reportsIn(media.store)).toEqual([]);
    await media.close();
    const reports = reportsIn(media.store);
    expect(totals(reports, id)).toEqual([1, miss.body.length * 2]);
    expect(Object.keys(reports[0]!.days)).toEqual([new Date().toISOString().slice(0, 10)]);
  });

  it("keeps the counts of a failed write for the next one", async () => {
    const store = new MemoryBlobStore();
    const put = store.put.bind(store);
    let failing = true;
    store.put = (...args: Parameters<typeof store.put>) =>
      failing ? Promise.reject(new Error("storage down")) : put(...args);
    const reporter = new UsageReporter(store, { intervalMs: 60_000 });
    reporter.rendered("a");
    reporter.sent("a", 100);
    await reporter.flush();
    reporter.sent("a", 5);
    failing = false;
    await reporter.flush();
    expect(totals(reportsIn(store), "a")).toEqual([1, 105]);
  });

  it("splits counts by UTC day", async () => {
    const store = new MemoryBlobStore();
    let now = Date.parse("2026-03-01T23:59:59Z");
    const reporter = new UsageReporter(store, { intervalMs: 60_000, now: () => now });
    reporter.sent("a", 1);
    now += 2000;
    reporter.sent("a", 2);
    await reporter.flush();
    const [report] = reportsIn(store);
    expect(report!.days).toEqual({ "2026-03-01": { a: [0, 1] }, "2026-03-02": { a: [0, 2] } });
  });
});
