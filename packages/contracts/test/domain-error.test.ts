import {
  DomainError,
  IMAGE_PROBLEMS,
  ImagePixelLimitError,
  problemFrom,
  problemOf,
  UndecodableImageError,
  UnsupportedImageError,
  type ProblemTable,
} from "../src";

class QueueFull extends DomainError<"queue-full"> {
  readonly code = "queue-full";
}

describe("domain errors as data", () => {
  const table: ProblemTable = {
    ...IMAGE_PROBLEMS,
    "queue-full": {
      status: 503,
      type: "overloaded",
      title: "Service overloaded",
      headers: { "Retry-After": "1" },
      when: "every slot is busy",
    },
  };

  it("turns a code into its problem: status, type, title, headers and the error's own detail", () => {
    const problem = problemOf(new QueueFull("all 8 slots are busy"), table)!;
    expect(problem.status).toBe(503);
    expect(problem.headers).toEqual({ "Retry-After": "1" });
    expect(problem.toBody("/x")).toEqual({
      type: "https://media-platform.dev/problems/overloaded",
      title: "Service overloaded",
      status: 503,
      detail: "all 8 slots are busy",
      instance: "/x",
    });
  });

  it("gives each shared image failure one status and type", () => {
    expect(
      [
        new UnsupportedImageError("not an image"),
        new UndecodableImageError(),
        new ImagePixelLimitError(100, { width: 20, height: 10 }, "body.file"),
      ].map((err) => {
        const body = problemOf(err, table)!.toBody();
        return [body.status, body.type.split("/").at(-1), body.errors];
      }),
    ).toEqual([
      [415, "unsupported-media-type", undefined],
      [422, "undecodable-image", undefined],
      [422, "image-too-large", [{ path: "body.file", message: "must have at most 100 pixels (LIMIT_INPUT_PIXELS)" }]],
    ]);
    expect(new ImagePixelLimitError(100, { width: 20, height: 10 }).message).toBe(
      "The image is 20x10 = 200 pixels, above the limit of 100 pixels (LIMIT_INPUT_PIXELS)",
    );
  });

  it("problemFrom: the table's status, type, title and headers, with this occurrence's detail and extra headers", () => {
    const problem = problemFrom(table, "queue-full", "9 of 8 slots", {
      headers: { "Retry-After": "3", Connection: "close" },
      errors: [{ path: "slots", message: "full" }],
    });
    expect([problem.status, problem.slug, problem.title, problem.message]).toEqual([
      503,
      "overloaded",
      "Service overloaded",
      "9 of 8 slots",
    ]);
    expect(problem.headers).toEqual({ "Retry-After": "3", Connection: "close" });
    expect(problem.toBody().errors).toEqual([{ path: "slots", message: "full" }]);
  });

  it("knows nothing of a code its table lacks, even one named like an object property", () => {
    class Odd extends DomainError {
      readonly code = "toString";
    }
    expect(problemOf(new Odd("x"), table)).toBeUndefined();
  });
});
