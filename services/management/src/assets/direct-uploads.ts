import { createHash, randomUUID } from "node:crypto";
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListPartsCommand,
  S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import {
  DIRECT_UPLOAD_MAX_PARTS,
  DIRECT_UPLOAD_MIN_PART_BYTES,
  type CompleteDirectUploadRequest,
  type CreateDirectUploadRequest,
  type DirectUploadDto,
  type UploadResponse,
} from "@media-platform/contracts";
import type { Principal } from "../auth/keys";
import { defaultTransportsConfig, DIRECT_S3_PREFIX, type S3Connection } from "../config/transports";
import { defaultUploadSettings, SPOOL_PREFIX } from "../config/uploads";
import type { AppContext } from "../context";
import { Periodic } from "../jobs/periodic";
import { badRequest, notFound, problem } from "../problem";
import { assertCollectionInWorkspace, uploadAsset } from "./service";

/**
 * Direct-to-S3 multipart uploads: the client PUTs the parts to presigned URLs of the bucket, so
 * the bytes never pass through this service's requests. Completing one reads the object back from
 * the bucket into a spool file and runs the multipart upload's intake (uploadAsset) on it, which
 * writes the original; the staging object is then deleted. A pending upload is a row
 * (direct_uploads); an expired one is aborted by the sweep, and a bucket lifecycle rule on
 * staging/direct/ catches what a crash leaves.
 */

/** Rows aborted per sweep transaction; the sweep loops until nothing is due. */
const SWEEP_BATCH = 100;

const s3Clients = new WeakMap<S3Connection, S3Client>();
function s3Of(ctx: AppContext): { client: S3Client; bucket: string } {
  if (!ctx.s3) {
    throw problem(
      "direct-uploads-need-s3",
      "Direct uploads go straight to the S3 bucket; this service stores on the filesystem (STORAGE_DRIVER=s3 enables them)",
    );
  }
  let client = s3Clients.get(ctx.s3);
  if (!client) {
    client = new S3Client({
      region: ctx.s3.region,
      endpoint: ctx.s3.endpoint,
      forcePathStyle: ctx.s3.forcePathStyle,
      credentials: ctx.s3.credentials,
      // As the blob store (packages/storage s3.ts): no checksum headers the browser's PUT would need to send.
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
    });
    s3Clients.set(ctx.s3, client);
  }
  return { client, bucket: ctx.s3.bucket };
}

/** Bytes of every part but the last, for `size` in `parts` parts (or as few as S3 allows). */
function partSizeOf(size: number, parts: number | undefined): number {
  if (parts === undefined) {
    return Math.max(DIRECT_UPLOAD_MIN_PART_BYTES, Math.ceil(size / DIRECT_UPLOAD_MAX_PARTS));
  }
  const partSize = Math.max(DIRECT_UPLOAD_MIN_PART_BYTES, Math.ceil(size / parts));
  if (Math.ceil(size / partSize) !== parts) {
    throw badRequest(`${parts} parts cannot carry ${size} bytes`, [
      {
        path: "body.parts",
        message: `every part but the last must be at least ${DIRECT_UPLOAD_MIN_PART_BYTES} bytes (S3), and none empty`,
      },
    ]);
  }
  return partSize;
}

const stagingKey = (workspaceId: string, id: string) => `${DIRECT_S3_PREFIX}${encodeURIComponent(workspaceId)}/${id}`;

const expiryMsOf = (ctx: AppContext) => (ctx.transports ?? defaultTransportsConfig("")).direct.expiryMs;

export async function createDirectUpload(
  ctx: AppContext,
  principal: Principal,
  input: CreateDirectUploadRequest,
): Promise<DirectUploadDto> {
  const { client, bucket } = s3Of(ctx);
  // Refused before anything exists in the bucket.
  if (input.size > ctx.maxUploadBytes) {
    throw problem(
      "too-large",
      `The file (${input.size} bytes) exceeds the upload limit of ${ctx.maxUploadBytes} bytes`,
    );
  }
  const partSize = partSizeOf(input.size, input.parts);
  const partCount = Math.ceil(input.size / partSize);
  if (input.collectionId !== undefined) {
    await assertCollectionInWorkspace(ctx, principal.workspaceId, input.collectionId, "body.collectionId");
  }
  const id = randomUUID();
  const key = stagingKey(principal.workspaceId, id);
  const expiryMs = expiryMsOf(ctx);
  const expiresAt = new Date(Date.now() + expiryMs);
  const created = await client.send(
    new CreateMultipartUploadCommand({ Bucket: bucket, Key: key, ContentType: "application/octet-stream" }),
  );
  const s3UploadId = created.UploadId!;
  try {
    await ctx.prisma.directUpload.create({
      data: {
        id,
        workspaceId: principal.workspaceId,
        userId: principal.userId,
        key,
        s3UploadId,
        filename: input.filename,
        collectionId: input.collectionId ?? null,
        size: input.size,
        partCount,
        expiresAt,
      },
    });
  } catch (err) {
    await client
      .send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: s3UploadId }))
      .catch(() => undefined);
    throw err;
  }
  const expiresIn = Math.max(1, Math.floor(expiryMs / 1000));
  const parts = await Promise.all(
    Array.from({ length: partCount }, async (_, i) => ({
      partNumber: i + 1,
      url: await getSignedUrl(
        client,
        new UploadPartCommand({ Bucket: bucket, Key: key, UploadId: s3UploadId, PartNumber: i + 1 }),
        { expiresIn },
      ),
    })),
  );
  return { id, partSize, parts, expiresAt: expiresAt.toISOString() };
}

type DirectUploadRow = NonNullable<Awaited<ReturnType<AppContext["prisma"]["directUpload"]["findFirst"]>>>;

/** The workspace's pending upload (another workspace's is not found); the row is claimed (removed). */
async function claim(ctx: AppContext, workspaceId: string, id: string): Promise<DirectUploadRow> {
  const row = await ctx.prisma.directUpload.findFirst({ where: { id, workspaceId } });
  if (!row) throw notFound("Direct upload not found");
  // One request completes or aborts it: a concurrent one finds no row.
  const { count } = await ctx.prisma.directUpload.deleteMany({ where: { id, workspaceId } });
  if (count === 0) throw notFound("Direct upload not found");
  return row;
}

async function abortQuietly(ctx: AppContext, row: Pick<DirectUploadRow, "key" | "s3UploadId">): Promise<void> {
  const { client, bucket } = s3Of(ctx);
  await client
    .send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: row.key, UploadId: row.s3UploadId }))
    .catch((err: unknown) => ctx.log.warn({ err, key: row.key }, "direct upload not aborted; the lifecycle rule will"));
}

const httpStatusOf = (err: unknown) => (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;

export async function completeDirectUpload(
  ctx: AppContext,
  principal: Principal,
  id: string,
  input: CompleteDirectUploadRequest,
): Promise<UploadResponse> {
  const { client, bucket } = s3Of(ctx);
  const row = await claim(ctx, principal.workspaceId, id);
  if (row.expiresAt.getTime() <= Date.now()) {
    await abortQuietly(ctx, row);
    throw problem("upload-expired", "The direct upload expired (DIRECT_UPLOAD_EXPIRY); it was aborted");
  }
  const numbers = input.parts.map((p) => p.partNumber);
  const expected = Array.from({ length: row.partCount }, (_, i) => i + 1);
  if (numbers.length !== expected.length || numbers.some((n, i) => n !== expected[i])) {
    await abortQuietly(ctx, row);
    throw problem(
      "direct-upload-incomplete",
      `Expected parts 1 to ${row.partCount} in order, got [${numbers.join(", ")}]; the upload was aborted`,
    );
  }
  // The bucket's own list of the parts: an ETag it does not hold is refused here, whichever S3.
  const held = await heldParts(client, bucket, row).catch(async (err: unknown) => {
    await abortQuietly(ctx, row);
    throw err;
  });
  const wrong = input.parts.filter((p) => held.get(p.partNumber) !== unquoted(p.etag)).map((p) => p.partNumber);
  if (wrong.length > 0) {
    await abortQuietly(ctx, row);
    throw problem(
      "direct-upload-incomplete",
      `The bucket holds no part ${wrong.join(", ")} with the given ETag; the upload was aborted`,
    );
  }
  try {
    await client.send(
      new CompleteMultipartUploadCommand({
        Bucket: bucket,
        Key: row.key,
        UploadId: row.s3UploadId,
        MultipartUpload: { Parts: input.parts.map((p) => ({ PartNumber: p.partNumber, ETag: p.etag })) },
      }),
    );
  } catch (err) {
    await abortQuietly(ctx, row);
    const status = httpStatusOf(err);
    if (status !== undefined && status >= 400 && status < 500) {
      throw problem(
        "direct-upload-incomplete",
        `The bucket refused the parts (${(err as Error).name}); the upload was aborted`,
      );
    }
    throw err;
  }
  try {
    const head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: row.key }));
    if (head.ContentLength !== row.size) {
      throw problem(
        "direct-upload-incomplete",
        `The object is ${head.ContentLength} bytes, not the declared ${row.size}; it was removed`,
      );
    }
    const file = await spool(ctx, client, bucket, row.key, row.size);
    try {
      return await uploadAsset(
        ctx,
        principal,
        { path: file.path, size: row.size, sha256: file.sha256, originalname: row.filename },
        { collectionId: row.collectionId ?? undefined },
      );
    } finally {
      await fsp.rm(file.path, { force: true });
    }
  } finally {
    // The intake wrote the original (or refused): the staging object is not needed either way.
    await client
      .send(new DeleteObjectCommand({ Bucket: bucket, Key: row.key }))
      .catch((err: unknown) =>
        ctx.log.warn({ err, key: row.key }, "staging object not removed; the lifecycle rule will"),
      );
  }
}

const unquoted = (etag: string) => etag.replace(/^(W\/)?"|"$/g, "");

/** Part number → ETag (unquoted) of what the bucket holds of the upload. */
async function heldParts(
  client: S3Client,
  bucket: string,
  row: Pick<DirectUploadRow, "key" | "s3UploadId">,
): Promise<Map<number, string>> {
  const held = new Map<number, string>();
  let marker: string | undefined;
  do {
    const page = await client.send(
      new ListPartsCommand({ Bucket: bucket, Key: row.key, UploadId: row.s3UploadId, PartNumberMarker: marker }),
    );
    for (const part of page.Parts ?? []) held.set(part.PartNumber!, unquoted(part.ETag ?? ""));
    marker = page.IsTruncated ? page.NextPartNumberMarker : undefined;
  } while (marker);
  return held;
}

/** The object copied to a spool file while hashed (what multer's spool engine gives a multipart upload). */
async function spool(
  ctx: AppContext,
  client: S3Client,
  bucket: string,
  key: string,
  size: number,
): Promise<{ path: string; sha256: string }> {
  const spoolDir = (ctx.uploads ?? defaultUploadSettings()).spoolDir;
  await fsp.mkdir(spoolDir, { recursive: true, mode: 0o700 });
  const target = path.join(spoolDir, `${SPOOL_PREFIX}${randomUUID()}`);
  const hash = createHash("sha256");
  let seen = 0;
  const measure = new Transform({
    transform(chunk: Buffer, _enc, done) {
      seen += chunk.length;
      // The header said `size`; never read past it whatever the body does.
      if (seen > size) return done(new Error("The staging object grew past its declared size"));
      hash.update(chunk);
      done(null, chunk);
    },
  });
  try {
    const object = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    await pipeline(object.Body as Readable, measure, fs.createWriteStream(target, { flags: "wx", mode: 0o600 }));
  } catch (err) {
    await fsp.rm(target, { force: true });
    throw err;
  }
  return { path: target, sha256: hash.digest("hex") };
}

export async function abortDirectUpload(ctx: AppContext, principal: Principal, id: string): Promise<void> {
  s3Of(ctx);
  const row = await claim(ctx, principal.workspaceId, id);
  await abortQuietly(ctx, row);
}

/**
 * Aborts expired direct uploads and removes their rows. Every replica runs it; the rows are taken
 * with FOR UPDATE SKIP LOCKED inside the deleting transaction, so two replicas never abort the
 * same upload. Returns how many.
 */
export async function sweepDirectUploads(ctx: AppContext): Promise<number> {
  if (!ctx.s3) return 0;
  let total = 0;
  for (;;) {
    const swept = await ctx.prisma.$transaction(
      async (tx) => {
        const due = await tx.$queryRaw<Array<{ id: string; key: string; s3_upload_id: string }>>`
          SELECT id::text AS id, key, s3_upload_id FROM direct_uploads
           WHERE expires_at < now()
           ORDER BY expires_at
           LIMIT ${SWEEP_BATCH}
             FOR UPDATE SKIP LOCKED`;
        for (const row of due) await abortQuietly(ctx, { key: row.key, s3UploadId: row.s3_upload_id });
        if (due.length > 0) await tx.directUpload.deleteMany({ where: { id: { in: due.map((r) => r.id) } } });
        return due.length;
      },
      { timeout: 120_000 },
    );
    total += swept;
    if (swept > 0) ctx.log.info({ swept }, "direct uploads: expired ones aborted");
    if (swept < SWEEP_BATCH) return total;
  }
}

export function directUploadSweepJob(ctx: AppContext, intervalMs: number): Periodic {
  return new Periodic(intervalMs, () => sweepDirectUploads(ctx), ctx.log, "direct-upload-sweep");
}
