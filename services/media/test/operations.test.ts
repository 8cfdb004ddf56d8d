import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import sharp from "sharp";
import { createLogger } from "@media-platform/observability";
import { FilesystemBlobStore, originalKey } from "@media-platform/storage";
import { ROUTE_MEDIA } from "../src/app";
import { signedMediaUrl } from "../src/delivery/signing";
import { gatedRender, startTestMedia, type TestMedia } from "./support/media-server";
import { MemoryBlobStore } from "./support/memory-store";
import { closedPortUrl, redisAvailable, TEST_REDIS_URL, uniqueRedisPrefix } from "./support/redis";
import { freePort } from "../../../test/support/net";

/**
 * Operations of the media service (issue 4): Prometheus /metrics, X-Request-Id on both paths
 * (hot path and Express) and in the MISS path's logs, /healthz + /readyz, and graceful shutdown
 * of the real process during a slow transformation.
 */

const ROOT = path.resolve(__dirname, "..", "..", "..");
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;

interface LogLine {
  level: string;
  msg: string;
  requestId?: string;
  [key: string]: unknown;
}

/** A shared JSON logger (debug level) whose lines the test can read. */
function capturingLogger() {
  const lines: LogLine[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split("\n").filter(Boolean)) lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  return { logger: createLogger({ service: "media", level: "debug", destination }), lines };
}

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the Prometheus text exposition format (enough of it for these assertions). */
function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`unparsable metrics line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

/** Sum of the samples named `name` whose labels include `labels`; undefined when there is none. */
function sampleValue(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const matching = samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  return matching.length ? matching.reduce((sum, s) => sum + s.value, 0) : undefined;
}

async function scrape(media: TestMedia): Promise<{ text: string; samples: Sample[] }> {
  const res = await fetch(`${media.url}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  expect(res.headers.get("cache-control")).toBe("no-store");
  const text = await res.text();
  return { text, samples: parseMetrics(text) };
}

describe("operations: /metrics, request ids, logs", () => {
  let media: TestMedia;
  let lines: LogLine[];
  let id: string;

  beforeAll(async () => {
    const captured = capturingLogger();
    lines = captured.lines;
    media = await startTestMedia({ logger: captured.logger });
    id = await media.store.putFixture("astronaut.png");
  });
  afterAll(() => media.close());

  it("after a MISS and a HIT, /metrics has cache lookups, per-step durations and the hot-path route, no asset ids", async () => {
    const url = `${media.url}/crop:width=300:height=300:x=10:y=10/thumbnail:size=64/${id}.png`;
    const miss = await fetch(url);
    expect([miss.status, miss.headers.get("x-cache")]).toEqual([200, "MISS"]);
    await miss.arrayBuffer();
    const hit = await fetch(url);
    expect([hit.status, hit.headers.get("x-cache")]).toEqual([200, "HIT"]);
    await hit.arrayBuffer();

    const { text, samples } = await scrape(media);
    // Cache lookups by tier and result, once per request: the MISS looked up the memory tier
    // (miss; its declined hot-path lookup is not counted), the HIT was answered by the hot path
    // (memory hit; counted there only). No Redis configured: its series stay at zero.
    const lookups = (tier: string, result: string) =>
      sampleValue(samples, "media_cache_lookups_total", { tier, result });
    expect(lookups("memory", "hit")).toBe(1);
    expect(lookups("memory", "miss")).toBe(1);
    expect(lookups("redis", "hit")).toBe(0);
    expect(lookups("redis", "miss")).toBe(0);

    // One duration sample per step, labelled with the transformation name.
    for (const transformation of ["crop", "thumbnail"]) {
      expect(sampleValue(samples, "media_transformation_duration_seconds_count", { transformation })).toBe(1);
      expect(sampleValue(samples, "media_transformation_duration_seconds_sum", { transformation })).toBeGreaterThan(0);
    }

    // HTTP latency by route and status: the hit under the hot-path label, the miss under the
    // media route pattern.
    const http = (route: string, status: string) =>
      sampleValue(samples, "http_request_duration_seconds_count", { route, method: "GET", status_code: status });
    expect(http("hot_path", "200")).toBeGreaterThanOrEqual(1);
    expect(http(ROUTE_MEDIA, "200")).toBeGreaterThanOrEqual(1);
    expect(
      sampleValue(samples, "http_request_duration_seconds_bucket", {
        route: "hot_path",
        status_code: "200",
        le: "+Inf",
      }),
    ).toBeGreaterThanOrEqual(1);

    // The rest of the media metrics exist from the start.
    expect(sampleValue(samples, "media_singleflight_joins_total")).toBe(0);
    expect(sampleValue(samples, "media_transform_queue_depth")).toBe(0);
    expect(sampleValue(samples, "media_transform_queue_rejections_total")).toBe(0);
    expect(sampleValue(samples, "dependency_errors_total", { dependency: "storage" })).toBe(0);
    expect(sampleValue(samples, "media_misses_total")).toBe(1);
    expect(sampleValue(samples, "media_transformations_total")).toBe(1);

    // Every series carries the service label; no label value holds a raw URL or an asset id.
    for (const s of samples) {
      expect(s.labels.service).toBe("media");
      for (const value of Object.values(s.labels)) {
        expect(value).not.toMatch(UUID);
        expect(value).not.toContain(".png");
      }
    }
    expect(text).not.toContain(id);
  });

  it("echoes X-Request-Id on the hot path and the Express path, and generates one when absent or malformed", async () => {
    const path = `/thumbnail:size=58/${id}.png`;
    const miss = await fetch(`${media.url}${path}`, { headers: { "X-Request-Id": "ops-miss-1" } });
    expect(miss.headers.get("x-cache")).toBe("MISS");
    expect(miss.headers.get("x-request-id")).toBe("ops-miss-1");

    const hit = await fetch(`${media.url}${path}`, { headers: { "X-Request-Id": "ops-hit-1" } });
    expect(hit.headers.get("x-cache")).toBe("HIT");
    expect(hit.headers.get("x-request-id")).toBe("ops-hit-1");
    // 304 from the hot path too.
    const notModified = await fetch(`${media.url}${path}`, {
      headers: { "X-Request-Id": "ops-304", "If-None-Match": hit.headers.get("etag")! },
    });
    expect([notModified.status, notModified.headers.get("x-request-id")]).toEqual([304, "ops-304"]);

    // Generated (UUIDv4) when absent or not a sane token, on both paths.
    const generatedHit = await fetch(`${media.url}${path}`);
    expect(generatedHit.headers.get("x-cache")).toBe("HIT");
    expect(generatedHit.headers.get("x-request-id")).toMatch(UUID);
    const malformed = await fetch(`${media.url}${path}`, { headers: { "X-Request-Id": 'has spaces "and quotes"' } });
    expect(malformed.headers.get("x-request-id")).toMatch(UUID);

    // Express-only routes and errors.
    for (const route of ["/transformations", "/healthz", "/readyz", "/metrics", "/nope", `/nope:x=1/${id}.png`]) {
      const res = await fetch(`${media.url}${route}`, { headers: { "X-Request-Id": `ops-${route.length}` } });
      expect(res.headers.get("x-request-id")).toBe(`ops-${route.length}`);
    }
    const generatedExpress = await fetch(`${media.url}/transformations`);
    expect(generatedExpress.headers.get("x-request-id")).toMatch(UUID);
  });

  it("logs the MISS path (render) with the request's id, and one access line per Express request", async () => {
    const res = await fetch(`${media.url}/thumbnail:size=60/${id}.png`, { headers: { "X-Request-Id": "ops-log-1" } });
    expect(res.headers.get("x-cache")).toBe("MISS");
    await res.arrayBuffer();
    const mine = lines.filter((l) => l.requestId === "ops-log-1");
    expect(mine.map((l) => l.msg)).toEqual(["render started", "transformed", "request completed"]);
    expect(mine[0]).toMatchObject({ service: "media", steps: ["thumbnail"] });
    expect(mine[2]).toMatchObject({ route: ROUTE_MEDIA, status: 200, method: "GET" });
    // The hot path writes no log line per hit.
    const before = lines.length;
    const again = await fetch(`${media.url}/thumbnail:size=60/${id}.png`, { headers: { "X-Request-Id": "ops-log-2" } });
    expect(again.headers.get("x-cache")).toBe("HIT");
    expect(lines.length).toBe(before);
  });

  it("counts blob store failures as storage dependency errors (503)", async () => {
    const other = await media.store.putFixture("rocket.jpg");
    media.store.unavailable = true;
    try {
      const res = await fetch(`${media.url}/thumbnail:size=52/${other}.jpg`);
      expect(res.status).toBe(503);
    } finally {
      media.store.unavailable = false;
    }
    const { samples } = await scrape(media);
    expect(sampleValue(samples, "dependency_errors_total", { dependency: "storage" })).toBe(1);
    expect(
      sampleValue(samples, "http_request_duration_seconds_count", { route: ROUTE_MEDIA, status_code: "503" }),
    ).toBe(1);
  });
});

describe("logs never carry URL signatures", () => {
  it("redacts sig in the access line and the render lines", async () => {
    const key = "ops-signing-key-0123456789";
    const { logger, lines } = capturingLogger();
    const media = await startTestMedia({ logger, signingKey: key });
    try {
      const id = await media.store.putFixture("astronaut.png");
      const signed = signedMediaUrl(`/thumbnail:size=66/${id}.png`, key);
      const sig = signed.split("sig=")[1]!;
      const res = await fetch(`${media.url}${signed}`, { headers: { "X-Request-Id": "ops-signed" } });
      expect([res.status, res.headers.get("x-cache")]).toEqual([200, "MISS"]);
      const wrong = await fetch(`${media.url}/thumbnail:size=66/${id}.png?sig=${sig.slice(0, -2)}xx`);
      expect(wrong.status).toBe(403);
      const mine = lines.filter((l) => l.requestId === "ops-signed");
      expect(mine.map((l) => l.msg)).toEqual(["render started", "transformed", "request completed"]);
      expect(mine[2]!.url).toBe(`/thumbnail:size=66/${id}.png?sig=[REDACTED]`);
      const all = JSON.stringify(lines);
      expect(all).not.toContain(sig);
      expect(all).not.toContain(sig.slice(0, -2));
    } finally {
      await media.close();
    }
  });
});

describe("logs: why a request was refused", () => {
  it("logs each problem's status, type and detail at info with the request id; never a signature or the purge secret", async () => {
    const key = "ops-refusal-signing-key-0123456789";
    const { logger, lines } = capturingLogger();
    const media = await startTestMedia({ logger, signingKey: key, purgeSecret: "ops-refusal-purge-secret-0123456789" });
    try {
      const id = await media.store.putFixture("astronaut.png");
      const sig = signedMediaUrl(`/thumbnail:size=66/${id}.png`, key).split("sig=")[1]!;
      const forged = `${sig.slice(0, -2)}xx`;
      const get = (path: string, rid: string, init: RequestInit = {}) =>
        fetch(`${media.url}${path}`, { ...init, headers: { "X-Request-Id": rid, ...init.headers } });
      expect((await get(`/thumbnail:size=66/${id}.png?sig=${forged}`, "refuse-403")).status).toBe(403);
      const bad = await get(signedMediaUrl(`/thumbnail:size=0/${id}.png`, key), "refuse-400");
      expect(bad.status).toBe(400);
      const purge = await get("/internal/purge", "refuse-401", {
        method: "POST",
        headers: { Authorization: "Bearer not-the-secret-but-close-0123456789", "Content-Type": "application/json" },
        body: JSON.stringify({ assetIds: [id] }),
      });
      expect(purge.status).toBe(401);

      const refusal = (rid: string) => lines.find((l) => l.requestId === rid && l.msg.startsWith("request refused"));
      expect(refusal("refuse-403")).toMatchObject({
        level: "info",
        msg: "request refused: invalid-signature",
        path: `/thumbnail:size=66/${id}.png`,
        problem: { status: 403, type: "invalid-signature", detail: expect.any(String) },
      });
      expect(refusal("refuse-400")).toMatchObject({
        level: "info",
        problem: {
          status: 400,
          type: "invalid-media-url",
          detail: ((await bad.json()) as { detail: string }).detail,
          errors: [expect.objectContaining({ path: "thumbnail.size" })],
        },
      });
      expect(refusal("refuse-401")).toMatchObject({ level: "info", problem: { status: 401, type: "unauthorized" } });
      const all = JSON.stringify(lines);
      expect(all).not.toContain(forged);
      expect(all).not.toContain("not-the-secret-but-close");
    } finally {
      await media.close();
    }
  });
});

describe("queue metrics", () => {
  let media: TestMedia | undefined;
  afterEach(() => media?.close());

  it("media_transform_queue_depth is read at scrape time; queue-full 503s are counted as rejections", async () => {
    const gated = gatedRender();
    media = await startTestMedia({ render: gated.render, concurrency: 1, queueLimit: 1 });
    const m = media;
    const id = await m.store.putFixture("astronaut.png");
    const running = fetch(`${m.url}/thumbnail:size=70/${id}.png`);
    await gated.started(1);
    const queued = fetch(`${m.url}/thumbnail:size=71/${id}.png`);
    while (m.limiter.waiting < 1) await new Promise((r) => setImmediate(r));

    const during = (await scrape(m)).samples;
    expect(sampleValue(during, "media_transform_queue_depth")).toBe(1);
    const refused = await fetch(`${m.url}/thumbnail:size=72/${id}.png`);
    expect(refused.status).toBe(503);

    gated.release();
    expect((await Promise.all([running, queued])).map((r) => r.status)).toEqual([200, 200]);
    const after = (await scrape(m)).samples;
    expect(sampleValue(after, "media_transform_queue_depth")).toBe(0);
    expect(sampleValue(after, "media_transform_queue_rejections_total")).toBe(1);
    expect(sampleValue(after, "media_misses_total")).toBe(2);
  });
});

describe("/healthz and /readyz", () => {
  const started: TestMedia[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((m) => m.close()));
  });
  const start = async (options: Parameters<typeof startTestMedia>[0] = {}) => {
    const media = await startTestMedia(options);
    started.push(media);
    return media;
  };
  const ready = async (media: TestMedia) => {
    const res = await fetch(`${media.url}/readyz`);
    expect(res.headers.get("cache-control")).toBe("no-store");
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  it("/readyz is 200 while the blob store answers, 503 naming storage when its ping fails; /healthz stays 200", async () => {
    const store = new MemoryBlobStore();
    const media = await start({ store });
    const ok = await ready(media);
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ status: "ok", failing: [], checks: { storage: { status: "ok" } } });
    expect(ok.body.checks).not.toHaveProperty("redis");

    store.unavailable = true;
    const down = await ready(media);
    expect(down.status).toBe(503);
    expect(down.body).toMatchObject({
      status: "unavailable",
      failing: ["storage"],
      checks: { storage: { status: "error" } },
    });
    // Public probe: the dependency is named, its error text (hosts, addresses) stays in the log.
    expect(JSON.stringify(down.body)).not.toContain("switched off");
    const health = await fetch(`${media.url}/healthz`);
    expect(health.status).toBe(200);

    store.unavailable = false;
    expect((await ready(media)).status).toBe(200);
  });

  it("/readyz is 503 naming redis when Redis is configured but nothing listens there", async () => {
    const media = await start({ redis: { url: await closedPortUrl(), keyPrefix: "ops:", timeoutMs: 300 } });
    const down = await ready(media);
    expect(down.status).toBe(503);
    expect(down.body).toMatchObject({
      status: "unavailable",
      failing: ["redis"],
      checks: { storage: { status: "ok" }, redis: { status: "error" } },
    });
  });

  (redisAvailable ? it : it.skip)("/readyz is 200 with a reachable Redis (checks both)", async () => {
    const media = await start({ redis: { url: TEST_REDIS_URL, keyPrefix: uniqueRedisPrefix(), timeoutMs: 500 } });
    const ok = await ready(media);
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ failing: [], checks: { storage: { status: "ok" }, redis: { status: "ok" } } });
  });

  it("/readyz answers 503 draining during shutdown", async () => {
    let draining = false;
    const media = await start({ isDraining: () => draining });
    expect((await ready(media)).status).toBe(200);
    draining = true;
    const res = await ready(media);
    expect(res).toEqual({ status: 503, body: { status: "draining", failing: [], checks: {} } });
  });
});

// ---------------------------------------------------------------------------------------------

interface ChildLine {
  text: string;
  json?: LogLine;
}

/** Collects a child's output lines; waitFor resolves with the first (past or future) line matching. */
function lineCollector(child: ChildProcess) {
  const lines: ChildLine[] = [];
  const waiters: Array<{ match: (l: ChildLine) => boolean; resolve: (l: ChildLine) => void }> = [];
  let rest = "";
  const onData = (chunk: Buffer) => {
    rest += chunk.toString();
    const parts = rest.split("\n");
    rest = parts.pop()!;
    for (const text of parts.filter(Boolean)) {
      let json: LogLine | undefined;
      try {
        json = JSON.parse(text) as LogLine;
      } catch {
        json = undefined;
      }
      const line = { text, json };
      lines.push(line);
      for (const w of waiters.splice(0)) {
        if (w.match(line)) w.resolve(line);
        else waiters.push(w);
      }
    }
  };
  child.stdout!.on("data", onData);
  child.stderr!.on("data", onData);
  return {
    lines,
    output: () => lines.map((l) => l.text).join("\n"),
    waitFor(match: (l: ChildLine) => boolean, what: string, timeoutMs = 90_000): Promise<ChildLine> {
      const found = lines.find(match);
      if (found) return Promise.resolve(found);
      return new Promise<ChildLine>((resolve, reject) => {
        const timer = setTimeout(() => {
          reject(new Error(`no "${what}" line within ${timeoutMs} ms; output:\n${this.output()}`));
        }, timeoutMs);
        waiters.push({
          match,
          resolve: (l) => {
            clearTimeout(timer);
            resolve(l);
          },
        });
      });
    },
  };
}

/** Opens a TCP connection: resolves when connected, rejects with the socket error (ECONNREFUSED). */
function connect(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve();
    });
    socket.once("error", reject);
  });
}

describe("graceful shutdown of the real process", () => {
  let dataDir: string;
  let child: ChildProcess | undefined;

  afterAll(async () => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it("SIGTERM during a slow transformation: the response completes in full, new connections are refused, exit 0", async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), "media-shutdown-"));
    // A 3000 x 2000 noise JPEG: tiled CLAHE with 2 px tiles twice plus a wave takes seconds.
    const width = 3000;
    const height = 2000;
    const noise = Buffer.alloc(width * height * 3);
    for (let i = 0; i < noise.length; i++) noise[i] = (Math.imul(i, 2654435761) >>> 24) & 0xff;
    const jpeg = await sharp(noise, { raw: { width, height, channels: 3 } })
      .jpeg({ quality: 90 })
      .toBuffer();
    const id = randomUUID();
    await new FilesystemBlobStore(path.join(dataDir, "blobs")).put(originalKey(id), jpeg, "image/jpeg");

    const port = await freePort();
    child = spawn(process.execPath, ["--import", "tsx", "services/media/src/index.ts"], {
      cwd: ROOT,
      env: {
        ...process.env,
        HOST: "127.0.0.1",
        MEDIA_PORT: String(port),
        DATA_DIR: dataDir,
        STORAGE_DRIVER: "fs",
        STORAGE_DIR: "",
        REDIS_URL: "",
        MEDIA_SIGNING_KEY: "",
        MEDIA_WORKERS: "2",
        LOG_LEVEL: "debug",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child!.once("exit", (code, signal) => resolve({ code, signal })),
    );
    const out = lineCollector(child);
    await out.waitFor((l) => l.text.startsWith("media service listening on"), "listening");

    const events: string[] = [];
    const requestId = "shutdown-in-flight";
    const mediaPath = `/clahe:tileSize=2/wave:amplitude=20:wavelength=50/clahe:tileSize=2/${id}.jpg`;
    const response = fetch(`http://127.0.0.1:${port}${mediaPath}`, { headers: { "X-Request-Id": requestId } }).then(
      async (res) => {
        const body = Buffer.from(await res.arrayBuffer());
        events.push("response complete");
        return { res, body };
      },
    );
    // The server has read the original and started rendering this request: it is in flight.
    await out.waitFor((l) => l.json?.msg === "render started" && l.json.requestId === requestId, "render started");
    child.kill("SIGTERM");
    // Logged once the listener is closed.
    await out.waitFor((l) => l.json?.msg.startsWith("shutting down") === true, "shutting down");
    events.push("shutdown started");
    await expect(connect(port)).rejects.toMatchObject({ code: "ECONNREFUSED" });

    const { res, body } = await response;
    expect(events).toEqual(["shutdown started", "response complete"]);
    expect(res.status).toBe(200);
    expect(res.headers.get("x-cache")).toBe("MISS");
    expect(res.headers.get("x-request-id")).toBe(requestId);
    expect(res.headers.get("content-type")).toBe("image/jpeg");
    expect(body.length).toBe(Number(res.headers.get("content-length")));
    const meta = await sharp(body).metadata();
    // wave grows the canvas by 2 x amplitude.
    expect([meta.format, meta.width, meta.height]).toEqual(["jpeg", width, height + 40]);
    const stats = await sharp(body).stats();
    expect(stats.channels[0]!.stdev).toBeGreaterThan(0);

    expect(await exited).toEqual({ code: 0, signal: null });
    const messages = out.lines.flatMap((l) => (l.json ? [l.json.msg] : []));
    expect(messages).toEqual(
      expect.arrayContaining([
        "server closed: all in-flight requests finished",
        "closed pixel workers",
        "closed face detector",
        "shutdown complete",
      ]),
    );
    expect(out.lines.find((l) => l.json?.msg === "shutdown complete")!.json).toMatchObject({ code: 0 });
    // The render finished after shutdown began (it was in flight, not cut).
    const at = (msg: string) => out.lines.findIndex((l) => l.json?.msg === msg && l.json.requestId === requestId);
    const shutdownAt = out.lines.findIndex((l) => l.json?.msg.startsWith("shutting down") === true);
    expect(at("transformed")).toBeGreaterThan(shutdownAt);
  }, 180_000);
});
