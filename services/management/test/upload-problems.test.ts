import { toProblem } from "../src/problem";
import { MetadataRemovalError } from "../src/domain-errors";
import { createTestApp, expectProblem, fixture, upload, type TestApp } from "./helpers";

// The rewrite that takes GPS and serial numbers out of a stored original, failing as a tool
// that cannot rewrite a file does.
jest.mock("../src/assets/original-privacy", () => ({
  ...jest.requireActual("../src/assets/original-privacy"),
  removePrivateMetadata: () => Promise.reject(new Error("rewrite failed")),
}));

const WS = "ws-upload-problems";

describe("an upload whose private metadata cannot be removed", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it("is a 422 titled by what happened, not 'cannot be decoded', saying what to do; nothing is stored", async () => {
    const res = await upload(t.as(WS), fixture("rocket.jpg"), "rocket.jpg");
    expectProblem(res, 422);
    expect(res.body).toMatchObject({
      type: "https://media-platform.dev/problems/metadata-removal-failed",
      title: "Location data could not be removed",
      detail: expect.stringMatching(/GPS position.*upload it again/),
    });
    expect((await t.as(WS).get("/v1/assets")).body.count).toBe(0);
  });

  it("is one entry of the problem table", () => {
    const problem = toProblem(new MetadataRemovalError("x"));
    expect([problem.status, problem.slug, problem.title]).toEqual([
      422,
      "metadata-removal-failed",
      "Location data could not be removed",
    ]);
  });
});
