"use strict";
// A stand-in for assets/format-worker.cjs in format-workers.test.ts: it speaks the same protocol
// (`{id, started}` once the task's decoder is loaded, then `{id, output}`) with a load that takes
// `input.loadMs` (never ending when -1) and a task that takes `input.workMs`.
const { parentPort } = require("node:worker_threads");

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

parentPort.on("message", async ({ id, input }) => {
  if (input.loadMs < 0) return;
  await sleep(input.loadMs);
  parentPort.postMessage({ id, started: true });
  await sleep(input.workMs);
  parentPort.postMessage({ id, output: { done: input.workMs } });
});
