import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { GetObjectCommand, ListMultipartUploadsCommand, S3Client } from "@aws-sdk/client-s3";
import { MediaPlatformClient } from "@media-platform/client";
import { startS3rver, S3RVER_CREDENTIALS, type RunningS3rver } from "@media-platform/storage/src/testing/s3rver";
import { originalKey } from "../src/assets/blobs";
import { signToken } from "../src/auth/keys";
import { startManagementIn, writeNoisePng, type ManagementChild } from "./support/child";

/**
 * A 40 MB direct upload to a real management process (tsx) whose storage is s3rver: the client
 * reaches the service through a proxy that counts the bytes it carries, and PUTs the parts
 * straight to s3rver with the presigned URLs. The service receives only the JSON calls; the
 * asset's stored original is the file, byte for byte. The same file is then sent as one
 * multipart POST through the same proxy, for the comparison in the output.
 */
const MB = 1024 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function rssOf(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

/** Samples a process's RSS every 50 ms until stopped; returns the largest seen. */
function sampleRss(pid: number): { stop(): number } {
  let peak = rssOf(pid);
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, rssOf(pid));
    } catch {
      /* the process ended */
    }
  }, 50);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(peak, rssOf(pid));
    },
  };
}

/** A TCP proxy counting the bytes the client sends upstream. */
async function countingProxy(target: number) {
  let sent = 0;
  const server = net.createServer((client) => {
    const upstream = net.connect(target, "127.0.0.1");
    client.on("data", (chunk: Buffer) => {
      sent += chunk.length;
      upstream.write(chunk);
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
    reset: () => (sent = 0),
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

describe("a 40 MB direct upload to a real process on S3 (s3rver)", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "direct-processes-"));
  const secret = randomBytes(32).toString("hex");
  let s3: RunningS3rver;
  let bucket: S3Client;
  let child: ManagementChild;
  let url: string;
  let file: string;

  beforeAll(async () => {
    s3 = await startS3rver({ bucket: `direct-${randomBytes(4).toString("hex")}` });
    bucket = new S3Client({
      region: "us-east-1",
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: S3RVER_CREDENTIALS,
    });
    // Noise does not compress: a PNG of about 40 MB.
    const side = 3750;
    file = path.join(dir, "noise.png");
    await writeNoisePng(file, side);
    ({ child, url } = await startManagementIn(dir, { ...s3.env, AUTH_JWT_SECRET: secret }));
  }, 180_000);

  afterAll(async () => {
    await child?.kill("SIGTERM");
    bucket?.destroy();
    await s3?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("sends the bytes straight to the bucket; the service sees only JSON; the original is the file", async () => {
    const size = fs.statSync(file).size;
    expect(size).toBeGreaterThan(40 * MB);
    const proxy = await countingProxy(Number(new URL(url).port));
    const pid = child.proc.pid!;
    const client = new MediaPlatformClient({
      baseUrl: `http://127.0.0.1:${proxy.port}`,
      token: signToken(secret, { workspaceId: "ws-direct", sub: "u", ttl: "1h" }),
    });
    await sleep(500);

    const rssBeforeDirect = rssOf(pid);
    const rss = sampleRss(pid);
    const started = process.hrtime.bigint();
    const asset = await client.uploadDirect({ file });
    const directMs = Number(process.hrtime.bigint() - started) / 1e6;
    const directPeak = rss.stop();
    const directBytes = proxy.sent();

    expect(asset.bytes).toBe(size);
    expect(asset.originalFilename).toBe("noise.png");
    // Three JSON calls: create, complete (and the token): a few KB, not the file.
    expect(directBytes).toBeLessThan(64 * 1024);
    const stored = await bucket.send(new GetObjectCommand({ Bucket: s3.bucket, Key: originalKey(asset.id) }));
    const storedHash = createHash("sha256")
      .update(await stored.Body!.transformToByteArray())
      .digest("hex");
    expect(storedHash).toBe(createHash("sha256").update(fs.readFileSync(file)).digest("hex"));
    const pending = await bucket.send(new ListMultipartUploadsCommand({ Bucket: s3.bucket, Prefix: "staging/" }));
    expect(pending.Uploads ?? []).toEqual([]);

    // The same file as one multipart POST through the same proxy.
    proxy.reset();
    const rssBeforeMultipart = rssOf(pid);
    const rss2 = sampleRss(pid);
    const started2 = process.hrtime.bigint();
    const uploaded = await new MediaPlatformClient({
      baseUrl: `http://127.0.0.1:${proxy.port}`,
      token: signToken(secret, { workspaceId: "ws-multipart", sub: "u", ttl: "1h" }),
    }).uploadAsset({ file });
    const multipartMs = Number(process.hrtime.bigint() - started2) / 1e6;
    const multipartPeak = rss2.stop();
    const multipartBytes = proxy.sent();
    await proxy.close();
    expect(uploaded.bytes).toBe(size);
    expect(multipartBytes).toBeGreaterThan(size);

    process.stdout.write(
      `\ndirect-vs-multipart ${JSON.stringify({
        bytes: size,
        direct: {
          ms: Math.round(directMs),
          bytesToManagement: directBytes,
          rssGrowthMB: +((directPeak - rssBeforeDirect) / MB).toFixed(1),
        },
        multipart: {
          ms: Math.round(multipartMs),
          bytesToManagement: multipartBytes,
          rssGrowthMB: +((multipartPeak - rssBeforeMultipart) / MB).toFixed(1),
        },
      })}\n`,
    );
  }, 300_000);
});
