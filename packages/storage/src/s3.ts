import {
  AbortMultipartUploadCommand,
  type BucketLocationConstraint,
  CopyObjectCommand,
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { Readable } from "node:stream";
import {
  type BlobInfo,
  type BlobMetadata,
  type BlobObject,
  type BlobStore,
  type ListedBlob,
  StorageUnavailableError,
} from "./blob-store";
import { assertValidBlobKey, assertValidBlobMetadata, assertValidContentType } from "./keys";

/** S3 user metadata as BlobInfo.metadata: absent when the object has none (names come back lower-cased). */
const metadataOf = (metadata: Record<string, string> | undefined): { metadata?: BlobMetadata } =>
  metadata && Object.keys(metadata).length > 0 ? { metadata } : {};

export interface S3BlobStoreOptions {
  /** Custom endpoint (MinIO, R2, s3rver); omit for AWS. */
  endpoint?: string;
  region: string;
  bucket: string;
  /** Omit both to use the SDK's default credential chain (env, profile, instance role). */
  accessKeyId?: string;
  secretAccessKey?: string;
  /** true for MinIO-style endpoints (http://host/bucket/key). */
  forcePathStyle: boolean;
  /** TCP connect timeout. Default 3000 ms. */
  connectionTimeoutMs?: number;
  /** Time from sending a request until response headers arrive. Default 120000 ms; 0 disables. */
  requestTimeoutMs?: number;
  /** Socket inactivity timeout, also while streaming a body. Default 30000 ms; 0 disables. */
  socketTimeoutMs?: number;
  /** Attempts per request including the first (SDK retry strategy). Default 3. */
  maxAttempts?: number;
  /** Multipart part size for streamed uploads (min 5 MiB, the S3 minimum). Default 5 MiB. */
  partSizeBytes?: number;
  /** Parts uploaded in parallel; memory use is about partSize x queueSize. Default 4. */
  queueSize?: number;
}

export const S3_DEFAULTS = {
  connectionTimeoutMs: 3_000,
  requestTimeoutMs: 120_000,
  socketTimeoutMs: 30_000,
  maxAttempts: 3,
  partSizeBytes: 5 * 1024 * 1024,
  queueSize: 4,
} as const;

interface SdkError {
  name?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number };
}

const asSdkError = (err: unknown): SdkError => (typeof err === "object" && err !== null ? (err as SdkError) : {});

/** HeadObject has no body, so a missing key surfaces as a bare "NotFound" (404). */
const isMissingObject = (err: unknown): boolean => {
  const { name } = asSdkError(err);
  return name === "NotFound" || name === "NoSuchKey";
};

function toBuffer(chunk: unknown): Buffer {
  if (Buffer.isBuffer(chunk)) return chunk;
  if (typeof chunk === "string") return Buffer.from(chunk);
  if (chunk instanceof Uint8Array) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  throw new TypeError("blob body must yield Buffer, Uint8Array or string chunks");
}

/** Blob store on any S3-compatible service (AWS, MinIO, R2, s3rver). */
export class S3BlobStore implements BlobStore {
  readonly client: S3Client;
  readonly bucket: string;
  private readonly region: string;
  private readonly partSize: number;
  private readonly queueSize: number;

  constructor(options: S3BlobStoreOptions) {
    const opts = options;
    if ((opts.accessKeyId === undefined) !== (opts.secretAccessKey === undefined)) {
      throw new Error("S3BlobStore: accessKeyId and secretAccessKey must be given together");
    }
    this.bucket = opts.bucket;
    this.region = opts.region;
    this.partSize = Math.max(opts.partSizeBytes ?? S3_DEFAULTS.partSizeBytes, S3_DEFAULTS.partSizeBytes);
    this.queueSize = Math.max(1, opts.queueSize ?? S3_DEFAULTS.queueSize);
    this.client = new S3Client({
      region: opts.region,
      endpoint: opts.endpoint,
      forcePathStyle: opts.forcePathStyle,
      credentials:
        opts.accessKeyId !== undefined && opts.secretAccessKey !== undefined
          ? {
              accessKeyId: opts.accessKeyId,
              secretAccessKey: opts.secretAccessKey,
            }
          : undefined,
      // With the SDK's default (WHEN_SUPPORTED) bodies are sent aws-chunked with trailing
      // checksums, which s3rver (and older MinIO) store verbatim inside the object.
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
      maxAttempts: opts.maxAttempts ?? S3_DEFAULTS.maxAttempts,
      // Without timeouts a black-holed endpoint hangs callers forever instead of
      // surfacing as StorageUnavailableError (-> 503).
      requestHandler: {
        connectionTimeout: opts.connectionTimeoutMs ?? S3_DEFAULTS.connectionTimeoutMs,
        requestTimeout: opts.requestTimeoutMs ?? S3_DEFAULTS.requestTimeoutMs,
        throwOnRequestTimeout: true,
        socketTimeout: opts.socketTimeoutMs ?? S3_DEFAULTS.socketTimeoutMs,
      },
    });
  }

  private unavailable(op: string, key: string, err: unknown): StorageUnavailableError {
    if (err instanceof StorageUnavailableError) return err;
    const { name, message, $metadata } = asSdkError(err);
    const status = $metadata?.httpStatusCode ? ` (HTTP ${$metadata.httpStatusCode})` : "";
    return new StorageUnavailableError(
      `s3 blob store: ${op} ${this.bucket}/${key} failed: ${name ?? "Error"}${status}: ${message ?? String(err)}`,
      { cause: err },
    );
  }

  async put(key: string, body: Readable | Buffer, contentType: string, metadata?: BlobMetadata): Promise<BlobInfo> {
    assertValidBlobKey(key);
    assertValidContentType(contentType);
    assertValidBlobMetadata(metadata);
    const stored = (size: number): BlobInfo => ({ key, contentType, size, ...(metadata && { metadata }) });
    if (Buffer.isBuffer(body)) {
      try {
        await this.client.send(
          new PutObjectCommand({
            Bucket: this.bucket,
            Key: key,
            Body: body,
            ContentType: contentType,
            ContentLength: body.length,
            Metadata: metadata,
          }),
        );
      } catch (err) {
        throw this.unavailable("put", key, err);
      }
      return stored(body.length);
    }

    // Count bytes and tell the caller's own stream errors apart from S3 failures:
    // the former are rethrown untouched (e.g. an upload size limit), the latter wrapped.
    let size = 0;
    let sourceFailed = false;
    let sourceError: unknown;
    async function* tracked(source: Readable): AsyncGenerator<Buffer> {
      try {
        for await (const chunk of source) {
          const buf = toBuffer(chunk);
          size += buf.length;
          yield buf;
        }
      } catch (err) {
        sourceFailed = true;
        sourceError = err;
        throw err;
      }
    }
    const trackedBody = Readable.from(tracked(body), { objectMode: false });
    // Upload buffers up to partSize and sends a single PutObject for small bodies;
    // larger ones go multipart, which it aborts on failure (no partial object).
    const upload = new Upload({
      client: this.client,
      params: {
        Bucket: this.bucket,
        Key: key,
        Body: trackedBody,
        ContentType: contentType,
        Metadata: metadata,
      },
      partSize: this.partSize,
      queueSize: this.queueSize,
      leavePartsOnError: false,
    });
    try {
      await upload.done();
    } catch (err) {
      trackedBody.destroy();
      if (!body.destroyed) body.destroy();
      if (sourceFailed) throw sourceError;
      throw this.unavailable("put", key, err);
    }
    return stored(size);
  }

  async get(key: string): Promise<BlobObject | null> {
    assertValidBlobKey(key);
    try {
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      const body = res.Body;
      if (!(body instanceof Readable)) {
        throw new Error("GetObject returned no readable body");
      }
      return {
        key,
        contentType: res.ContentType ?? "application/octet-stream",
        size: res.ContentLength ?? 0,
        ...metadataOf(res.Metadata),
        body,
        release: () => body.destroy(),
      };
    } catch (err) {
      if (isMissingObject(err)) return null;
      throw this.unavailable("get", key, err);
    }
  }

  async head(key: string): Promise<BlobInfo | null> {
    assertValidBlobKey(key);
    try {
      const res = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return {
        key,
        contentType: res.ContentType ?? "application/octet-stream",
        size: res.ContentLength ?? 0,
        ...metadataOf(res.Metadata),
      };
    } catch (err) {
      if (isMissingObject(err)) return null;
      throw this.unavailable("head", key, err);
    }
  }

  async delete(key: string): Promise<void> {
    assertValidBlobKey(key);
    try {
      // S3 answers 204 for a missing key too, so this is idempotent as is.
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
    } catch (err) {
      if (isMissingObject(err)) return;
      throw this.unavailable("delete", key, err);
    }
  }

  async move(from: string, to: string): Promise<boolean> {
    assertValidBlobKey(from);
    assertValidBlobKey(to);
    try {
      // Server-side copy: content type and user metadata travel with it (MetadataDirective COPY).
      await this.client.send(
        new CopyObjectCommand({
          Bucket: this.bucket,
          Key: to,
          CopySource: `${this.bucket}/${from.split("/").map(encodeURIComponent).join("/")}`,
          MetadataDirective: "COPY",
        }),
      );
    } catch (err) {
      if (isMissingObject(err)) return false;
      throw this.unavailable("move", from, err);
    }
    await this.delete(from);
    return true;
  }

  async ping(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
    } catch (err) {
      throw this.unavailable("ping", "", err);
    }
  }

  async *list(prefix: string): AsyncIterable<ListedBlob> {
    assertValidBlobKey(prefix);
    let token: string | undefined;
    do {
      let page;
      try {
        page = await this.client.send(
          new ListObjectsV2Command({ Bucket: this.bucket, Prefix: `${prefix}/`, ContinuationToken: token }),
        );
      } catch (err) {
        throw this.unavailable("list", prefix, err);
      }
      for (const o of page.Contents ?? []) {
        if (o.Key) yield { key: o.Key, modifiedAt: o.LastModified ?? new Date() };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  /** Aborts multipart uploads started before `olderThan` (a crash mid-upload leaves them billed but invisible). */
  async removeIncompleteWrites(olderThan: Date): Promise<number> {
    let removed = 0;
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    for (;;) {
      let page;
      try {
        page = await this.client.send(
          new ListMultipartUploadsCommand({
            Bucket: this.bucket,
            KeyMarker: keyMarker,
            UploadIdMarker: uploadIdMarker,
          }),
        );
      } catch (err) {
        // s3rver (and some S3-compatible stores) do not implement the call: nothing to sweep there.
        if (asSdkError(err).name === "NotImplemented") return removed;
        throw this.unavailable("list multipart uploads", "", err);
      }
      for (const u of page.Uploads ?? []) {
        if (!u.Key || !u.UploadId || !u.Initiated || u.Initiated >= olderThan) continue;
        try {
          await this.client.send(
            new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: u.Key, UploadId: u.UploadId }),
          );
          removed++;
        } catch (err) {
          throw this.unavailable("abort multipart upload", u.Key, err);
        }
      }
      if (!page.IsTruncated) return removed;
      keyMarker = page.NextKeyMarker;
      uploadIdMarker = page.NextUploadIdMarker;
    }
  }

  /** Creates the bucket when it does not exist (dev, tests, first start against MinIO). */
  async ensureBucket(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
      return;
    } catch (err) {
      if (asSdkError(err).$metadata?.httpStatusCode !== 404 && asSdkError(err).name !== "NotFound") {
        throw this.unavailable("ensureBucket", "", err);
      }
    }
    try {
      await this.client.send(
        new CreateBucketCommand({
          Bucket: this.bucket,
          // us-east-1 is the one region that rejects an explicit LocationConstraint.
          ...(this.region === "us-east-1"
            ? {}
            : {
                CreateBucketConfiguration: {
                  LocationConstraint: this.region as BucketLocationConstraint,
                },
              }),
        }),
      );
    } catch (err) {
      const { name } = asSdkError(err);
      if (name === "BucketAlreadyOwnedByYou" || name === "BucketAlreadyExists") return;
      throw this.unavailable("ensureBucket", "", err);
    }
  }

  /** Releases the client's sockets (tests, graceful shutdown). */
  close(): void {
    this.client.destroy();
  }
}
