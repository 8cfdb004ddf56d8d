import type { z } from "zod";
import { DomainError, type FieldError, type ImageErrorCode } from "@media-platform/contracts";

/**
 * The management service's domain errors. Each names its kind (`code`) and what went wrong, never
 * an HTTP status: problem.ts's MANAGEMENT_PROBLEMS turns the code into the answer. The image
 * errors an upload can raise are the shared ones of @media-platform/contracts.
 */
export type ManagementErrorCode =
  | ImageErrorCode
  | "metadata-removal-failed"
  | "not-found"
  | "invalid-input"
  | "conflict"
  | "blob-missing"
  | "invalid-token"
  | "too-large"
  | "import-refused"
  | "import-not-an-image"
  | "import-failed"
  | "import-timeout"
  | "quota-exceeded";

/** No such resource in the caller's workspace (an unknown, foreign or malformed id alike). */
export class NotFoundError extends DomainError<ManagementErrorCode> {
  readonly code = "not-found";
  constructor(detail = "The requested resource does not exist") {
    super(detail);
    this.name = "NotFoundError";
  }
}

/** Input a client sent that the domain refuses, with the offending fields. */
export class InvalidInputError extends DomainError<ManagementErrorCode> {
  readonly code = "invalid-input";
  constructor(
    detail: string,
    private readonly fieldErrors?: FieldError[],
  ) {
    super(detail);
    this.name = "InvalidInputError";
  }

  override get fields(): FieldError[] | undefined {
    return this.fieldErrors;
  }
}

/** The request contradicts the current state (a name taken, an asset not in the trash). */
export class ConflictError extends DomainError<ManagementErrorCode> {
  readonly code = "conflict";
  constructor(
    detail: string,
    private readonly fieldErrors?: FieldError[],
  ) {
    super(detail);
    this.name = "ConflictError";
  }

  override get fields(): FieldError[] | undefined {
    return this.fieldErrors;
  }
}

/** A blob a row points at is missing from the blob store: nothing the client did. */
export class MissingBlobError extends DomainError<ManagementErrorCode> {
  readonly code = "blob-missing";
  constructor(detail: string) {
    super(detail);
    this.name = "MissingBlobError";
  }
}

/**
 * An upload whose private metadata (GPS position, serial numbers) could not be taken out of the
 * stored original: it decoded, so "cannot be decoded" would send its owner after the wrong cause.
 */
export class MetadataRemovalError extends DomainError<ManagementErrorCode> {
  readonly code = "metadata-removal-failed";
  constructor(detail: string, options?: { cause?: unknown }) {
    super(detail, options);
    this.name = "MetadataRemovalError";
  }
}

/** An upload that would take a workspace past one of its quotas: refused before its bytes are stored. */
export class QuotaExceededError extends DomainError<ManagementErrorCode> {
  readonly code = "quota-exceeded";
  constructor(
    readonly quota: "storageBytes" | "assets",
    readonly usage: number,
    readonly limit: number,
  ) {
    super(
      quota === "storageBytes"
        ? `The upload would exceed the workspace's storage quota: ${usage} of ${limit} bytes used`
        : `The upload would exceed the workspace's asset quota: ${usage} of ${limit} assets`,
    );
    this.name = "QuotaExceededError";
  }

  override get extensions(): Record<string, unknown> {
    return { quota: this.quota, usage: this.usage, limit: this.limit };
  }
}

/** zod issues -> `errors: [{ path, message }]`, paths prefixed with where the value came from. */
export function zodErrors(error: z.ZodError, prefix: string): FieldError[] {
  const out: FieldError[] = [];
  for (const issue of error.issues) {
    const base = [prefix, ...issue.path.map(String)];
    // "unrecognized_keys" names the keys in the issue, not in its path: one entry per key.
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) out.push({ path: [...base, key].join("."), message: "unknown field" });
    } else {
      out.push({ path: base.join("."), message: issue.message });
    }
  }
  return out;
}

/** An import from a URL refused or failed: which of the import problems, and why. */
export class ImportError extends DomainError<ManagementErrorCode> {
  constructor(
    readonly code: "import-refused" | "import-not-an-image" | "import-failed" | "import-timeout" | "too-large",
    detail: string,
  ) {
    super(detail);
    this.name = "ImportError";
  }
}
