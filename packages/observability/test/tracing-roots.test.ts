import { NewTraces, wordsHex } from "../src/tracing/roots";
import { rootSampleRatio } from "../src/tracing/settings";

/** TraceIdRatioBasedSampler's rule: the XOR of the id's four 32-bit words below floor(ratio * (2^32 - 1)). */
const sampledBy = (traceId: string, ratio: number): boolean => {
  let x = 0;
  for (let i = 0; i < 32; i += 8) x = (x ^ parseInt(traceId.slice(i, i + 8), 16)) >>> 0;
  return x < Math.floor(ratio * 0xffffffff);
};

describe("rootSampleRatio: the root sampler's fraction, read as the SDK reads it", () => {
  it.each([
    [{}, 1],
    [{ OTEL_TRACES_SAMPLER: "parentbased_always_on" }, 1],
    [{ OTEL_TRACES_SAMPLER: "always_off" }, 0],
    [{ OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.01" }, 0.01],
    [{ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "" }, 1],
    [{ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "2" }, 1],
    [{ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "half" }, 1],
    [{ OTEL_TRACES_SAMPLER: "jaeger_remote" }, undefined],
  ])("%j → %p", (env, ratio) => {
    expect(rootSampleRatio(env)).toBe(ratio);
  });
});

describe("NewTraces: the decision on a new trace, ahead of the SDK", () => {
  it("samples by the ratio sampler's rule and hands the sampled id to the next root span, once", () => {
    const traces = new NewTraces(0.3);
    let sampled = 0;
    for (let i = 0; i < 2000; i++) {
      if (traces.sampleNew()) {
        sampled++;
        const id = traces.generateTraceId();
        expect(id).toMatch(/^[0-9a-f]{32}$/);
        expect(sampledBy(id, 0.3)).toBe(true);
        expect(traces.generateTraceId()).not.toBe(id);
      } else {
        const id = traces.droppedTraceId();
        expect(id).toMatch(/^[0-9a-f]{32}$/);
        expect(sampledBy(id, 0.3)).toBe(false);
      }
    }
    expect(sampled).toBeGreaterThan(400);
    expect(sampled).toBeLessThan(800);
  });

  it("never makes the all-zero (invalid) id, also when every random number is zero", () => {
    const random = jest.spyOn(Math, "random").mockReturnValue(0);
    try {
      const traces = new NewTraces(0.3);
      expect(traces.sampleNew()).toBe(true);
      const id = traces.generateTraceId();
      expect(id).not.toBe("0".repeat(32));
      expect(sampledBy(id, 0.3)).toBe(true);
      const ids = new Uint32Array(8);
      expect(traces.sampleNew()).toBe(true);
      traces.takeTraceWords(ids, 0);
      expect(wordsHex(ids, 0, 4)).not.toBe("0".repeat(32));
      expect(new NewTraces(0).droppedTraceId()).not.toBe("0".repeat(32));
    } finally {
      random.mockRestore();
    }
  });

  it("always samples at 1, never at 0, and leaves an unknown sampler to the SDK", () => {
    expect(new NewTraces(1).sampleNew()).toBe(true);
    const none = new NewTraces(0);
    expect(none.sampleNew()).toBe(false);
    expect(none.droppedTraceId()).toMatch(/^[0-9a-f]{32}$/);
    expect(new NewTraces(undefined).sampleNew()).toBeUndefined();
    expect(new NewTraces(0.5).generateSpanId()).toMatch(/^[0-9a-f]{16}$/);
  });

  it("hands a sampled trace id to the journal as words instead, once, with a new span id beside it", () => {
    const traces = new NewTraces(0.3);
    const ids = new Uint32Array(16);
    let taken = 0;
    for (let i = 0; taken < 50; i++) {
      if (!traces.sampleNew()) continue;
      traces.takeTraceWords(ids, 8);
      traces.drawSpanWords(ids, 12);
      const traceId = wordsHex(ids, 8, 4);
      expect(sampledBy(traceId, 0.3)).toBe(true);
      expect(wordsHex(ids, 12, 2)).toMatch(/^[0-9a-f]{16}$/);
      // Taken: the SDK's next root span gets an id of its own.
      expect(traces.generateTraceId()).not.toBe(traceId);
      taken++;
    }
  });
});
