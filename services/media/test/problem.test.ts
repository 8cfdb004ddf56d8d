import { IMAGE_PROBLEMS, ImagePixelLimitError, MediaUrlError, UndecodableImageError } from "@media-platform/contracts";
import { StorageUnavailableError } from "@media-platform/storage";
import { toProblem } from "../src/app";
import { AssetNotFoundError } from "../src/delivery/asset-not-found";
import { ClientShareExceededError } from "../src/delivery/client-share";
import {
  InvalidMediaUrlError,
  QueryNotAllowedError,
  RequestCancelledError,
  RequestTimeoutError,
  SignatureRefusedError,
} from "../src/delivery/errors";
import { QueueFullError } from "../src/delivery/limiter";
import { ResultTooLargeError } from "../src/delivery/result-size";
import { EagerRequestError } from "../src/eager/router";
import { FaceDetectionError } from "../src/faces";
import { PresetsOnlyError } from "../src/presets";
import { MEDIA_PROBLEMS, ProblemError } from "../src/problem";
import { ByteBudgetError, TransformationInputError } from "../src/render/errors";

/** What a client sees of an error: status, type slug, title, Retry-After. */
const answer = (err: unknown) => {
  const problem = toProblem(err);
  return [problem.status, problem.slug, problem.title, problem.headers["Retry-After"]];
};

describe("media's problem table (MEDIA_PROBLEMS)", () => {
  it("answers every domain error by its code", () => {
    expect(answer(new AssetNotFoundError("a"))).toEqual([404, "asset-not-found", "Asset not found", undefined]);
    expect(answer(new InvalidMediaUrlError("x", [{ path: "resize.width", message: "m" }]))).toEqual([
      400,
      "invalid-media-url",
      "Invalid media URL",
      undefined,
    ]);
    expect(answer(new TransformationInputError("crop", "outside"))).toEqual([
      400,
      "invalid-media-url",
      "Transformation cannot apply to this image",
      undefined,
    ]);
    expect(answer(new QueryNotAllowedError("/p"))).toEqual([
      400,
      "query-not-allowed",
      "Query string not allowed",
      undefined,
    ]);
    expect(answer(new EagerRequestError("bad"))).toEqual([400, "invalid-eager-request", "Bad Request", undefined]);
    expect(answer(new SignatureRefusedError("invalid-signature", "x"))).toEqual([
      403,
      "invalid-signature",
      "Invalid signature",
      undefined,
    ]);
    expect(answer(new SignatureRefusedError("signature-expired", "x"))).toEqual([
      403,
      "signature-expired",
      "Signed URL expired",
      undefined,
    ]);
    expect(answer(new PresetsOnlyError())).toEqual([403, "presets-only", "Only presets are served", undefined]);
    expect(answer(new ResultTooLargeError(10, 5))).toEqual([413, "result-too-large", "Result too large", undefined]);
    expect(answer(new ByteBudgetError(100, 200))).toEqual([
      422,
      "max-bytes-unreachable",
      "Result does not fit the byte budget",
      undefined,
    ]);
    expect(answer(new ClientShareExceededError(0.5, 10))).toEqual([
      429,
      "client-share-exceeded",
      "Too much render work from this client",
      "1",
    ]);
    expect(answer(new RequestCancelledError())).toEqual([499, "request-cancelled", "Client closed request", undefined]);
    expect(answer(new QueueFullError(4, 8))).toEqual([503, "overloaded", "Service overloaded", "1"]);
    expect(answer(new RequestTimeoutError(1000))).toEqual([503, "timeout", "Transformation timed out", "2"]);
    expect(answer(new FaceDetectionError("worker exited"))).toEqual([
      503,
      "face-detection-unavailable",
      "Face detection unavailable",
      "2",
    ]);
  });

  it("answers the shared image errors as contracts' IMAGE_PROBLEMS: one status each", () => {
    expect(answer(new UndecodableImageError("stored original cannot be decoded: x"))).toEqual([
      422,
      "undecodable-image",
      "Image cannot be decoded",
      undefined,
    ]);
    expect(answer(new ImagePixelLimitError(1000))).toEqual([
      422,
      "image-too-large",
      "Image too large to process",
      undefined,
    ]);
    expect(toProblem(new ImagePixelLimitError(1000)).toBody().errors).toEqual([
      { path: "LIMIT_INPUT_PIXELS", message: "must have at most 1000 pixels (LIMIT_INPUT_PIXELS)" },
    ]);
  });

  it("names the field of a refused URL; an id that is not a UUID names no asset (404)", () => {
    const issues = [{ path: "assetId", message: "must be a UUID" }];
    const malformed = toProblem(new MediaUrlError(issues)).toBody();
    expect([malformed.status, malformed.type, malformed.detail, malformed.errors]).toEqual([
      404,
      "https://media-platform.dev/problems/asset-not-found",
      "No asset has this id (asset ids are UUIDs)",
      issues,
    ]);
    const invalid = toProblem(new MediaUrlError([{ path: "resize.width", message: "must be at most 8192" }])).toBody();
    expect([invalid.status, invalid.detail, invalid.errors]).toEqual([
      400,
      "resize.width: must be at most 8192",
      [{ path: "resize.width", message: "must be at most 8192" }],
    ]);
    expect(toProblem(new TransformationInputError("crop", "outside the image")).toBody()).toMatchObject({
      detail: "crop: outside the image",
      errors: [{ path: "crop", message: "outside the image" }],
    });
  });

  it("never leaks a store's or an unknown error's message", () => {
    const storage = toProblem(new StorageUnavailableError("reading originals/x failed: ECONNRESET 10.0.0.3"));
    expect([storage.status, storage.slug, storage.message, storage.headers["Retry-After"]]).toEqual([
      503,
      "storage-unavailable",
      "The blob store is unavailable; retry shortly",
      "5",
    ]);
    const unknown = toProblem(new Error("secret internals"));
    expect([unknown.status, unknown.slug, unknown.message]).toEqual([
      500,
      "internal-error",
      "An unexpected error occurred",
    ]);
    const passed = new ProblemError(405, "method-not-allowed", "no");
    expect(toProblem(passed)).toBe(passed);
  });

  it("holds a row for the shared image codes an original can meet, with their shared status and type", () => {
    for (const code of ["undecodable-image", "image-too-large"] as const) {
      const { status, type, title } = MEDIA_PROBLEMS[code];
      expect([code, status, type, title]).toEqual([
        code,
        IMAGE_PROBLEMS[code].status,
        IMAGE_PROBLEMS[code].type,
        IMAGE_PROBLEMS[code].title,
      ]);
    }
    // An original media cannot read is undecodable, whatever the reason: 415 speaks of an upload.
    expect(Object.keys(MEDIA_PROBLEMS)).not.toContain("unsupported-image");
  });
});
