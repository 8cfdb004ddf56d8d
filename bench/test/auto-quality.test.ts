import { scoresOf, table, type Cell, type Setting } from "../auto-quality";

const cells = (scores: number[], bytes = 1000, ms = 10): Cell[] => scores.map((score) => ({ bytes, score, ms }));

describe("the auto-quality bench's score statistics", () => {
  it("gives the mean, the lowest and the nearest-rank 10th percentile", () => {
    // 5 images: the p10 is the lowest.
    expect(scoresOf(cells([76.7, 77.3, 77.7, 72.6, 64.5]))).toEqual({ mean: 73.76, min: 64.5, p10: 64.5 });
    // 69 images: the 7th lowest (ceil(6.9)), whatever a test pattern far below does to the lowest.
    const many = [-64.3, ...Array.from({ length: 68 }, (_, i) => 50 + i)];
    const stats = scoresOf(cells(many));
    expect(stats.min).toBe(-64.3);
    expect(stats.p10).toBe(55);
  });

  it("tables each setting against q75: bytes saved, score statistics, images at or above their q75 score, CPU", () => {
    const q75: Setting = { label: "quality=75", cells: cells([64.5, 77.7], 1000, 10) };
    const auto: Setting = {
      label: "auto, target = q75's lowest score",
      target: 64.5,
      derived: true,
      cells: [
        { bytes: 900, score: 65.9, ms: 120 },
        { bytes: 600, score: 64.6, ms: 100 },
      ],
    };
    const lines = table([q75, auto]);
    expect(lines[2]).toBe("| quality=75 | - | 2000 | 0.0% | 71.1 | 64.5 | 64.5 | 2 of 2 | 1.0x |");
    expect(lines[3]).toBe(
      "| auto, target = q75's lowest score | 64.5 | 1500 | 25.0% | 65.3 | 64.6 | 64.6 | 1 of 2 | 11.0x |",
    );
  });
});
