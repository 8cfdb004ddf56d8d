import path from "node:path";
import { Worker } from "node:worker_threads";
import {
  FormatTaskTimeoutError,
  FormatWorkers,
  FormatWorkerStartTimeoutError,
  formatTaskRefusal,
} from "../src/assets/format-workers";
import { ProblemError } from "../src/problem";

const STAND_IN = path.join(__dirname, "support/format-worker-stand-in.cjs");
const SVG = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><circle r="4"/></svg>');
const SVG_LIMITS = { maxElements: 100, maxAttributesPerElement: 10, maxAttributes: 100, maxTagChars: 1000 };

describe("format worker threads: a task's time limit counts its own work", () => {
  const pools: FormatWorkers[] = [];
  const pool = (options: ConstructorParameters<typeof FormatWorkers>[0]) => {
    const p = new FormatWorkers({ size: 1, entry: STAND_IN, ...options });
    pools.push(p);
    return p;
  };
  afterAll(() => Promise.all(pools.map((p) => p.close())));

  it("a decoder that loads for longer than the task's limit does not fail the task", async () => {
    // The load takes 400 ms, the task 10 ms, the limit is 200 ms: only the task's 10 ms count.
    const output = await pool({}).run("svg", { loadMs: 400, workMs: 10 }, 200);
    expect(output).toEqual({ done: 10 });
  });

  it("a task past its limit once loaded is refused as the file's fault, and its thread replaced", async () => {
    const p = pool({});
    const late = await p.run("svg", { loadMs: 0, workMs: 5_000 }, 100).catch((err: unknown) => err);
    expect(late).toBeInstanceOf(FormatTaskTimeoutError);
    expect(() => formatTaskRefusal(late, (s) => `took longer than ${s} s`)).toThrow(
      expect.objectContaining({ name: "UndecodableImageError", message: "took longer than 0.1 s" }),
    );
    // The next task gets a new thread and succeeds.
    await expect(p.run("svg", { loadMs: 0, workMs: 1 }, 1_000)).resolves.toEqual({ done: 1 });
  });

  it("a decoder that never loads is given up at the start limit, as this instance being busy (503 uploads-busy)", async () => {
    const stuck = await pool({ startTimeoutMs: 150 })
      .run("heic", { loadMs: -1, workMs: 0 }, 60_000)
      .catch((err: unknown) => err);
    expect(stuck).toBeInstanceOf(FormatWorkerStartTimeoutError);
    let refusal: unknown;
    try {
      formatTaskRefusal(stuck, () => "unused");
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toBeInstanceOf(ProblemError);
    const problem = refusal as ProblemError;
    // The uploads-busy problem: 503 service-unavailable with Retry-After.
    expect([problem.status, problem.slug, problem.headers["Retry-After"]]).toEqual([503, "service-unavailable", "2"]);
    expect(problem.message).toContain("the heic decoder did not load within 0.15 s");
  });

  it("the real thread says a task started once its decoder is loaded, then answers it", async () => {
    const worker = new Worker(path.join(__dirname, "../src/assets/format-worker.cjs"));
    try {
      const replies: unknown[] = [];
      await new Promise<void>((resolve, reject) => {
        worker.on("error", reject);
        worker.on("message", (reply: { output?: unknown }) => {
          replies.push(reply);
          if ("output" in reply) resolve();
        });
        worker.postMessage({ id: 7, kind: "svg", input: { bytes: SVG, limits: SVG_LIMITS } });
      });
      expect(replies).toHaveLength(2);
      expect(replies[0]).toEqual({ id: 7, started: true });
      const answer = replies[1] as { id: number; output: { svg: Uint8Array } };
      expect(answer.id).toBe(7);
      expect(Buffer.from(answer.output.svg).toString()).toContain("<circle");
    } finally {
      await worker.terminate();
    }
  });
});
