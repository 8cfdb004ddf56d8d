import { InvalidBlobKeyError } from "./blob-store";

/** S3's own limit on key length (bytes; keys here are ASCII so chars = bytes). */
export const MAX_BLOB_KEY_LENGTH = 1024;
/** Leaves room under NAME_MAX (255) for the filesystem driver's suffixes. */
export const MAX_BLOB_KEY_SEGMENT_LENGTH = 200;

/**
 * Key grammar shared by every driver, so a key valid on one is valid on all:
 * slash-separated segments of [A-Za-z0-9._-], no empty, "." or ".." segment.
 * This alone rules out leading slashes, backslashes, NUL and traversal.
 * One expression, no split: a MISS checks two keys (original, attributes) on the event loop.
 */
const KEY = new RegExp(
  `^(?!\\.\\.?(?:/|$))(?!.*/\\.\\.?(?:/|$))[A-Za-z0-9._-]{1,${MAX_BLOB_KEY_SEGMENT_LENGTH}}(?:/[A-Za-z0-9._-]{1,${MAX_BLOB_KEY_SEGMENT_LENGTH}})*$`,
);

export function isValidBlobKey(key: unknown): key is string {
  return typeof key === "string" && key.length <= MAX_BLOB_KEY_LENGTH && KEY.test(key);
}

export function assertValidBlobKey(key: unknown): asserts key is string {
  if (!isValidBlobKey(key)) throw new InvalidBlobKeyError(String(key));
}

/** Content types end up in HTTP headers: printable ASCII only, so no header injection. */
export function assertValidContentType(contentType: unknown): asserts contentType is string {
  if (typeof contentType !== "string" || !/^[\x21-\x7e][\x20-\x7e]{0,254}$/.test(contentType)) {
    throw new TypeError(`invalid content type: ${JSON.stringify(contentType)}`);
  }
}

/** S3's limit on user metadata (names and values together, bytes). */
export const MAX_BLOB_METADATA_BYTES = 2048;

/**
 * Blob metadata travels as HTTP headers (S3 `x-amz-meta-<name>`): lower-case names of
 * [a-z0-9-], printable ASCII values, 2 KiB in all, so every driver stores exactly what it is given.
 */
export function assertValidBlobMetadata(metadata: unknown): asserts metadata is Record<string, string> | undefined {
  if (metadata === undefined) return;
  if (typeof metadata !== "object" || metadata === null) throw new TypeError("blob metadata must be an object");
  let bytes = 0;
  for (const [name, value] of Object.entries(metadata)) {
    if (!/^[a-z0-9][a-z0-9-]{0,63}$/.test(name))
      throw new TypeError(`invalid blob metadata name: ${JSON.stringify(name)}`);
    if (typeof value !== "string" || !/^[\x20-\x7e]*$/.test(value)) {
      throw new TypeError(`invalid blob metadata value for ${name}: printable ASCII only`);
    }
    bytes += name.length + value.length;
  }
  if (bytes > MAX_BLOB_METADATA_BYTES)
    throw new TypeError(`blob metadata is ${bytes} bytes, above ${MAX_BLOB_METADATA_BYTES}`);
}
