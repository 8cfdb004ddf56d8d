import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import sharp from "sharp";
import { toRaw } from "../src/render/raw";
import type { RawImage } from "../src/render/types";
import { createPixelWorkers, PixelKernelError, type PixelWorkerPool } from "../src/render/pixels/pool";

// Extra kernels for fault injection, loaded into the workers through `kernelModules`.
const TEST_KERNELS = `
const { threadId } = require("node:worker_threads");
exports.kernels = {
  // Reports its thread id in the first 4 bytes.
  whoami(image) { image.data.writeUInt32LE(threadId, 0); return image; },
  // Says it started (flag[1] = 1), then blocks until the main thread sets flag[0].
  gate(image, params) {
    const flag = new Int32Array(params.flag);
    Atomics.store(flag, 1, 1);
    Atomics.notify(flag, 1);
    Atomics.wait(flag, 0, 0);
    image.data.writeUInt32LE(threadId, 0);
    return image;
  },
  boom() { throw new RangeError("kernel exploded"); },
  exit() { process.exit(3); },
};
`;

let dir: string;
let kernelModule: string;
const pools: PixelWorkerPool[] = [];
const pool = (options: Parameters<typeof createPixelWorkers>[0] = {}): PixelWorkerPool => {
  const p = createPixelWorkers({ size: 1, kernelModules: [kernelModule], ...options });
  pools.push(p);
  return p;
};

beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "pixel-kernels-"));
  kernelModule = path.join(dir, "test-kernels.cjs");
  writeFileSync(kernelModule, TEST_KERNELS);
});

afterAll(async () => {
  await Promise.all(pools.map((p) => p.close()));
  rmSync(dir, { recursive: true, force: true });
});

/** A V8-owned (transferable) RGB image of one flat value. */
function flat(width: number, height: number, value: number): RawImage {
  const data = Buffer.from(new ArrayBuffer(width * height * 3));
  data.fill(value);
  return { data, width, height, channels: 3 };
}

describe("pixel worker pool", () => {
  it("runs a TypeScript kernel (loaded through tsx) in a worker thread and returns its result", async () => {
    const p = pool();
    const out = await p.run("solarize", flat(4, 2, 200), { threshold: 128 });
    expect([out.width, out.height, out.channels]).toEqual([4, 2, 3]);
    expect([...out.data]).toEqual(new Array(24).fill(55));
    const who = await p.run("whoami", flat(4, 2, 0), {});
    expect(who.data.readUInt32LE(0)).toBeGreaterThan(0); // the main thread's id is 0
  });

  it("keeps the event loop turning while a kernel is busy", async () => {
    const p = pool();
    const flag = new Int32Array(new SharedArrayBuffer(8));
    const result = p.run("gate", flat(8, 8, 0), { flag: flag.buffer });
    let ticks = 0;
    const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
    // Turn the loop until the kernel reports it has started, then 100 more turns while it blocks.
    while (Atomics.load(flag, 1) === 0) {
      await tick();
      ticks++;
    }
    const startedAt = ticks;
    for (let i = 0; i < 100; i++, ticks++) await tick();
    expect(ticks - startedAt).toBe(100);
    let settled = false;
    void result.then(() => (settled = true));
    await tick();
    expect(settled).toBe(false); // still blocked: the kernel is genuinely running elsewhere
    Atomics.store(flag, 0, 1);
    Atomics.notify(flag, 0);
    const out = await result;
    expect(out.data.readUInt32LE(0)).toBeGreaterThan(0);
  });

  it("rejects when a kernel throws, and the same worker carries on", async () => {
    const p = pool();
    const failure = await p.run("boom", flat(2, 2, 0), {}).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(PixelKernelError);
    expect((failure as PixelKernelError).message).toBe("kernel exploded");
    expect((failure as PixelKernelError).causeName).toBe("RangeError");
    expect((failure as PixelKernelError).kernel).toBe("boom");
    const out = await p.run("solarize", flat(2, 2, 255), { threshold: 0 });
    expect([...out.data]).toEqual(new Array(12).fill(0));
    expect(p.stats()).toMatchObject({ replaced: 0, failed: 1, completed: 1, workers: 1 });
  });

  it("rejects unknown kernels and mislabelled pixel buffers", async () => {
    const p = pool();
    await expect(p.run("no-such-kernel", flat(2, 2, 0), {})).rejects.toThrow('unknown pixel kernel "no-such-kernel"');
    const wrong = { ...flat(2, 2, 0), width: 3 };
    await expect(p.run("solarize", wrong, { threshold: 1 })).rejects.toMatchObject({
      causeName: "KernelInputError",
      message: expect.stringContaining("needs 18"),
    });
  });

  it("replaces a worker that dies mid-task and rejects only that task", async () => {
    const p = pool({ size: 2 });
    const first = await p.run("whoami", flat(2, 2, 0), {});
    const died = await p.run("exit", flat(2, 2, 0), {}).catch((e: unknown) => e);
    expect(died).toBeInstanceOf(PixelKernelError);
    expect((died as Error).message).toMatch(/exited \(code 3\)/);
    await new Promise((resolve) => setImmediate(resolve));
    expect(p.stats().replaced).toBe(1);
    const again = await Promise.all([1, 2, 3].map(() => p.run("whoami", flat(2, 2, 0), {})));
    expect(again.every((img) => img.data.readUInt32LE(0) > 0)).toBe(true);
    expect(first.data.readUInt32LE(0)).toBeGreaterThan(0);
  });

  it("abandons a kernel past taskTimeoutMs and replaces its worker", async () => {
    const p = pool({ taskTimeoutMs: 300 });
    const flag = new Int32Array(new SharedArrayBuffer(8)); // never released
    await expect(p.run("gate", flat(2, 2, 0), { flag: flag.buffer })).rejects.toThrow(/exceeded 300 ms/);
    const out = await p.run("solarize", flat(2, 2, 10), { threshold: 0 });
    expect(out.data[0]).toBe(245);
    expect(p.stats().replaced).toBe(1);
  });

  it("transfers pixel buffers instead of copying them", async () => {
    const p = pool();
    const input = flat(64, 64, 7);
    const out = await p.run("solarize", input, { threshold: 200 });
    // Ownership moved to the worker: the caller's buffer is detached...
    expect(input.data.buffer.byteLength).toBe(0);
    // ...and the result arrives as its own whole ArrayBuffer, not a view into a copy.
    expect(out.data.byteOffset).toBe(0);
    expect(out.data.buffer.byteLength).toBe(64 * 64 * 3);
    expect(out.data[0]).toBe(7);
    expect(p.stats().cloned).toBe(0);
  });

  it("clones (and counts) buffers V8 cannot detach, such as sharp's output, leaving them intact", async () => {
    const p = pool();
    const raw = await toRaw(
      sharp({ create: { width: 16, height: 16, channels: 3, background: { r: 200, g: 100, b: 50 } } }),
    );
    const out = await p.run("solarize", raw, { threshold: 128 });
    expect([out.data[0], out.data[1], out.data[2]]).toEqual([55, 100, 50]);
    expect(raw.data[0]).toBe(200);
    expect(p.stats().cloned).toBe(1);
  });

  it("queues tasks beyond its size and answers each with its own result", async () => {
    const p = pool({ size: 2 });
    const results = await Promise.all(
      Array.from({ length: 7 }, (_, i) => p.run("solarize", flat(3, 3, 250 - i), { threshold: 0 })),
    );
    expect(results.map((r) => r.data[0])).toEqual([5, 6, 7, 8, 9, 10, 11]);
    expect(p.stats()).toMatchObject({ size: 2, queued: 0, busy: 0, completed: 7 });
    expect(p.stats().workers).toBeLessThanOrEqual(2);
  });

  it("rejects queued and new tasks once closed", async () => {
    const p = createPixelWorkers({ size: 1, kernelModules: [kernelModule] });
    const flag = new Int32Array(new SharedArrayBuffer(8));
    const running = p.run("gate", flat(2, 2, 0), { flag: flag.buffer });
    const queued = p.run("solarize", flat(2, 2, 0), { threshold: 1 });
    const outcomes = Promise.all([running, queued].map((task) => task.catch((e: unknown) => e)));
    await p.close();
    const [runningError, queuedError] = await outcomes;
    expect(runningError).toBeInstanceOf(PixelKernelError);
    expect((queuedError as Error).message).toMatch("closed");
    await expect(p.run("solarize", flat(2, 2, 0), { threshold: 1 })).rejects.toThrow("closed");
  });
});
