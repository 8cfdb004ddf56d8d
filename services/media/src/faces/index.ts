import path from "node:path";
import { Worker } from "node:worker_threads";
import { DomainError } from "@media-platform/contracts";
import type { RawImage } from "../render/types";
import type { FaceBox, FaceDetector } from "../render/types";

export interface FaceDetectorOptions {
  /**
   * Side of the square the tiny face detector resizes its input to (a multiple of 32).
   * 416 found the astronaut fixture's face at score 0.98.
   */
  inputSize?: number;
  /** Detections below this confidence are dropped. */
  minScore?: number;
}

export interface ManagedFaceDetector extends FaceDetector {
  /** Starts the worker and loads the model now instead of on the first detection. */
  ready(): Promise<void>;
  /** Terminates the worker; a later detect() starts a new one. */
  close(): Promise<void>;
}

interface Pending {
  resolve(faces: FaceBox[]): void;
  reject(error: Error): void;
}

type WorkerReply =
  { ready: true } | { ready: false; error: string } | { id: number; faces: FaceBox[] } | { id: number; error: string };

/** The detector failed (worker crash, model load): transient, and nothing was cached. */
export class FaceDetectionError extends DomainError<"face-detection-unavailable"> {
  readonly code = "face-detection-unavailable";

  constructor(
    /** What failed, for the logs; the answer only says the detector is unavailable. */
    readonly reason: string,
  ) {
    super("Face detection is unavailable; retry shortly");
    this.name = "FaceDetectionError";
  }
}

// A .cjs file: worker threads do not inherit jest's or tsx's TypeScript hooks.
const WORKER_FILE = path.join(__dirname, "face-worker.cjs");

/**
 * Face detection with face-api's tiny face detector (weights shipped in the npm package,
 * tfjs wasm backend loaded from node_modules) in one worker thread, so inference never
 * blocks the event loop. The worker and model load lazily on first use and stay cached;
 * the worker is unref'd while idle so it never keeps the process alive on its own.
 */
export function createFaceDetector(options: FaceDetectorOptions = {}): ManagedFaceDetector {
  const workerData = { inputSize: options.inputSize ?? 416, minScore: options.minScore ?? 0.5 };
  let worker: Worker | undefined;
  let loaded: Promise<void> | undefined;
  let nextId = 0;
  const pending = new Map<number, Pending>();

  const failAll = (error: Error) => {
    for (const p of pending.values()) p.reject(error);
    pending.clear();
  };

  const start = (): Worker => {
    if (worker) return worker;
    const w = new Worker(WORKER_FILE, { workerData });
    w.unref();
    worker = w;
    loaded = new Promise<void>((resolve, reject) => {
      w.on("message", (reply: WorkerReply) => {
        if ("ready" in reply) {
          if (reply.ready) resolve();
          else reject(new FaceDetectionError(`face model failed to load: ${reply.error}`));
          return;
        }
        const p = pending.get(reply.id);
        if (!p) return;
        pending.delete(reply.id);
        if (pending.size === 0) w.unref();
        if ("faces" in reply) p.resolve(reply.faces);
        else p.reject(new FaceDetectionError(`face detection failed: ${reply.error}`));
      });
      const lost = (error: Error) => {
        // The next detect() starts a fresh worker.
        if (worker === w) {
          worker = undefined;
          loaded = undefined;
        }
        reject(error);
        failAll(error);
      };
      w.on("error", (error) => lost(new FaceDetectionError(`face worker crashed: ${error.message}`)));
      w.on("exit", (code) => lost(new FaceDetectionError(`face worker exited with code ${code}`)));
    });
    // Callers of ready() see the rejection; a detect() in flight sees it through failAll.
    loaded.catch(() => undefined);
    return w;
  };

  return {
    async ready() {
      const w = start();
      // Keep the process alive while the model loads, then go back to idle.
      w.ref();
      try {
        await loaded;
      } finally {
        if (pending.size === 0) w.unref();
      }
    },

    detect(image: RawImage): Promise<FaceBox[]> {
      const w = start();
      const id = nextId++;
      // A private copy the worker can own (the caller's Buffer may share a pooled slab).
      const pixels = new Uint8Array(image.data.byteLength);
      pixels.set(image.data);
      return new Promise<FaceBox[]>((resolve, reject) => {
        pending.set(id, { resolve, reject });
        w.ref();
        w.postMessage(
          { id, width: image.width, height: image.height, channels: image.channels, pixels: pixels.buffer },
          [pixels.buffer],
        );
      });
    },

    async close() {
      const w = worker;
      worker = undefined;
      loaded = undefined;
      if (!w) return;
      failAll(new FaceDetectionError("face detector closed"));
      await w.terminate();
    },
  };
}
