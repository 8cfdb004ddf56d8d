import { readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import sharp from "sharp";
import { FilesystemBlobStore } from "@media-platform/storage";
import { startMediaProcess, stopServiceProcess, storeOriginal, type ServiceProcess } from "./support/service-process";

/** CPU ticks (user + system) of a process, from /proc/<pid>/stat; 0 once it is gone. */
function cpuTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

/** The process and every process below it (render processes, their workers). */
function processTree(root: number): number[] {
  const parents = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry)]);
    } catch {
      // Exited while listed.
    }
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i++) tree.push(...(parents.get(tree[i]!) ?? []));
  return tree;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const run = process.platform === "linux" ? describe : describe.skip;

run("a render stops at its deadline, inside the encoder too (media service process)", () => {
  let dataDir: string;
  let media: ServiceProcess | undefined;
  let id: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), "media-deadline-"));
    const store = new FilesystemBlobStore(path.join(dataDir, "blobs"));
    // Noise: AVIF's encoder gets through a flat colour quickly even at effort 9 (about 20 s for
    // 12 MP on a fast machine), but not through texture.
    const jpeg = await sharp({
      create: {
        width: 1600,
        height: 1200,
        channels: 3,
        background: "#808080",
        noise: { type: "gaussian", mean: 128, sigma: 60 },
      },
    })
      .jpeg()
      .toBuffer();
    id = await storeOriginal(store, jpeg, "image/jpeg");
    media = await startMediaProcess(dataDir, {
      // Room for a render process to start and render at its lower priority on a loaded machine
      // (a CI run's other test files take both cores), still far below the heavy render's minutes.
      MEDIA_REQUEST_TIMEOUT_MS: "30000",
      // Every render from 100 estimated ms runs in the (single) render process.
      MEDIA_ISOLATED_RENDER_COST: "100",
      MEDIA_RENDER_PROCESSES: "1",
      MEDIA_AVIF_EFFORT: "9",
      MEDIA_MAX_WORK_COST: "10000000",
    });
  }, 120_000);

  afterAll(async () => {
    await stopServiceProcess(media);
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it("answers 503 + Retry-After at the deadline and the CPU of the service stops", async () => {
    const pid = media!.child.pid!;
    // A cheap render stays in the service process; a costlier one runs in the render process
    // (and starts it, outside the deadline measured below).
    const small = await fetch(`${media!.url}/crop:width=16:height=16/${id}.jpg`);
    expect(small.status).toBe(200);
    expect((await sharp(Buffer.from(await small.arrayBuffer())).metadata()).width).toBe(16);
    const isolated = await fetch(`${media!.url}/fit:width=1200:height=900/saturation:value=1.5/${id}.jpg`);
    expect(isolated.status).toBe(200);
    expect(await sharp(Buffer.from(await isolated.arrayBuffer())).metadata()).toMatchObject({
      width: 1200,
      height: 900,
    });
    const renderProcesses = processTree(pid).slice(1);
    expect(renderProcesses.length).toBeGreaterThan(0);

    // 12 MP of texture at AVIF effort 9: minutes of encoder work, far past the 30 s deadline.
    const heavy = await fetch(`${media!.url}/fit:width=4000:height=4000/format:type=avif/${id}.jpg`);
    expect(heavy.status).toBe(503);
    expect(heavy.headers.get("retry-after")).toBe("2");
    expect(await heavy.json()).toMatchObject({ type: "https://media-platform.dev/problems/timeout", status: 503 });

    // The encoder stops: the render process that ran it is killed (its exit, with a large heap to
    // unmap, may take a moment to be reaped), or, when the deadline came before the render reached
    // it, it never started there. Either way no process of the service keeps burning CPU, even a
    // render process at its lower priority on a loaded machine (one still encoding gains ticks
    // every second).
    const ticks = () => [cpuTicks(pid), ...renderProcesses.map(cpuTicks)];
    const busy = (from: number[], to: number[]) => to.slice(1).some((t, i) => t > from[i + 1]! + 1);
    for (let waited = 0; waited < 5000; waited += 300) {
      const from = ticks();
      await sleep(300);
      if (!busy(from, ticks())) break;
    }
    const before = ticks();
    await sleep(1000);
    const after = ticks();
    expect(busy(before, after)).toBe(false);
    // An encoder still running in the service itself would add about 100 ticks (one core) per second.
    expect(after[0]! - before[0]!).toBeLessThan(25);

    // The service renders on: a new render process takes the next costly render.
    const next = await fetch(`${media!.url}/fit:width=1200:height=900/saturation:value=1.2/${id}.jpg`);
    expect({ status: next.status, body: next.status === 200 ? "" : await next.text() }).toEqual({
      status: 200,
      body: "",
    });
  }, 120_000);
});
