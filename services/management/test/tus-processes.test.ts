import { randomBytes } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { MediaPlatformClient } from "@media-platform/client";
import { signToken } from "../src/auth/keys";
import { startManagementIn, writeNoisePng, type ManagementChild } from "./support/child";

/**
 * A 40 MB resumable upload to a real management process (tsx) through a proxy that cuts the
 * connection each time another 10 MB have passed: the upload finishes into the asset, each break
 * costs at most one chunk sent again, and the process's RSS stays within 100 MB of where it
 * started while the bytes arrive (the intake's decode of the 14-megapixel image after the last
 * byte costs what it costs a multipart upload, which the printed comparison shows). The same file is then sent as one multipart POST, for the comparison in the output.
 */
const MB = 1024 * 1024;
const CHUNK = 4 * MB;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function rssOf(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

/** Samples a process's RSS every 50 ms until stopped; returns the largest seen. */
function sampleRss(pid: number): { peak(): number; stop(): number } {
  let peak = rssOf(pid);
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, rssOf(pid));
    } catch {
      /* the process ended */
    }
  }, 50);
  return {
    peak: () => Math.max(peak, rssOf(pid)),
    stop() {
      clearInterval(timer);
      return Math.max(peak, rssOf(pid));
    },
  };
}

/** A TCP proxy that destroys the connection carrying the bytes past each `every` bytes sent upstream. */
async function cuttingProxy(target: number, every: number) {
  let sent = 0;
  let nextCut = every;
  const cuts: number[] = [];
  const server = net.createServer((client) => {
    const upstream = net.connect(target, "127.0.0.1");
    client.on("data", (chunk: Buffer) => {
      sent += chunk.length;
      upstream.write(chunk);
      if (sent >= nextCut) {
        cuts.push(sent);
        nextCut += every;
        client.destroy();
        upstream.destroy();
      }
    });
    upstream.on("data", (chunk: Buffer) => client.write(chunk));
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    sent: () => sent,
    cuts,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

describe("a 40 MB resumable upload to a real process, its connection cut every 10 MB", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tus-processes-"));
  const secret = randomBytes(32).toString("hex");
  const token = signToken(secret, { workspaceId: "ws-tus", sub: "u", ttl: "1h" });
  let child: ManagementChild;
  let url: string;
  let file: string;

  beforeAll(async () => {
    // Noise does not compress: a PNG of about 40 MB.
    const side = 3750;
    file = path.join(dir, "noise.png");
    await writeNoisePng(file, side);
    ({ child, url } = await startManagementIn(dir, { AUTH_JWT_SECRET: secret }));
  }, 180_000);

  afterAll(async () => {
    await child?.kill("SIGTERM");
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("resumes after every break, re-sending at most one chunk per break, RSS growing < 100 MB", async () => {
    const size = fs.statSync(file).size;
    expect(size).toBeGreaterThan(40 * MB);
    const proxy = await cuttingProxy(Number(new URL(url).port), 10 * MB);
    const pid = child.proc.pid!;
    // One small resumable upload first, so the baseline holds the tus modules and the intake's
    // first use (loaded on demand), and the figure below is what the transfer itself adds.
    const warm = path.join(dir, "warm.png");
    await writeNoisePng(warm, 64);
    await new MediaPlatformClient({ baseUrl: url, token }).uploadResumable({ file: warm, chunkSize: CHUNK });
    await sleep(500);
    const before = rssOf(pid);
    const rss = sampleRss(pid);
    const started = process.hrtime.bigint();
    const client = new MediaPlatformClient({ baseUrl: `http://127.0.0.1:${proxy.port}`, token });
    // The transfer's peak: until the last byte is acknowledged, before the intake decodes the image.
    let transferPeak = 0;
    const asset = await client.uploadResumable({
      file,
      chunkSize: CHUNK,
      retryDelays: [0, 100, 500, 1000, 2000],
      onProgress: (sent, total) => {
        if (sent === total && transferPeak === 0) transferPeak = rss.peak();
      },
    });
    const tusMs = Number(process.hrtime.bigint() - started) / 1e6;
    const tusPeak = rss.stop();
    await proxy.close();

    expect(asset.bytes).toBe(size);
    expect(asset.originalFilename).toBe("noise.png");
    expect(proxy.cuts.length).toBe(Math.floor(proxy.sent() / (10 * MB)));
    expect(proxy.cuts.length).toBeGreaterThanOrEqual(4);
    // Bytes sent beyond the file itself: at most one chunk per break, plus the requests' headers.
    expect(proxy.sent() - size).toBeLessThanOrEqual(proxy.cuts.length * CHUNK + 64 * 1024);
    expect(transferPeak - before).toBeLessThan(100 * MB);
    // Nothing of the upload is left in the tus folder.
    expect(fs.readdirSync(path.join(dir, "data", "tus"))).toEqual([]);

    // The same file resumable without breaks, then as one multipart POST, straight to the process.
    const rssBeforeClean = rssOf(pid);
    const rss3 = sampleRss(pid);
    const started3 = process.hrtime.bigint();
    const clean = new MediaPlatformClient({
      baseUrl: url,
      token: signToken(secret, { workspaceId: "ws-tus-clean", sub: "u", ttl: "1h" }),
    });
    expect((await clean.uploadResumable({ file, chunkSize: CHUNK })).bytes).toBe(size);
    const cleanMs = Number(process.hrtime.bigint() - started3) / 1e6;
    const cleanPeak = rss3.stop();

    const rssBeforeMultipart = rssOf(pid);
    const rss2 = sampleRss(pid);
    const started2 = process.hrtime.bigint();
    const direct = new MediaPlatformClient({
      baseUrl: url,
      token: signToken(secret, { workspaceId: "ws-multipart", sub: "u", ttl: "1h" }),
    });
    const uploaded = await direct.uploadAsset({ file });
    const multipartMs = Number(process.hrtime.bigint() - started2) / 1e6;
    const multipartPeak = rss2.stop();
    expect(uploaded.bytes).toBe(size);
    process.stdout.write(
      `\ntus-vs-multipart ${JSON.stringify({
        bytes: size,
        tus: {
          ms: Math.round(tusMs),
          breaks: proxy.cuts.length,
          resentBytes: proxy.sent() - size,
          transferRssGrowthMB: +((transferPeak - before) / MB).toFixed(1),
          rssGrowthMB: +((tusPeak - before) / MB).toFixed(1),
        },
        tusWithoutBreaks: { ms: Math.round(cleanMs), rssGrowthMB: +((cleanPeak - rssBeforeClean) / MB).toFixed(1) },
        multipart: {
          ms: Math.round(multipartMs),
          rssGrowthMB: +((multipartPeak - rssBeforeMultipart) / MB).toFixed(1),
        },
      })}\n`,
    );
  }, 300_000);
});
