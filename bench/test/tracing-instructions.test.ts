import { dumpTotals } from "../tracing-instructions";

describe("dumpTotals", () => {
  it("sums a callgrind dump's instructions per thread from each file's `thread:` and `totals:` lines", () => {
    const file = (thread: number, totals: number) => ({
      name: `cg.1.1-0${thread}`,
      text: `version: 1\ncreator: callgrind-3.19.0\ncmd:  node dist/index.js\npart: 1\nthread: ${thread}\n\nevents: Ir\nsummary: 0\n\nfl=(1) ???\nfn=(1) x\n0 5\n\ntotals: ${totals}\n`,
    });
    const totals = dumpTotals([file(1, 171_000_000), file(3, 16_152_624), file(15, 67_000_000), file(3, 48)]);
    expect([...totals.entries()].sort((a, b) => a[0] - b[0])).toEqual([
      [1, 171_000_000],
      [3, 16_152_672],
      [15, 67_000_000],
    ]);
  });

  it("skips a file without totals (a thread that ran nothing while counted)", () => {
    expect(dumpTotals([{ name: "cg.1.1-02", text: "thread: 2\nevents: Ir\n" }]).size).toBe(0);
  });
});
