"use strict";
// Entry of a pixel worker thread. Worker threads get neither jest's transform nor the tsx
// loader of the parent, so this plain CommonJS file registers tsx's require hook before
// loading the TypeScript kernels (or loads compiled kernels when a build put them here).
const { parentPort, workerData } = require("node:worker_threads");
const fs = require("node:fs");
const path = require("node:path");

const compiled = path.join(__dirname, "kernels", "index.js");
const hasCompiled = fs.existsSync(compiled);
const extra = (workerData && workerData.kernelModules) || [];
if (!hasCompiled || extra.some((m) => /\.[cm]?tsx?$/.test(m))) require("tsx/cjs/api").register();

const kernels = Object.assign({}, require(hasCompiled ? compiled : "./kernels/index.ts").kernels);
for (const modulePath of extra) Object.assign(kernels, require(modulePath).kernels);

/** A view covering its whole ArrayBuffer can be transferred; anything else is copied first. */
function ownBuffer(data) {
  if (data.byteOffset === 0 && data.byteLength === data.buffer.byteLength) return data;
  const copy = new Uint8Array(data.byteLength);
  copy.set(data);
  return copy;
}

parentPort.postMessage({ ready: true });

parentPort.on("message", (task) => {
  try {
    const kernel = Object.prototype.hasOwnProperty.call(kernels, task.kernel) ? kernels[task.kernel] : undefined;
    if (!kernel) throw new Error(`unknown pixel kernel "${task.kernel}"`);
    const input = task.image;
    const image = {
      data: Buffer.from(input.data.buffer, input.data.byteOffset, input.data.byteLength),
      width: input.width,
      height: input.height,
      channels: input.channels,
    };
    const result = kernel(image, task.params);
    const data = ownBuffer(result.data);
    parentPort.postMessage(
      { id: task.id, ok: true, image: { data, width: result.width, height: result.height, channels: result.channels } },
      [data.buffer],
    );
  } catch (error) {
    const e = error instanceof Error ? error : new Error(String(error));
    parentPort.postMessage({ id: task.id, ok: false, error: { name: e.name, message: e.message, stack: e.stack } });
  }
});
