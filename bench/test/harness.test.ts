import { statCpu } from "../harness";

describe("statCpu", () => {
  it("reads the task name and utime + stime (fields 14 and 15, 10 ms ticks) from a /proc stat line", () => {
    // A thread name with a space and a parenthesis: the name runs to the last ")".
    const line = "4242 (libvips (w) 1) S 1 4242 4242 0 -1 4194368 900 0 0 0 123 45 0 0 20 0 9 0 77 0 0";
    expect(statCpu(line)).toEqual({ name: "libvips (w) 1", ms: (123 + 45) * 10 });
  });

  it("reads a plain process line", () => {
    expect(statCpu("17 (node) R 1 17 17 0 -1 4194304 10 0 0 0 7 3 0 0 20 0 11 0 5 0 0")).toEqual({
      name: "node",
      ms: 100,
    });
  });
});
