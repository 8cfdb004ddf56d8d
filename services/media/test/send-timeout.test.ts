import net from "node:net";
import { loadMediaConfig } from "../src/config";
import type { RenderFn } from "../src/render/pipeline/render";
import { startTestMedia, type TestMedia } from "./support/media-server";

/** 32 MiB: more than loopback's socket buffers hold, so a client that never reads leaves most of it unsent. */
const BIG = 32 * 1024 * 1024;

/** crop:width=16 renders 32 MiB, any other size 64 KiB (which the socket takes at once). */
const bigRender: RenderFn = async (input) => ({
  data: Buffer.alloc(input.cacheKey.includes("width=16") ? BIG : 64 * 1024, 7),
  contentType: "image/png",
  width: 1,
  height: 1,
});

/** Sends a GET and never reads a byte of the answer. */
function neverReading(url: string, path: string): net.Socket {
  const { port, hostname } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  socket.pause();
  socket.write(`GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\n\r\n`);
  return socket;
}

const connections = (media: TestMedia) =>
  new Promise<number>((resolve, reject) => media.server.getConnections((err, n) => (err ? reject(err) : resolve(n))));

async function untilNoConnection(media: TestMedia): Promise<void> {
  while ((await connections(media)) > 0) await new Promise((resolve) => setTimeout(resolve, 20));
}

describe("send timeout (MEDIA_SEND_TIMEOUT_MS)", () => {
  let media: TestMedia;
  beforeAll(async () => {
    media = await startTestMedia({
      render: bigRender,
      sendTimeoutMs: 1000,
      cache: { memoryBytes: 128 * 1024 * 1024, ttlSeconds: 60, maxEntryBytes: 64 * 1024 * 1024 },
    });
  });
  afterAll(() => media.close());

  it("disconnects a client that never reads, on a MISS and on a HIT; other clients are served", async () => {
    const id = await media.store.putFixture("rocket.jpg");
    const path = `/crop:width=16:height=16/${id}.png`;
    const miss = neverReading(media.url, path);
    await new Promise((resolve) => miss.once("connect", resolve));
    expect(await connections(media)).toBe(1);
    await untilNoConnection(media);
    miss.destroy();
    expect(media.memory.size).toBe(1);

    // The hot path (a HIT from memory) is cut the same way.
    const hit = neverReading(media.url, path);
    await new Promise((resolve) => hit.once("connect", resolve));
    await untilNoConnection(media);
    hit.destroy();

    const small = await fetch(`${media.url}/crop:width=8:height=8/${id}.png`);
    expect([small.status, small.headers.get("x-cache")]).toEqual([200, "MISS"]);
    const body = Buffer.from(await small.arrayBuffer());
    expect(body.length).toBe(64 * 1024);
    expect(body.every((byte) => byte === 7)).toBe(true);
  });

  it("defaults to 60 s and validates its range", () => {
    expect(loadMediaConfig({}).sendTimeoutMs).toBe(60_000);
    expect(() => loadMediaConfig({ MEDIA_SEND_TIMEOUT_MS: "50" })).toThrow(/MEDIA_SEND_TIMEOUT_MS/);
  });
});
