import http from "node:http";
import type { AddressInfo } from "node:net";
import { findWrk, groupThreadCpu, runWrk, statCpu, threadGroupCpuMs, threadGroupDelta } from "../harness";

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

describe("groupThreadCpu", () => {
  it("splits a process into its JavaScript thread, its other node threads and libvips' (what is left)", () => {
    const tasks = [
      { tid: 100, name: "node", ms: 50 },
      { tid: 101, name: "node", ms: 7 },
      { tid: 108, name: "node", ms: 30 },
      { tid: 112, name: "libvips worker", ms: 400 },
      { tid: 113, name: "vips-wbuffer", ms: 20 },
    ];
    // 1000 ms in all: 100 of it on libvips threads that have ended (no longer listed).
    expect(groupThreadCpu(100, 1000, tasks)).toEqual({ all: 1000, main: 50, node: 37, libvips: 913 });
  });

  it("gives per-request deltas that add up to the whole", () => {
    const per = threadGroupDelta(
      { all: 1000, main: 50, node: 37, libvips: 913 },
      { all: 1900, main: 110, node: 67, libvips: 1723 },
      300,
    );
    expect(per).toEqual({ all: 3, main: 0.2, node: 0.1, libvips: 2.7 });
    expect(per.main + per.node + per.libvips).toBeCloseTo(per.all, 10);
  });

  it("reads this process from /proc on Linux", () => {
    const t = threadGroupCpuMs(process.pid);
    if (process.platform !== "linux") return expect(t).toBeUndefined();
    expect(t!.all).toBeGreaterThanOrEqual(t!.main + t!.node);
    expect(t!.main).toBeGreaterThan(0);
    expect(threadGroupCpuMs(2 ** 22 + 12345)).toBeUndefined();
  });
});

describe("runWrk with openFirstMs (open-connections.lua)", () => {
  const wrk = findWrk();
  // wrk is a Debian package (bench/README.md); without it the benches cannot run either.
  (wrk ? it : it.skip)(
    "opens every connection before the first request, and counts the seconds of load only",
    async () => {
      let opened = 0;
      let openedAtFirstRequest = -1;
      const server = http.createServer((_req, res) => {
        if (openedAtFirstRequest < 0) openedAtFirstRequest = opened;
        res.end("ok");
      });
      server.on("connection", () => opened++);
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      try {
        const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
        const result = await runWrk({ wrk: wrk!, url, connections: 16, seconds: 1, openFirstMs: 500 });
        // wrk opens one more connection of its own before the load (129 for 128 in nstat).
      expect(openedAtFirstRequest).toBeGreaterThanOrEqual(16);
        expect(result.requests).toBeGreaterThan(0);
        // wrk runs whole seconds (2 here); the first 0.5 s only open connections.
        expect(result.rps).toBe(result.requests / 1.5);
      } finally {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    },
  );
});
