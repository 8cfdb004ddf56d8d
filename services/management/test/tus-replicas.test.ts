import { randomBytes } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import sharp from "sharp";
import { startS3rver, type RunningS3rver } from "@media-platform/storage/src/testing/s3rver";
import { signToken } from "../src/auth/keys";
import { childDatabase } from "./helpers";
import { childEnv, startManagementChild, type ManagementChild } from "./support/child";

/**
 * Two management processes share one resumable upload through the S3 store (s3rver) and the
 * Redis lock: the first half goes to one replica, the rest to the other, and two PATCHes of one
 * upload sent to both at once never interleave. Needs Postgres (one database for both) and
 * Redis: runs with REQUIRE_SERVICES=1, DATABASE_URL and REDIS_URL, as the CI's services pass does.
 */
const enabled = process.env.REQUIRE_SERVICES === "1" && !!process.env.DATABASE_URL && !!process.env.REDIS_URL;
const suite = enabled ? describe : describe.skip;

const secret = randomBytes(32).toString("hex");
const token = signToken(secret, { workspaceId: "ws-replicas-tus", sub: "u", ttl: "1h" });
const tusHeaders = { Authorization: `Bearer ${token}`, "Tus-Resumable": "1.0.0" };

/** A PATCH whose body is sent in two writes `pauseMs` apart, so another request can overlap it. */
function slowPatch(url: string, offset: number, body: Buffer, pauseMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: "PATCH",
      headers: {
        ...tusHeaders,
        "Content-Type": "application/offset+octet-stream",
        "Upload-Offset": String(offset),
        "Content-Length": String(body.length),
      },
    });
    req.on("response", (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
    const half = Math.floor(body.length / 2);
    req.write(body.subarray(0, half));
    setTimeout(() => req.end(body.subarray(half)), pauseMs);
  });
}

suite("two replicas share one resumable upload (S3 store, Redis lock)", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tus-replicas-"));
  let s3: RunningS3rver;
  let drop: (() => Promise<void>) | undefined;
  const replicas: Array<{ child: ManagementChild; url: string }> = [];
  let image: Buffer;

  beforeAll(async () => {
    s3 = await startS3rver({ bucket: `tus-${randomBytes(4).toString("hex")}` });
    const db = await childDatabase();
    drop = db.drop;
    image = await sharp({ create: { width: 640, height: 480, channels: 3, background: "#3366aa" } })
      .png()
      .toBuffer();
    for (const name of ["a", "b"]) {
      const child = startManagementChild(
        childEnv({
          ...s3.env,
          DATA_DIR: path.join(dir, name),
          DATABASE_URL: db.url!,
          REDIS_URL: process.env.REDIS_URL!,
          AUTH_JWT_SECRET: secret,
          UPLOAD_SPOOL_DIR: path.join(dir, name, "spool"),
        }),
      );
      const url = (await child.waitFor(/^Management API: (http:\/\/\S+)$/m, 120_000))[1]!;
      replicas.push({ child, url });
    }
  }, 300_000);

  afterAll(async () => {
    for (const r of replicas) await r.child.kill("SIGTERM");
    await s3?.stop();
    await drop?.();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const create = async (replica: string, length: number) => {
    const res = await fetch(`${replica}/v1/assets/tus`, {
      method: "POST",
      headers: {
        ...tusHeaders,
        "Upload-Length": String(length),
        "Upload-Metadata": `filename ${Buffer.from("blue.png").toString("base64")}`,
      },
    });
    expect(`${res.status} ${res.status === 201 ? "" : await res.text()}`).toBe("201 ");
    return res.headers.get("location")!;
  };
  const patch = (url: string, offset: number, body: Buffer) =>
    fetch(url, {
      method: "PATCH",
      headers: { ...tusHeaders, "Content-Type": "application/offset+octet-stream", "Upload-Offset": String(offset) },
      body,
    });

  it("takes the first half on one replica and the rest on the other, into one asset", async () => {
    const [a, b] = replicas as [(typeof replicas)[0], (typeof replicas)[0]];
    const location = await create(a.url, image.length);
    const half = Math.floor(image.length / 2);
    const first = await patch(`${a.url}${location}`, 0, image.subarray(0, half));
    expect(first.status).toBe(204);
    const head = await fetch(`${b.url}${location}`, { method: "HEAD", headers: tusHeaders });
    expect(head.headers.get("upload-offset")).toBe(String(half));
    const last = await patch(`${b.url}${location}`, half, image.subarray(half));
    expect(last.status).toBe(204);
    const assetId = last.headers.get("asset-id")!;
    const asset = await fetch(`${a.url}/v1/assets/${assetId}`, { headers: tusHeaders });
    expect(asset.status).toBe(200);
    expect(((await asset.json()) as { bytes: number }).bytes).toBe(image.length);
    // The receipt is shared too: the other replica's HEAD names the asset.
    const after = await fetch(`${a.url}${location}`, { method: "HEAD", headers: tusHeaders });
    expect(after.headers.get("asset-id")).toBe(assetId);
  });

  it("never lets two PATCHes of one upload, on two replicas, write at once", async () => {
    const [a, b] = replicas as [(typeof replicas)[0], (typeof replicas)[0]];
    const location = await create(a.url, image.length);
    const statuses = await Promise.all([
      slowPatch(`${a.url}${location}`, 0, image, 1500),
      new Promise<number>((resolve, reject) =>
        setTimeout(() => slowPatch(`${b.url}${location}`, 0, image, 0).then(resolve, reject), 300),
      ),
    ]);
    // One wrote the whole image; the other, let in after it, found the offset moved.
    expect(statuses.sort()).toEqual([204, 409]);
  });
});
