// Management -> media change propagation without Redis (embedded mode): the management service's
// ChangePropagator calls the media service's purge endpoint over HTTP with the shared secret,
// after a delete or a replace and before the response is sent.
import http from "node:http";
import pino from "pino";
import sharp from "sharp";
import { createMediaServer, type MediaServer } from "../../media/src/server";
import { pipelineRender } from "../../media/test/support/media-server";
import { ChangePropagator } from "../src/lifecycle/propagation";
import { createTestApp, upload, type TestApp } from "./helpers";

const SECRET = "embedded-purge-secret-0123456789";
const WS = "ws-propagation";

const png = (color: string) =>
  sharp({ create: { width: 200, height: 150, channels: 3, background: color } })
    .png()
    .toBuffer();
const pixel = async (body: Buffer) =>
  [...(await sharp(body).extract({ left: 5, top: 5, width: 1, height: 1 }).raw().toBuffer())].slice(0, 3);

describe("propagation to the media service in embedded mode (HTTP purge, no Redis)", () => {
  let t: TestApp;
  let media: MediaServer;
  let mediaUrl: string;
  const cdnCalls: string[] = [];
  let cdn: { close(): void; url: string };

  beforeAll(async () => {
    let failures = 1; // the CDN fails once: the propagator retries
    const server = http.createServer((req, res) => {
      cdnCalls.push(req.url ?? "");
      res.writeHead(failures-- > 0 ? 502 : 200).end();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const address = server.address() as { port: number };
    cdn = { close: () => server.close(), url: `http://127.0.0.1:${address.port}/purge/{assetId}` };

    const holder: { url?: string } = {};
    const propagator = new ChangePropagator({
      get mediaPurgeUrls() {
        return [holder.url!];
      },
      mediaPurgeSecret: SECRET,
      cdnPurgeUrl: cdn.url,
      log: pino({ level: "silent" }),
    });
    t = await createTestApp({ propagator });
    media = createMediaServer({
      store: t.blobStore,
      render: pipelineRender(),
      options: { purgeSecret: SECRET },
    });
    mediaUrl = await media.listen(0, "127.0.0.1");
    holder.url = mediaUrl;
  });
  afterAll(async () => {
    await media?.close();
    cdn?.close();
    await t?.close();
  });

  it("a URL that was a HIT shows the replaced original once PUT returns, and 404 once DELETE returns", async () => {
    const created = await upload(t.as(WS), await png("#ff0000"), "red.png");
    const id = created.body.id as string;
    const url = `${mediaUrl}/thumbnail:size=64/${id}.png`;
    await fetch(url).then((r) => r.arrayBuffer());
    const hit = await fetch(url);
    expect(hit.headers.get("x-cache")).toBe("HIT");
    expect(await pixel(Buffer.from(await hit.arrayBuffer()))).toEqual([255, 0, 0]);

    const put = await t
      .as(WS)
      .put(`/v1/assets/${id}/original`)
      .attach("file", await png("#00ff00"), "green.png");
    expect(put.status).toBe(200);
    const afterReplace = await fetch(url);
    expect(afterReplace.status).toBe(200);
    expect(await pixel(Buffer.from(await afterReplace.arrayBuffer()))).toEqual([0, 255, 0]);

    await t.as(WS).delete(`/v1/assets/${id}`).expect(204);
    const afterDelete = await fetch(url);
    expect(afterDelete.status).toBe(404);
    // CDN_PURGE_URL was called for the replace and the delete (the first call retried after a 502).
    expect(cdnCalls).toEqual([`/purge/${id}`, `/purge/${id}`, `/purge/${id}`]);

    // Restore brings the original back: the media URL renders again.
    await t.as(WS).post(`/v1/assets/${id}/restore`).expect(200);
    expect((await fetch(url)).status).toBe(200);
    await t.as(WS).delete(`/v1/assets/${id}?permanent=true`).expect(204);
    expect((await fetch(url)).status).toBe(404);
  });
});
