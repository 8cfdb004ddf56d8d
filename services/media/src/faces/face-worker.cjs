"use strict";
// Face detection worker: plain CommonJS on purpose, because worker threads do not get the
// TypeScript transform jest or tsx install in the main thread.
//
// Protocol: the parent posts { id, width, height, channels, pixels: ArrayBuffer } (8-bit,
// row-major, 3 or 4 channels) and receives { id, faces: [{ x, y, width, height, score }] }
// or { id, error }. The model loads once, when the worker starts.
const path = require("node:path");
const { parentPort, workerData } = require("node:worker_threads");

const faceapi = require("@vladmandic/face-api/dist/face-api.node-wasm.js");
const tf = faceapi.tf;

// Everything comes from node_modules: the .wasm binaries of the tfjs wasm backend and the
// tiny face detector weights shipped in face-api's model/ folder. Nothing is fetched.
const wasmDir =
  path.join(path.dirname(require.resolve("@tensorflow/tfjs-backend-wasm/package.json")), "dist") + path.sep;
const modelDir = path.join(path.dirname(require.resolve("@vladmandic/face-api/package.json")), "model");

const options = new faceapi.TinyFaceDetectorOptions({
  inputSize: workerData.inputSize,
  scoreThreshold: workerData.minScore,
});

async function load() {
  // Without the second argument (usePlatformFetch) emscripten reads the file from disk;
  // with it, Node's fetch would be asked for a filesystem path and fail.
  tf.setWasmPaths(wasmDir);
  await tf.setBackend("wasm");
  await tf.ready();
  await faceapi.nets.tinyFaceDetector.loadFromDisk(modelDir);
}

const loaded = load();
// One detection at a time: the wasm backend is single-threaded anyway.
let queue = loaded;

async function detect(message) {
  const { width, height, channels } = message;
  const pixels = new Uint8Array(message.pixels);
  const faces = tf.tidy(() => tf.tensor3d(pixels, [height, width, channels], "int32"));
  const rgb = channels === 3 ? faces : tf.tidy(() => faces.slice([0, 0, 0], [height, width, 3]));
  try {
    const found = await faceapi.detectAllFaces(rgb, options);
    return found.map((d) => ({ x: d.box.x, y: d.box.y, width: d.box.width, height: d.box.height, score: d.score }));
  } finally {
    tf.dispose(rgb === faces ? [faces] : [faces, rgb]);
  }
}

parentPort.on("message", (message) => {
  queue = queue
    .then(() => detect(message))
    .then(
      (faces) => parentPort.postMessage({ id: message.id, faces }),
      (error) => parentPort.postMessage({ id: message.id, error: String((error && error.message) || error) }),
    );
});

loaded.then(
  () => parentPort.postMessage({ ready: true }),
  (error) => parentPort.postMessage({ ready: false, error: String((error && error.message) || error) }),
);
