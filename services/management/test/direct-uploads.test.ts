import { randomBytes } from "node:crypto";
import { buffer } from "node:stream/consumers";
import { ListMultipartUploadsCommand, ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import exifReader from "exif-reader";
import sharp from "sharp";
import { startS3rver, S3RVER_CREDENTIALS, type RunningS3rver } from "@media-platform/storage/src/testing/s3rver";
import { originalKey } from "../src/assets/blobs";
import { sweepDirectUploads } from "../src/assets/direct-uploads";
import { createTestApp, type TestApp } from "./helpers";
import { GPS_EXIF, photo } from "./support/metadata-fixtures";

/**
 * Direct-to-S3 multipart uploads against s3rver: parts go to the presigned URLs, completion runs
 * the upload intake; refusals leave nothing in the bucket or the table. (The real-process test,
 * direct-uploads-processes.test.ts, shows the service never receives the bytes.)
 */
const MiB = 1024 * 1024;
const PATH = "/v1/assets/direct-uploads";

describe("direct uploads (S3)", () => {
  let s3: RunningS3rver;
  let t: TestApp;
  let fsApp: TestApp;
  let client: S3Client;

  beforeAll(async () => {
    s3 = await startS3rver({ bucket: `direct-${randomBytes(4).toString("hex")}` });
    client = new S3Client({
      region: "us-east-1",
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: S3RVER_CREDENTIALS,
    });
    [t, fsApp] = await Promise.all([
      createTestApp({
        maxUploadBytes: 20 * MiB,
        s3: {
          bucket: s3.bucket,
          region: "us-east-1",
          endpoint: s3.endpoint,
          forcePathStyle: true,
          credentials: { ...S3RVER_CREDENTIALS },
        },
      }),
      createTestApp(),
    ]);
  }, 60_000);

  afterAll(async () => {
    client?.destroy();
    await Promise.all([t?.close(), fsApp?.close()]);
    await s3?.stop();
  });

  /** Everything under the staging prefix: objects and unfinished multipart uploads. */
  async function staging(): Promise<{ objects: string[]; uploads: string[] }> {
    const objects = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: "staging/direct/" }));
    const uploads = await client.send(
      new ListMultipartUploadsCommand({ Bucket: s3.bucket, Prefix: "staging/direct/" }),
    );
    return {
      objects: (objects.Contents ?? []).map((o) => o.Key!),
      uploads: (uploads.Uploads ?? []).map((u) => u.Key!),
    };
  }

  async function create(ws: string, body: Record<string, unknown>) {
    return t.as(ws).post(PATH).send(body);
  }

  async function put(url: string, bytes: Buffer): Promise<string> {
    const res = await fetch(url, { method: "PUT", body: bytes });
    expect(res.status).toBe(200);
    return res.headers.get("etag")!;
  }

  it("creates, takes the parts at the presigned URLs and completes into an asset without GPS", async () => {
    const jpeg = await photo(120, 80).withExif(GPS_EXIF).jpeg().toBuffer();
    const created = await create("ws-d", { filename: "phone.jpg", size: jpeg.length, contentType: "image/jpeg" });
    expect(created.status).toBe(201);
    expect(created.body.parts).toHaveLength(1);
    expect(created.body.parts[0].url).toContain(s3.endpoint);
    expect(created.body.parts[0].url).toContain("X-Amz-Signature=");
    expect((await staging()).uploads).toHaveLength(1);
    const etag = await put(created.body.parts[0].url, jpeg);

    // Another workspace does not see it.
    const foreign = await t
      .as("ws-other")
      .post(`${PATH}/${created.body.id}/complete`)
      .send({ parts: [{ partNumber: 1, etag }] });
    expect(foreign.status).toBe(404);
    expect((await t.as("ws-other").delete(`${PATH}/${created.body.id}`)).status).toBe(404);

    const done = await t
      .as("ws-d")
      .post(`${PATH}/${created.body.id}/complete`)
      .send({ parts: [{ partNumber: 1, etag }] });
    expect(done.status).toBe(201);
    expect(done.headers.location).toBe(`/v1/assets/${done.body.id}`);
    expect(done.body.originalFilename).toBe("phone.jpg");
    const blob = await t.blobStore.get(originalKey(done.body.id));
    const stored = await buffer(blob!.body);
    expect(exifReader((await sharp(stored).metadata()).exif!).GPSInfo ?? {}).toEqual({});
    expect(await staging()).toEqual({ objects: [], uploads: [] });
    expect(await t.db.prisma.directUpload.count()).toBe(0);
    // Completed once: a second completion finds nothing.
    const again = await t
      .as("ws-d")
      .post(`${PATH}/${created.body.id}/complete`)
      .send({ parts: [{ partNumber: 1, etag }] });
    expect(again.status).toBe(404);
  });

  it("takes a two-part upload whose first part is 5 MiB", async () => {
    const png = await sharp(randomBytes(1400 * 1400 * 3), { raw: { width: 1400, height: 1400, channels: 3 } })
      .png({ compressionLevel: 0 })
      .toBuffer();
    expect(png.length).toBeGreaterThan(5 * MiB);
    const created = await create("ws-d", {
      filename: "noise.png",
      size: png.length,
      contentType: "image/png",
      parts: 2,
    });
    expect(created.status).toBe(201);
    const { partSize, parts } = created.body as { partSize: number; parts: Array<{ url: string }> };
    const etags = [
      await put(parts[0]!.url, png.subarray(0, partSize)),
      await put(parts[1]!.url, png.subarray(partSize)),
    ];
    const done = await t
      .as("ws-d")
      .post(`${PATH}/${created.body.id}/complete`)
      .send({ parts: etags.map((etag, i) => ({ partNumber: i + 1, etag })) });
    expect(done.status).toBe(201);
    expect(done.body.bytes).toBe(png.length);
    expect(await staging()).toEqual({ objects: [], uploads: [] });
  });

  it("refuses bad input before anything is in the bucket", async () => {
    const tooLarge = await create("ws-d", { filename: "a.png", size: 20 * MiB + 1, contentType: "image/png" });
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.body.type).toMatch(/too-large$/);
    const smallParts = await create("ws-d", { filename: "a.png", size: 6 * MiB, contentType: "image/png", parts: 3 });
    expect(smallParts.status).toBe(400);
    expect(smallParts.body.errors[0].path).toBe("body.parts");
    const missing = await create("ws-d", { filename: "a.png", contentType: "image/png" });
    expect(missing.status).toBe(400);
    expect(missing.headers["content-type"]).toMatch(/application\/problem\+json/);
    expect(await staging()).toEqual({ objects: [], uploads: [] });
    expect(await t.db.prisma.directUpload.count()).toBe(0);
  });

  it.each([
    ["a missing part", (etags: string[]) => [{ partNumber: 1, etag: etags[0]! }]],
    ["a wrong ETag", (etags: string[]) => etags.map((_, i) => ({ partNumber: i + 1, etag: `"${"0".repeat(32)}"` }))],
  ])("refuses a completion with %s and leaves nothing behind", async (_name, partsOf) => {
    const bytes = randomBytes(6 * MiB);
    const created = await create("ws-d", { filename: "a.png", size: bytes.length, contentType: "image/png", parts: 2 });
    expect(created.status).toBe(201);
    const { partSize, parts } = created.body as { partSize: number; parts: Array<{ url: string }> };
    const etags = [
      await put(parts[0]!.url, bytes.subarray(0, partSize)),
      await put(parts[1]!.url, bytes.subarray(partSize)),
    ];
    const res = await t
      .as("ws-d")
      .post(`${PATH}/${created.body.id}/complete`)
      .send({ parts: partsOf(etags) });
    expect(res.status).toBe(400);
    expect(res.body.type).toMatch(/direct-upload-incomplete$/);
    expect(await staging()).toEqual({ objects: [], uploads: [] });
    expect(await t.db.prisma.directUpload.count()).toBe(0);
  });

  it("refuses an object shorter than declared, and bytes that are no image, leaving nothing", async () => {
    const bytes = randomBytes(1000);
    const created = await create("ws-d", { filename: "a.png", size: 2000, contentType: "image/png" });
    const etag = await put(created.body.parts[0].url, bytes);
    const res = await t
      .as("ws-d")
      .post(`${PATH}/${created.body.id}/complete`)
      .send({ parts: [{ partNumber: 1, etag }] });
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/not the declared 2000/);

    const noise = await create("ws-d", { filename: "a.png", size: 1000, contentType: "image/png" });
    const etag2 = await put(noise.body.parts[0].url, bytes);
    const refused = await t
      .as("ws-d")
      .post(`${PATH}/${noise.body.id}/complete`)
      .send({ parts: [{ partNumber: 1, etag: etag2 }] });
    expect(refused.status).toBe(415);
    expect(await staging()).toEqual({ objects: [], uploads: [] });
    expect(await t.db.prisma.directUpload.count()).toBe(0);
  });

  it("aborts on DELETE", async () => {
    const created = await create("ws-d", { filename: "a.png", size: 1000, contentType: "image/png" });
    expect((await staging()).uploads).toHaveLength(1);
    expect((await t.as("ws-d").delete(`${PATH}/${created.body.id}`)).status).toBe(204);
    expect(await staging()).toEqual({ objects: [], uploads: [] });
    expect((await t.as("ws-d").delete(`${PATH}/${created.body.id}`)).status).toBe(404);
  });

  it("answers 410 to an expired upload, and the sweep aborts expired ones", async () => {
    const expired = await create("ws-d", { filename: "a.png", size: 1000, contentType: "image/png" });
    const swept = await create("ws-d", { filename: "b.png", size: 1000, contentType: "image/png" });
    const fresh = await create("ws-d", { filename: "c.png", size: 1000, contentType: "image/png" });
    await t.db.prisma.directUpload.updateMany({
      where: { id: { in: [expired.body.id, swept.body.id] } },
      data: { expiresAt: new Date(Date.now() - 1000) },
    });
    const etag = await put(expired.body.parts[0].url, randomBytes(1000));
    const res = await t
      .as("ws-d")
      .post(`${PATH}/${expired.body.id}/complete`)
      .send({ parts: [{ partNumber: 1, etag }] });
    expect(res.status).toBe(410);
    expect(res.body.type).toMatch(/upload-expired$/);
    expect((await staging()).uploads).toHaveLength(2);

    expect(await sweepDirectUploads(t.deps)).toBe(1);
    expect((await staging()).uploads).toHaveLength(1);
    expect((await t.db.prisma.directUpload.findMany()).map((r) => r.id)).toEqual([fresh.body.id]);
    expect((await t.as("ws-d").delete(`${PATH}/${fresh.body.id}`)).status).toBe(204);
  });

  it("answers 409 direct-uploads-need-s3 on the filesystem driver", async () => {
    const id = "00000000-0000-4000-8000-000000000000";
    for (const res of [
      await fsApp.as("ws").post(PATH).send({ filename: "a.png", size: 10, contentType: "image/png" }),
      await fsApp
        .as("ws")
        .post(`${PATH}/${id}/complete`)
        .send({ parts: [{ partNumber: 1, etag: "x" }] }),
      await fsApp.as("ws").delete(`${PATH}/${id}`),
    ]) {
      expect(res.status).toBe(409);
      expect(res.body.type).toMatch(/direct-uploads-need-s3$/);
    }
  });
});
