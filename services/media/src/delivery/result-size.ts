import { LRUCache } from "lru-cache";
import { DomainError, type FieldError } from "@media-platform/contracts";

/** A result larger than MEDIA_MAX_RESULT_BYTES: answered 413, never re-rendered. */
export class ResultTooLargeError extends DomainError<"result-too-large"> {
  readonly code = "result-too-large";

  constructor(
    readonly bytes: number,
    readonly limit: number,
  ) {
    super(
      `the result would be ${bytes} bytes, above the ${limit} bytes a result may have (MEDIA_MAX_RESULT_BYTES); ask for a smaller size or a more compact format`,
    );
    this.name = "ResultTooLargeError";
  }

  override get fields(): FieldError[] {
    return [{ path: "MEDIA_MAX_RESULT_BYTES", message: `at most ${this.limit} bytes` }];
  }
}

/** Renders of refused results remembered per process: enough for an attacker's URL list, bounded in memory. */
const REMEMBERED_REFUSALS = 10_000;

/**
 * Results above MEDIA_MAX_RESULT_BYTES are refused: they cannot be cached (CACHE_MAX_ENTRY_BYTES
 * is lower), so served they would be re-rendered on every request and pin a buffer of that size
 * per reader. Results between the two limits are served uncached, as a full-size transformation
 * of a large photo must be. The cache key (with the asset's generation, so a purge forgets it) is remembered, so
 * asking again costs no render.
 */
export class ResultSizeLimit {
  private readonly refused = new LRUCache<string, number>({ max: REMEMBERED_REFUSALS });

  constructor(readonly maxBytes: number) {}

  /** Throws ResultTooLargeError when `key`'s result was already refused. */
  checkRemembered(key: string): void {
    const bytes = this.refused.get(key);
    if (bytes !== undefined) throw new ResultTooLargeError(bytes, this.maxBytes);
  }

  /** Throws ResultTooLargeError (and remembers `key`) when a result of `bytes` is above the limit. */
  check(key: string, bytes: number): void {
    if (bytes <= this.maxBytes) return;
    this.refused.set(key, bytes);
    throw new ResultTooLargeError(bytes, this.maxBytes);
  }
}
