/**
 * Entry of a render process (pipeline/killable-render.ts): its first message is its settings;
 * then it runs pipeline/render.ts on the bytes
 * the service sends over IPC, with its own pixel workers and face detector, and answers with the
 * encoded result or the error. The service kills this process at a render's deadline, which is
 * the one way to stop libvips inside an encoder. Exits when the service goes away.
 */
import { createFaceDetector } from "../../faces";
import { createPixelWorkers } from "../pixels/pool";
import { configureSharp, render, type RenderInput } from "./render";
import type { RenderProcessReply, RenderProcessRequest, RenderProcessSettings } from "./render-process-protocol";

/** Starts rendering with the settings the service sends first. */
function start(settings: RenderProcessSettings): void {
  configureSharp({ concurrency: settings.vipsConcurrency });
  const pixels = createPixelWorkers({ size: settings.pixelWorkers, taskTimeoutMs: settings.requestTimeoutMs });
  const faces = createFaceDetector();
  const deps = {
    pixels,
    faces,
    limits: settings.limits,
    limitInputPixels: settings.limitInputPixels,
    avifEffort: settings.avifEffort,
    maxAnimationFrames: settings.maxAnimationFrames,
  };
  const reply = (message: RenderProcessReply) => process.send!(message);
  process.on("message", (message: RenderProcessRequest) => {
    const original = Buffer.from(message.original.buffer, message.original.byteOffset, message.original.byteLength);
    const input: RenderInput = { ...message.input, original };
    render(input, deps, {
      deadline: message.deadline,
      onStep: (transformation, seconds) => reply({ id: message.id, step: { transformation, seconds } }),
      onStage: message.stages ? (stage) => reply({ id: message.id, stage }) : undefined,
    }).then(
      (rendition) => reply({ id: message.id, rendition }),
      (err: unknown) => {
        const error = err instanceof Error ? err : new Error(String(err));
        reply({ id: message.id, error: { ...error, name: error.name, message: error.message } });
      },
    );
  });
  reply({ ready: true });
}

// The service went away (or closed the channel): nothing is left to render for.
process.on("disconnect", () => process.exit(0));
process.once("message", (message: { settings: RenderProcessSettings }) => start(message.settings));
