import { readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import sharp from "sharp";
import { FilesystemBlobStore } from "@media-platform/storage";
import {
  REPO_ROOT,
  startMediaProcess,
  stopServiceProcess,
  storeOriginal,
  type ServiceProcess,
} from "./support/service-process";

const CORPUS = path.resolve(REPO_ROOT, "..", "shared", "fixtures", "corpus", "sharp");
const PHOTOS = ["Landscape_1.jpg", "Landscape_3.jpg", "Landscape_5.jpg", "2569067123_aca715a2ee_o.jpg"];
/** The test's work budget: the heavy URL below is just under it (about 1.6 s of estimated CPU). */
const MAX_WORK_COST = 2000;

/** Render processes below the service (pixel workers and the face detector are threads, not processes). */
function childProcesses(pid: number): number[] {
  return readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
        return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid;
      } catch {
        return false;
      }
    })
    .map(Number);
}

const run = process.platform === "linux" ? describe : describe.skip;

run("small thumbnails under heavy load from other clients (media service process)", () => {
  let dataDir: string;
  let media: ServiceProcess | undefined;
  const ids: string[] = [];
  /** A 2.5 MP photo-like JPEG: a `fit` of it is a heavy render (about 70 ms estimated). */
  let burstId: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), "media-heavy-load-"));
    const store = new FilesystemBlobStore(path.join(dataDir, "blobs"));
    for (const photo of PHOTOS) {
      const bytes = readFileSync(path.join(CORPUS, photo));
      ids.push(await storeOriginal(store, bytes, "image/jpeg"));
    }
    const noise = await sharp({
      create: {
        width: 1920,
        height: 1300,
        channels: 3,
        background: "#808080",
        noise: { type: "gaussian", mean: 128, sigma: 40 },
      },
    })
      .jpeg({ quality: 85 })
      .toBuffer();
    burstId = await storeOriginal(store, noise, "image/jpeg");
    media = await startMediaProcess(dataDir, {
      // The clients below are told apart by X-Forwarded-For, as behind a proxy on loopback.
      MEDIA_TRUSTED_PROXIES: "loopback",
      MEDIA_MAX_WORK_COST: String(MAX_WORK_COST),
    });
  }, 120_000);

  afterAll(async () => {
    await stopServiceProcess(media);
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it("queues a burst of heavy MISSes from one client and answers every one 200, none refused", async () => {
    // 24 at once: three times the slots (4 per core) and six times the heavy renders allowed to
    // run at once; the ones beyond wait in the queue (MEDIA_QUEUE_LIMIT 64), as a CDN's burst of
    // new URLs must.
    const widths = Array.from({ length: 24 }, (_, i) => 900 + i);
    const answers = await Promise.all(
      widths.map(async (width) => {
        const res = await fetch(`${media!.url}/fit:width=${width}:height=${width}/${burstId}.jpg`);
        const body = Buffer.from(await res.arrayBuffer());
        const meta = res.status === 200 ? await sharp(body).metadata() : undefined;
        return { status: res.status, cache: res.headers.get("x-cache"), width: meta?.width };
      }),
    );
    expect(answers).toEqual(widths.map((width) => ({ status: 200, cache: "MISS", width })));
  }, 120_000);

  it("answers every cold thumbnail correctly and without a 5xx while 3 clients send the heaviest admitted URLs", async () => {
    const base = media!.url;
    // Over the budget: refused before decoding, so the heavy URL below is the heaviest kind admitted.
    const refused = await fetch(
      `${base}/fit:width=2400:height=2400/add-noise:amount=50/format:type=avif/${ids[0]}.jpg`,
    );
    expect(refused.status).toBe(400);
    const heavyUrl = (client: number, n: number) =>
      `${base}/fit:width=1800:height=1800/add-noise:amount=${10 + client * 20 + (n % 20)}/format:type=avif/${ids[n % ids.length]}.jpg`;

    const stop = new AbortController();
    const heavyStatuses: number[] = [];
    const heavyProblems: string[] = [];
    const heavyClient = async (client: number) => {
      for (let n = 0; !stop.signal.aborted; n++) {
        try {
          const res = await fetch(heavyUrl(client, n), {
            headers: { "X-Forwarded-For": `198.51.100.${client + 1}` },
            signal: stop.signal,
          });
          heavyStatuses.push(res.status);
          if (res.status >= 400) {
            const retryAfter = res.headers.get("retry-after");
            heavyProblems.push(`${res.status} ${retryAfter === null ? "without" : "with"} Retry-After`);
            await res.arrayBuffer();
            // A refused client waits as told before asking again.
            if (retryAfter !== null) await new Promise((resolve) => setTimeout(resolve, Number(retryAfter) * 1000));
          } else {
            await res.arrayBuffer();
          }
        } catch (err) {
          if (!stop.signal.aborted) throw err;
        }
      }
    };
    // Two connections per heavy client, three clients.
    const heavy = [0, 1, 2].flatMap((client) => [heavyClient(client), heavyClient(client)]);

    try {
      // Let the heavy load start before the first thumbnail.
      while (childProcesses(media!.child.pid!).length === 0 && heavyStatuses.length === 0)
        await new Promise((resolve) => setTimeout(resolve, 50));
      const thumbnails: Array<{ status: number; type: string | null; width?: number; height?: number }> = [];
      for (let i = 0; i < 12; i++) {
        // A size never asked before: every thumbnail is a MISS of a cache-cold URL.
        const size = 60 + i;
        const res = await fetch(`${base}/thumbnail:size=${size}/${ids[i % ids.length]}.jpg`, {
          headers: { "X-Forwarded-For": "203.0.113.9" },
        });
        const body = Buffer.from(await res.arrayBuffer());
        const meta: { width?: number; height?: number } = res.status === 200 ? await sharp(body).metadata() : {};
        thumbnails.push({
          status: res.status,
          type: res.headers.get("x-cache"),
          width: meta.width,
          height: meta.height,
        });
        expect(thumbnails.at(-1)).toEqual({ status: 200, type: "MISS", width: size, height: size });
      }
      // The heavy work really ran in the meantime (a render process was busy with it).
      expect(childProcesses(media!.child.pid!).length).toBeGreaterThan(0);
    } finally {
      stop.abort();
      await Promise.all(heavy);
    }
    // The heavy clients got answers or a refusal with Retry-After, never an error without one.
    expect(heavyStatuses.every((status) => [200, 429, 503].includes(status))).toBe(true);
    expect(heavyProblems.filter((p) => p.endsWith("without Retry-After"))).toEqual([]);
  }, 300_000);
});
