/**
 * The upload queue's rules, with a scripted transport and clock: never more in flight than the
 * server's limit, a 503's Retry-After honoured by the whole queue, a dropped connection retried,
 * every file ending stored or refused with a reason a person can act on.
 */
import { describeUploadFailure } from "../src/upload/problems";
import { summarize, UploadQueue, type TransportJob, type TransportResult, type UploadItem } from "../src/upload/queue";

/** A clock and timers the test moves by hand. */
function fakeTime() {
  let now = 0;
  const timers: { at: number; fn: () => void }[] = [];
  return {
    now: () => now,
    setTimer: (fn: () => void, ms: number) => timers.push({ at: now + ms, fn }),
    advance(ms: number) {
      now += ms;
      for (const t of timers.filter((x) => x.at <= now)) {
        timers.splice(timers.indexOf(t), 1);
        t.fn();
      }
    },
  };
}

const file = (name: string, size = 10) => new File([new Uint8Array(size)], name);
const flush = () => new Promise((r) => setImmediate(r));

/** A server with `limit` slots per workspace that answers each upload when told to. */
function scriptedServer(limit: number) {
  const inFlight: { job: TransportJob; resolve: (r: TransportResult) => void }[] = [];
  let peak = 0;
  let sent = 0;
  return {
    transport: (job: TransportJob) =>
      new Promise<TransportResult>((resolve) => {
        sent++;
        if (inFlight.length >= limit) {
          resolve({ status: 503, body: { type: "service-unavailable" }, retryAfterSeconds: 2 });
          return;
        }
        inFlight.push({ job, resolve });
        peak = Math.max(peak, inFlight.length);
      }),
    /** Answers every upload in flight: 201 for images, 415 for the rest. */
    answerAll() {
      for (const { job, resolve } of inFlight.splice(0)) {
        job.onProgress(job.file.size);
        resolve(
          job.file.name.endsWith(".png")
            ? { status: 201, body: { id: job.file.name } }
            : { status: 415, body: { type: "https://media-platform.dev/problems/unsupported-media-type" } },
        );
      }
    },
    get peak() {
      return peak;
    },
    get sent() {
      return sent;
    },
    get inFlight() {
      return inFlight.length;
    },
  };
}

function queueOn(server: { transport: (job: TransportJob) => Promise<TransportResult> }, time = fakeTime()) {
  let items: readonly UploadItem[] = [];
  const queue = new UploadQueue({
    transport: server.transport,
    concurrency: 4,
    maxBytes: 100,
    accept: (body) => body,
    onChange: (next) => (items = next),
    now: time.now,
    setTimer: time.setTimer,
  });
  return { queue, items: () => items, time };
}

it("sends 50 files at most four at a time, and every one ends stored or refused", async () => {
  const server = scriptedServer(4);
  const { queue, items } = queueOn(server);
  queue.add([...Array.from({ length: 48 }, (_, i) => file(`p${i}.png`)), file("notes.txt"), file("big.png", 101)], "");
  expect(summarize(items())).toMatchObject({ total: 50, uploading: 4, queued: 45, refused: 1 });
  for (let round = 0; round < 20 && server.inFlight > 0; round++) {
    server.answerAll();
    await flush();
  }
  expect(server.peak).toBe(4);
  expect(server.sent).toBe(49); // the oversized file never left
  expect(summarize(items())).toMatchObject({ total: 50, done: 48, refused: 2 });
  const refused = items().filter((i) => i.state === "refused");
  expect(refused.map((i) => [i.name, i.failure?.title])).toEqual([
    ["notes.txt", "Format not supported: TXT"],
    ["big.png", "File too large: 101 B"],
  ]);
  queue.clearFinished();
  expect(items()).toEqual([]);
});

it("waits the server's Retry-After on a 503, the whole queue with it, then sends again", async () => {
  // Two slots of the workspace's four are taken elsewhere.
  const server = scriptedServer(2);
  const { queue, items, time } = queueOn(server);
  queue.add(
    Array.from({ length: 6 }, (_, i) => file(`p${i}.png`)),
    "",
  );
  await flush();
  expect(server.sent).toBe(4);
  expect(
    items()
      .filter((i) => i.retryAt === 2000)
      .map((i) => i.name),
  ).toEqual(["p2.png", "p3.png"]);
  server.answerAll();
  await flush();
  // Two slots are free now, but the server asked for 2 s: nothing goes before.
  expect(server.sent).toBe(4);
  time.advance(2000);
  await flush();
  // Four go again (the queue's size); the server's two slots take two, the others wait again.
  expect(server.sent).toBe(8);
  expect(summarize(items())).toMatchObject({ done: 2, uploading: 2, queued: 2 });
  for (let round = 0; round < 10 && server.inFlight > 0; round++) {
    server.answerAll();
    await flush();
    time.advance(2000);
    await flush();
  }
  expect(summarize(items())).toMatchObject({ done: 6, refused: 0 });
});

it("retries a dropped connection, then offers “Try again”", async () => {
  let calls = 0;
  const { queue, items, time } = queueOn({
    transport: async () => {
      calls++;
      return { status: 0, body: null };
    },
  });
  queue.add([file("p.png")], "");
  for (let i = 0; i < 5; i++) {
    await flush();
    time.advance(10_000);
  }
  await flush();
  expect(calls).toBe(3);
  const [item] = items();
  expect([item!.state, item!.failure?.title, item!.failure?.retryable]).toEqual(["refused", "Connection lost", true]);
  queue.retry(item!.key);
  await flush();
  expect(calls).toBe(4);
});

it("pauses a travelling file (its transport aborted, no failure) and resumes it, without using a retry", async () => {
  const jobs: TransportJob[] = [];
  const { queue, items } = queueOn({
    transport: (job) =>
      new Promise((resolve) => {
        jobs.push(job);
        job.signal.addEventListener("abort", () => resolve({ status: 0, body: null }));
        if (jobs.length === 2) {
          job.onProgress(job.file.size);
          resolve({ status: 201, body: { id: job.file.name } });
        }
      }),
  });
  queue.add([file("p.png", 100), file("q.png", 100)], "");
  jobs[0]!.onProgress(40);
  queue.pause(items()[0]!.key);
  await flush();
  expect(items().map((i) => i.state)).toEqual(["paused", "done"]);
  expect(summarize(items())).toMatchObject({ paused: 1, done: 1 });
  queue.resume(items()[0]!.key);
  await flush();
  expect(jobs.length).toBe(3);
  expect([items()[0]!.state, items()[0]!.attempts]).toEqual(["uploading", 1]);
});

it("reports progress in bytes, then processing once every byte is sent", async () => {
  let job: TransportJob | undefined;
  const { queue, items } = queueOn({ transport: (j) => new Promise(() => (job = j)) });
  queue.add([file("p.png", 100)], "");
  job!.onProgress(40);
  expect([items()[0]!.state, items()[0]!.sent]).toEqual(["uploading", 40]);
  job!.onProgress(100);
  expect([items()[0]!.state, items()[0]!.sent]).toEqual(["processing", 100]);
});

it.each([
  ["unsupported-media-type", 415, "IMG_0001.HEIC", "Format not supported: HEIC"],
  ["metadata-removal-failed", 422, "beach.jpg", "Could not remove location data"],
  ["undecodable-image", 422, "broken.jpg", "Image is damaged or incomplete"],
  ["image-too-large", 422, "panorama.tif", "Image has too many pixels"],
  ["payload-too-large", 413, "scan.tif", "File too large: 60 MB"],
  ["request-timeout", 408, "p.png", "The upload stalled"],
  ["validation-error", 400, "p.png", "The file was refused"],
])("titles a %s problem by what happened, and says what to do", (slug, status, name, title) => {
  const failure = describeUploadFailure(
    { status, body: { type: `https://media-platform.dev/problems/${slug}`, detail: "server words" } },
    { name, size: 60 * 1024 * 1024, maxBytes: 50 * 1024 * 1024 },
  );
  expect(failure.title).toBe(title);
  expect(failure.action).toMatch(/\.$/);
  expect(failure.action.length).toBeGreaterThan(20);
});
