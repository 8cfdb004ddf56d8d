import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import sharp from "sharp";
import request from "supertest";
import { defaultMediaLimits, type MediaLimits } from "@media-platform/contracts";
import { originalKey, type BlobObject } from "@media-platform/storage";
import { loadMediaConfig, MediaConfigError } from "../src/config";
import { RequestCancelledError } from "../src/delivery/errors";
import { WorkGate } from "../src/delivery/limiter";
import type { RenderFn } from "../src/render/pipeline/render";
import { departureOf, SingleFlight } from "../src/delivery/single-flight";
import { render } from "../src/render/pipeline/render";
import { createPixelWorkers } from "../src/render/pixels/pool";
import { transformations } from "../src/render/transformations";
import type { PixelWorkers } from "../src/render/types";
import { MemoryBlobStore } from "./support/memory-store";
import { startTestMedia, type TestMedia } from "./support/media-server";

/** A memory store whose bodies arrive in 16 KiB chunks and that counts the bytes read from them. */
class CountingStore extends MemoryBlobStore {
  bytesRead = 0;
  override async get(key: string): Promise<BlobObject | null> {
    const blob = await super.get(key);
    if (!blob) return blob;
    const data = Buffer.concat(await blob.body.toArray());
    const chunks = function* (this: CountingStore) {
      for (let i = 0; i < data.length; i += 16 * 1024) {
        const chunk = data.subarray(i, i + 16 * 1024);
        this.bytesRead += chunk.length;
        yield chunk;
      }
    }.call(this);
    return { ...blob, body: Readable.from(chunks, { objectMode: false, highWaterMark: 1 }) };
  }
}

/** Pixel workers that record their calls and only end when their signal aborts. */
function hangingPixels(): PixelWorkers & { calls: string[]; signals: AbortSignal[] } {
  const calls: string[] = [];
  const signals: AbortSignal[] = [];
  return {
    calls,
    signals,
    run: (kernel, _image, _params, signal) => {
      calls.push(kernel);
      if (signal) signals.push(signal);
      return new Promise((_resolve, reject) => {
        signal?.addEventListener("abort", () => reject(signal.reason as Error), { once: true });
      });
    },
  };
}

const LIMITS: MediaLimits = { ...defaultMediaLimits, maxOutputPixels: 5_000_000, maxWorkPixels: 6_000_000 };

function realRender(limits: MediaLimits, pixels: PixelWorkers, onStep?: (name: string) => void): RenderFn {
  const deps = { limits, limitInputPixels: 100_000_000, pixels, faces: { detect: async () => [] } };
  return (input, options) =>
    render(input, deps, { ...options, onStep: (name, seconds) => (onStep?.(name), options.onStep?.(name, seconds)) });
}

/** A 2000 x 2000 PNG (4 M pixels), stored uncompressed so that it is large (12 MB). */
let bigPng: Buffer;
beforeAll(async () => {
  bigPng = await sharp({ create: { width: 2000, height: 2000, channels: 3, background: "#3366cc" } })
    .png({ compressionLevel: 0 })
    .toBuffer();
});

describe("work refused before it is done (plan from the original's header)", () => {
  let media: TestMedia | undefined;
  afterEach(async () => {
    jest.restoreAllMocks();
    await media?.close();
    media = undefined;
  });

  async function start(pixels: PixelWorkers = hangingPixels(), steps: string[] = []) {
    const store = new CountingStore();
    media = await startTestMedia({
      store,
      limits: LIMITS,
      render: realRender(LIMITS, pixels, (name) => steps.push(name)),
    });
    const id = "0f8fad5b-d9cb-469f-a165-70867728950e";
    await store.put(originalKey(id), bigPng, "image/png");
    return { store, id };
  }

  it("answers 400 naming MEDIA_MAX_WORK_PIXELS when the steps would process more pixels than the budget; no step runs", async () => {
    const pixels = hangingPixels();
    const steps: string[] = [];
    const { store, id } = await start(pixels, steps);
    const noise = jest.spyOn(transformations["add-noise"], "apply");
    const clahe = jest.spyOn(transformations.clahe, "apply");

    const res = await request(media!.server).get(`/add-noise:amount=5/clahe/${id}.png`);
    expect(res.status).toBe(400);
    expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
    const body = JSON.parse(res.text);
    expect(body.type).toBe("https://media-platform.dev/problems/invalid-media-url");
    expect(body.errors).toEqual([{ path: "path", message: expect.stringContaining("8000000 pixels") }]);
    expect(body.detail).toContain("above the work budget of 6000000 pixels");
    expect(body.detail).toContain("MEDIA_MAX_WORK_PIXELS");
    expect(body.detail).toContain("add-noise 2000x2000 -> 2000x2000, clahe 2000x2000 -> 2000x2000");
    // Nothing ran: no step, no pixel kernel, and only the original's first bytes were read.
    expect(noise).not.toHaveBeenCalled();
    expect(clahe).not.toHaveBeenCalled();
    expect(pixels.calls).toEqual([]);
    expect(steps).toEqual([]);
    expect(store.bytesRead).toBeLessThan(bigPng.length / 4);
    expect(media!.memory.size).toBe(0);
  });

  it("answers 400 naming the step and MEDIA_MAX_OUTPUT_PIXELS when a later step's output is too large; no step runs", async () => {
    const steps: string[] = [];
    const { store, id } = await start(hangingPixels(), steps);
    const crop = jest.spyOn(transformations.crop, "apply");
    const fit = jest.spyOn(transformations.fit, "apply");

    const res = await request(media!.server).get(`/crop:width=100:height=100/fit:width=2500:height=2500/${id}.png`);
    expect(res.status).toBe(400);
    const body = JSON.parse(res.text);
    expect(body.errors).toEqual([
      {
        path: "fit",
        message:
          "the output would be 2500 x 2500 = 6250000 pixels, above the cap of 5000000 (maxOutputPixels, MEDIA_MAX_OUTPUT_PIXELS)",
      },
    ]);
    expect(crop).not.toHaveBeenCalled();
    expect(fit).not.toHaveBeenCalled();
    expect(steps).toEqual([]);
    expect(store.bytesRead).toBeLessThan(bigPng.length / 4);
  });

  it("answers 400 for a crop outside the image before decoding it", async () => {
    const { store, id } = await start();
    const crop = jest.spyOn(transformations.crop, "apply");
    const res = await request(media!.server).get(`/crop:width=10:height=10:x=2000:y=0/${id}.png`);
    expect(res.status).toBe(400);
    expect(JSON.parse(res.text).errors[0].path).toBe("crop.x");
    expect(crop).not.toHaveBeenCalled();
    expect(store.bytesRead).toBeLessThan(bigPng.length / 4);
  });

  it("renders work inside the budget (the same original, one cheap step)", async () => {
    const steps: string[] = [];
    const { store, id } = await start(hangingPixels(), steps);
    const res = await request(media!.server).get(`/thumbnail:size=64/${id}.png`);
    expect(res.status).toBe(200);
    expect((await sharp(res.body as Buffer).metadata()).width).toBe(64);
    expect(steps).toEqual(["thumbnail"]);
    expect(store.bytesRead).toBe(bigPng.length);
  });

  it("stops the render when its only client disconnects: the kernel's signal aborts, nothing is cached", async () => {
    const pixels = hangingPixels();
    const { id } = await start(pixels);
    const client = new AbortController();
    const pending = fetch(`${media!.url}/add-noise:amount=5/${id}.png`, { signal: client.signal }).catch(
      (e: unknown) => e,
    );
    while (pixels.signals.length === 0) await new Promise((r) => setTimeout(r, 10));
    expect(pixels.calls).toEqual(["add-noise"]);
    const kernelSignal = pixels.signals[0]!;
    expect(kernelSignal.aborted).toBe(false);

    client.abort();
    expect(await pending).toMatchObject({ name: "AbortError" });
    while (!kernelSignal.aborted) await new Promise((r) => setTimeout(r, 10));
    expect(kernelSignal.reason).toBeInstanceOf(RequestCancelledError);
    while (media!.limiter.active > 0) await new Promise((r) => setTimeout(r, 10));
    expect(media!.memory.size).toBe(0);
    expect(media!.service.inFlight).toBe(0);
  });
});

describe("SingleFlight cancellation", () => {
  it("keeps the work running while a follower waits, aborts it when the last caller leaves", async () => {
    const flights = new SingleFlight<string>();
    let workSignal: AbortSignal | undefined;
    const work = (signal: AbortSignal) => {
      workSignal = signal;
      return new Promise<string>((_resolve, reject) => signal.addEventListener("abort", () => reject(signal.reason)));
    };
    const a = new AbortController();
    const b = new AbortController();
    const first = flights.run("k", work, departureOf(a.signal));
    const second = flights.run("k", work, departureOf(b.signal));
    expect([first.leader, second.leader]).toEqual([true, false]);
    await Promise.resolve();
    await Promise.resolve();

    a.abort(new RequestCancelledError());
    await expect(first.promise).rejects.toBeInstanceOf(RequestCancelledError);
    expect(workSignal!.aborted).toBe(false);

    b.abort(new RequestCancelledError());
    await expect(second.promise).rejects.toBeInstanceOf(RequestCancelledError);
    expect(workSignal!.aborted).toBe(true);

    // A caller arriving after the flight was given up starts a fresh one.
    const third = flights.run("k", async () => "fresh");
    expect(third.leader).toBe(true);
    await expect(third.promise).resolves.toBe("fresh");
  });

  it("callers without a signal keep the flight alive", async () => {
    const flights = new SingleFlight<number>();
    let release!: (v: number) => void;
    let workSignal: AbortSignal | undefined;
    const a = new AbortController();
    const first = flights.run(
      "k",
      (signal) => {
        workSignal = signal;
        return new Promise<number>((resolve) => (release = resolve));
      },
      departureOf(a.signal),
    );
    const second = flights.run("k", async () => 0);
    a.abort(new RequestCancelledError());
    await expect(first.promise).rejects.toBeInstanceOf(RequestCancelledError);
    await Promise.resolve();
    expect(workSignal!.aborted).toBe(false);
    release(7);
    await expect(second.promise).resolves.toBe(7);
  });
});

describe("WorkGate (MEDIA_MAX_INFLIGHT_PIXELS)", () => {
  it("admits work while it fits, in arrival order, and lets a request larger than the capacity run alone", async () => {
    const gate = new WorkGate(10);
    const order: string[] = [];
    const a = await gate.acquire(6);
    const b = gate.acquire(6).then((release) => (order.push("b"), release));
    const c = gate.acquire(1).then((release) => (order.push("c"), release));
    await Promise.resolve();
    expect(order).toEqual([]); // c fits, but does not overtake b
    expect(gate.inFlight).toBe(6);
    a();
    const releaseB = await b;
    const releaseC = await c;
    expect(order).toEqual(["b", "c"]);
    expect(gate.inFlight).toBe(7);
    const big = gate.acquire(50);
    releaseB();
    releaseC();
    const releaseBig = await big;
    expect(gate.inFlight).toBe(50);
    releaseBig();
    releaseBig();
    expect(gate.inFlight).toBe(0);
  });

  it("drops a waiter whose signal aborts", async () => {
    const gate = new WorkGate(10);
    const held = await gate.acquire(10);
    const controller = new AbortController();
    const waiting = gate.acquire(5, controller.signal);
    controller.abort(new RequestCancelledError());
    await expect(waiting).rejects.toBeInstanceOf(RequestCancelledError);
    held();
    expect(gate.inFlight).toBe(0);
  });
});

describe("pixel worker pool cancellation", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "pixel-cancel-"));
  const kernelModule = path.join(dir, "spin.cjs");
  writeFileSync(kernelModule, "exports.kernels = { spin: () => { for (;;) {} } };\n");
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("terminates the worker running an aborted kernel and keeps serving", async () => {
    const pool = createPixelWorkers({ size: 1, kernelModules: [kernelModule] });
    try {
      const image = { data: Buffer.alloc(12, 100), width: 2, height: 2, channels: 3 as const };
      const controller = new AbortController();
      const spinning = pool.run("spin", image, {}, controller.signal);
      while (pool.stats().busy === 0) await new Promise((r) => setTimeout(r, 10));
      controller.abort(new RequestCancelledError());
      await expect(spinning).rejects.toBeInstanceOf(RequestCancelledError);
      while (pool.stats().replaced === 0) await new Promise((r) => setTimeout(r, 10));
      const next = await pool.run("solarize", { ...image, data: Buffer.alloc(12, 200) }, { threshold: 128 });
      expect([...next.data]).toEqual(new Array(12).fill(55));
    } finally {
      await pool.close();
    }
  });
});

describe("MEDIA_MAX_WORK_PIXELS / MEDIA_MAX_INFLIGHT_PIXELS settings", () => {
  it("are read into the limits and the server options, and a bad value names the variable", () => {
    const config = loadMediaConfig({ MEDIA_MAX_WORK_PIXELS: "1234567", MEDIA_MAX_INFLIGHT_PIXELS: "7654321" });
    expect(config.limits.maxWorkPixels).toBe(1_234_567);
    expect(config.inflightPixels).toBe(7_654_321);
    expect(loadMediaConfig({}).limits.maxWorkPixels).toBe(defaultMediaLimits.maxWorkPixels);
    expect(() => loadMediaConfig({ MEDIA_MAX_WORK_PIXELS: "lots" })).toThrow(MediaConfigError);
    expect(() => loadMediaConfig({ MEDIA_MAX_WORK_PIXELS: "0" })).toThrow(/MEDIA_MAX_WORK_PIXELS/);
  });
});
