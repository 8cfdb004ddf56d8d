// Management -> media eager renders: after an upload or replace commits, the outbox carries a
// request to the media service's /internal/eager (bearer purge secret), which renders the asset's
// eager presets into its caches: the first public request of each is a HIT.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pino from "pino";
import sharp from "sharp";
import { createMediaServer, type MediaServer } from "../../media/src/server";
import { loadMediaConfig } from "../../media/src/config";
import { pipelineRender } from "../../media/test/support/media-server";
import { loadConfig } from "../src/config";
import { ChangePropagator } from "../src/lifecycle/propagation";
import { WebhookDispatcher } from "../src/webhooks/dispatcher";
import { EAGER_EVENT_TYPE } from "../src/webhooks/outbox";
import { createTestApp, upload, type TestApp } from "./helpers";

const SECRET = "embedded-purge-secret-0123456789";
const WS = "ws-eager";

const png = (color: string) =>
  sharp({ create: { width: 600, height: 400, channels: 3, background: color } })
    .png()
    .toBuffer();
const pixel = async (body: Buffer) =>
  [...(await sharp(body).extract({ left: 5, top: 5, width: 1, height: 1 }).raw().toBuffer())].slice(0, 3);

describe("eager presets rendered after an upload and a replace (outbox -> media /internal/eager)", () => {
  let t: TestApp;
  let media: MediaServer;
  let mediaUrl = "";
  let dispatcher: WebhookDispatcher;
  const eagerUrls = (id: string) => [
    `${mediaUrl}/preset:name=card/${id}.png`,
    `${mediaUrl}/resize:width=320/${id}.png`,
    `${mediaUrl}/resize:width=480/${id}.png`,
  ];

  /** Waits until every media.eager row of the asset is delivered (sent by the wake, not a poll). */
  async function delivered(id: string, count: number) {
    for (let i = 0; i < 250; i++) {
      const rows = await t.db.prisma.webhookDelivery.findMany({ where: { eventType: EAGER_EVENT_TYPE } });
      const mine = rows.filter((r) => (r.payload as { assetId: string }).assetId === id);
      if (mine.filter((r) => r.status === "delivered").length >= count) return mine;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error("the eager render request was not delivered");
  }

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "eager-renders-"));
    const file = path.join(dir, "presets.yaml");
    writeFileSync(
      file,
      'card:\n  steps: "resize:width=200:height=200:fit=cover"\n  eager: true\nsrcset:\n  steps: ["resize:width=1600"]\n  eager: true\n  widths: [320, 480]\n',
    );
    const { presets, eagerPresets } = loadMediaConfig({ MEDIA_PRESETS_FILE: file });
    const holder: { urls: string[] } = { urls: [] };
    const propagator = new ChangePropagator({
      get mediaPurgeUrls() {
        return holder.urls;
      },
      mediaPurgeSecret: SECRET,
      cdnPurgeUrl: undefined,
      log: pino({ level: "silent" }),
    });
    const eagerRenders = { mediaUrls: holder.urls, wake: () => dispatcher.wake() };
    t = await createTestApp({ propagator, eagerRenders });
    media = createMediaServer({
      store: t.blobStore,
      render: pipelineRender(),
      options: { purgeSecret: SECRET, presets, eagerPresets },
    });
    mediaUrl = await media.listen(0, "127.0.0.1");
    holder.urls.push(mediaUrl);
    dispatcher = new WebhookDispatcher({
      prisma: t.db.prisma,
      log: pino({ level: "silent" }),
      secret: undefined,
      internalSecret: SECRET,
      retryMs: 3600_000,
      backoffBaseMs: 10,
      // No poll during the test: delivery comes from the wake after the commit.
      pollIntervalMs: 3600_000,
    });
  });
  afterAll(async () => {
    await dispatcher?.stop();
    await media?.close();
    await t?.close();
  });

  it("the upload's eager presets are HITs on their first request, with the upload's pixels", async () => {
    const created = await upload(t.as(WS), await png("#ff0000"), "red.png");
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const rows = await delivered(id, 1);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.url).toBe(`${mediaUrl}/internal/eager`);
    expect(rows[0]!.payload).toEqual({ assetId: id, extension: "png" });
    for (const url of eagerUrls(id)) {
      const res = await fetch(url);
      expect(res.status).toBe(200);
      expect(res.headers.get("x-cache")).toBe("HIT");
      expect(await pixel(Buffer.from(await res.arrayBuffer()))).toEqual([255, 0, 0]);
    }
    expect(await media.metrics.registry.getSingleMetricAsString("media_eager_renders_total")).toMatch(
      /media_eager_renders_total\{outcome="done"[^}]*\} 3/,
    );
  });

  it("a replace re-renders them from the new original: HITs, never the old pixels", async () => {
    const created = await upload(t.as(WS), await png("#ff0000"), "red.png");
    const id = created.body.id as string;
    await delivered(id, 1);
    const put = await t
      .as(WS)
      .put(`/v1/assets/${id}/original`)
      .attach("file", await png("#0000ff"), "blue.png");
    expect(put.status).toBe(200);
    const rows = await delivered(id, 2);
    expect(rows.map((r) => r.payload)).toContainEqual({ assetId: id, extension: "png", replaced: true });
    for (const url of eagerUrls(id)) {
      const res = await fetch(url);
      expect(res.headers.get("x-cache")).toBe("HIT");
      expect(await pixel(Buffer.from(await res.arrayBuffer()))).toEqual([0, 0, 255]);
    }
  });
});

describe("MEDIA_EAGER_RENDERS", () => {
  it("is on whenever a media URL is reachable (the media purge URLs); false switches it off", () => {
    expect(loadConfig({}).lifecycle.mediaEagerUrls).toEqual(["http://localhost:3001"]);
    expect(loadConfig({ MEDIA_EAGER_RENDERS: "" }).lifecycle.mediaEagerUrls).toEqual(["http://localhost:3001"]);
    expect(loadConfig({ MEDIA_EAGER_RENDERS: "false" }).lifecycle.mediaEagerUrls).toEqual([]);
    // A public URL elsewhere (a CDN) is never sent the purge secret: no media URL, nothing eager.
    expect(loadConfig({ MEDIA_PUBLIC_URL: "https://img.example.com" }).lifecycle.mediaEagerUrls).toEqual([]);
    expect(loadConfig({ MEDIA_EAGER_RENDERS: "true" }).lifecycle.mediaEagerUrls).toEqual(["http://localhost:3001"]);
    expect(
      loadConfig({ MEDIA_EAGER_RENDERS: "true", MEDIA_PURGE_URLS: "http://media-a:3001,http://media-b:3001" }).lifecycle
        .mediaEagerUrls,
    ).toEqual(["http://media-a:3001", "http://media-b:3001"]);
  });
});
