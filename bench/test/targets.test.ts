import { calibrationProblem, judge, targetRows, unmeasured } from "../targets";

describe("judge", () => {
  it("is met when every measurement counts and reaches the minimum", () => {
    const j = judge({ name: "t", minimum: 0.95 }, [
      { label: "a", ratio: 0.95 },
      { label: "b", ratio: 1.3 },
    ]);
    expect(j.verdict).toBe("met");
    expect(j.short).toEqual([]);
    expect(targetRows([j])[0]).toEqual(["t", ">= 0.95x", "MET", "2 of 2", "0.95x", "-"]);
  });

  it("is not met when a counted measurement falls short, and lists the shortfalls lowest first", () => {
    const j = judge({ name: "t", minimum: 0.95 }, [
      { label: "a", ratio: 0.94 },
      { label: "b", ratio: 1.1 },
      { label: "c", ratio: 0.85 },
      { label: "d", ratio: 0.5, excluded: "load-generator bound" },
    ]);
    expect(j.verdict).toBe("not met");
    expect(j.short.map((m) => m.label)).toEqual(["c", "a"]);
    const row = targetRows([j])[0]!;
    expect(row.slice(2, 5)).toEqual(["NOT MET", "1 of 4", "0.85x"]);
    expect(row[5]).toBe("c 0.85x; a 0.94x; not counted: d (load-generator bound)");
  });

  it("is not measured when nothing counted fell short but something could not be counted", () => {
    const j = judge({ name: "t", minimum: 0.85 }, [
      { label: "seq", ratio: 1.01, excluded: "load-generator bound" },
      { label: "paired", ratio: 0.99 },
      { label: "per cpu", ratio: Number.NaN },
    ]);
    expect(j.verdict).toBe("not measured");
    expect(j.excluded.map((m) => m.label)).toEqual(["seq", "per cpu"]);
    expect(targetRows([j])[0]![5]).toBe("not counted: seq (load-generator bound); not counted: per cpu (no figure)");
  });

  it("is not measured with no measurement at all", () => {
    expect(judge({ name: "t", minimum: 0.85 }, []).verdict).toBe("not measured");
    expect(targetRows([judge({ name: "t", minimum: 0.85 }, [])])[0]![4]).toBe("-");
  });

  it("names at most six shortfalls and counts the rest", () => {
    const j = judge(
      { name: "t", minimum: 1 },
      Array.from({ length: 9 }, (_, i) => ({ label: `m${i}`, ratio: 0.5 + i / 100 })),
    );
    expect(targetRows([j])[0]![5]).toBe("m0 0.50x; m1 0.51x; m2 0.52x; m3 0.53x; m4 0.54x; m5 0.55x; 3 more below");
  });
});

describe("unmeasured", () => {
  it("reports a part that produced no figures as not measured, with the reason", () => {
    const j = unmeasured({ name: "Redis", minimum: 0.8 }, "redis-server is not installed");
    expect(j.verdict).toBe("not measured");
    expect(targetRows([j])[0]).toEqual([
      "Redis",
      ">= 0.80x",
      "NOT MEASURED",
      "0 of 1",
      "-",
      "not counted: the whole part (redis-server is not installed)",
    ]);
  });
});

describe("calibrationProblem", () => {
  it("accepts an A/A ratio within 1.00x ± 0.05 and names one outside it", () => {
    expect(calibrationProblem(1)).toBeUndefined();
    expect(calibrationProblem(0.95)).toBeUndefined();
    expect(calibrationProblem(1.05)).toBeUndefined();
    expect(calibrationProblem(0.86)).toBe("A/A 0.86x");
    expect(calibrationProblem(1.13)).toBe("A/A 1.13x");
    expect(calibrationProblem(Number.NaN)).toBe("no A/A calibration");
  });
});
