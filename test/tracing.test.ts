// OpenTelemetry traces across both services, started the ways the product starts (`pnpm start`
// through tsx, exporting http/protobuf; the production bundle, exporting http/json): the SDK and
// its instrumentations load at run time only when an exporter is configured, so jest alone would
// not show that they load and patch. An in-process OTLP receiver collects the spans.
import { spawnSync } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import { mkdtemp, rm } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import sharp from "sharp";
import { EAGER_PATH, PURGE_PATH } from "@media-platform/contracts";
import {
  MANAGEMENT_READY,
  MEDIA_READY,
  REPO_ROOT,
  issueToken,
  startServiceProcess,
  stopServiceProcess,
  type ServiceProcess,
} from "../services/media/test/support/service-process";
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from "./support/otlp-receiver";

const run = process.env.REQUIRE_SERVICES === "1" ? describe.skip : describe;

const MODES = [
  {
    name: "pnpm start (tsx), http/protobuf",
    media: "services/media/src/index.ts",
    management: "services/management/src/index.ts",
    token: ["--import", "tsx", "services/management/src/cli/token.ts"],
    protocol: "http/protobuf",
    contentType: "application/x-protobuf",
    build: false,
  },
  {
    name: "the production bundle, http/json",
    media: "services/media/dist/index.js",
    management: "services/management/dist/index.js",
    token: ["services/management/dist/cli/token.js"],
    protocol: "http/json",
    contentType: "application/json",
    build: true,
  },
];

/** A W3C traceparent with a new trace id, as a CDN or a client sends it. */
function traceparent(): { header: string; traceId: string } {
  const traceId = randomBytes(16).toString("hex");
  return { header: `00-${traceId}-${randomBytes(8).toString("hex")}-01`, traceId };
}

/** Forwards to the media service, or answers 503 while closed (a media service that is down). */
async function startGate(target: () => string) {
  const seen: { path: string; status: number; traceparent: string | undefined }[] = [];
  let open = false;
  const server = http.createServer((req, res) => {
    const record = (status: number) =>
      seen.push({ path: req.url ?? "", status, traceparent: req.headers.traceparent as string | undefined });
    if (!open) {
      req.resume();
      record(503);
      res.writeHead(503).end();
      return;
    }
    const upstream = http.request(`${target()}${req.url}`, { method: req.method, headers: req.headers }, (up) => {
      record(up.statusCode ?? 0);
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on("error", () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    open: () => (open = true),
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

const inTrace = (spans: ReceivedSpan[], traceId: string, service?: string) =>
  spans.filter((s) => s.traceId === traceId && (service === undefined || s.service === service));

run.each(MODES)("traces across both services: $name", (mode) => {
  let dataDir: string;
  let receiver: OtlpReceiver;
  let gate: Awaited<ReturnType<typeof startGate>>;
  let media: ServiceProcess | undefined;
  let management: ServiceProcess | undefined;
  let env: NodeJS.ProcessEnv;
  let managementEnv: NodeJS.ProcessEnv;
  let token: string;
  let assetId: string;
  const upload = traceparent();

  beforeAll(async () => {
    if (mode.build) {
      const build = spawnSync(process.execPath, ["--import", "tsx", "scripts/build.ts"], {
        cwd: REPO_ROOT,
        encoding: "utf8",
      });
      if (build.status !== 0) throw new Error(`pnpm build failed:\n${build.stdout}\n${build.stderr}`);
    }
    receiver = await startOtlpReceiver();
    dataDir = await mkdtemp(path.join(tmpdir(), "tracing-"));
    const presets = path.join(dataDir, "presets.yaml");
    fs.writeFileSync(presets, 'card:\n  steps: "resize:width=64"\n  eager: true\n');
    const inherited = Object.fromEntries(
      Object.entries(process.env).filter(
        ([k]) =>
          !/^(DATABASE_URL|PGLITE_DIR|REDIS_|STORAGE_|S3_|AUTH_|MEDIA_|WEBHOOK_|OTEL_|MANAGEMENT_PORT$|HOST$|LOG_LEVEL$)/.test(
            k,
          ),
      ),
    );
    env = {
      ...inherited,
      HOST: "127.0.0.1",
      DATA_DIR: dataDir,
      STORAGE_DIR: path.join(dataDir, "blobs"),
      AUTH_JWT_SECRET: `tracing-${randomUUID()}-${randomUUID()}`,
      LOG_LEVEL: "info",
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: mode.protocol,
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment.name=test",
      // Export within a fraction of a second instead of every 5 s.
      OTEL_BSP_SCHEDULE_DELAY: "100",
    };
    media = await startServiceProcess(
      mode.media,
      { ...env, MEDIA_PORT: "0", MEDIA_PRESETS_FILE: presets },
      MEDIA_READY,
    );
    gate = await startGate(() => media!.url);
    managementEnv = {
      ...env,
      MANAGEMENT_PORT: "0",
      MEDIA_PUBLIC_URL: media.url,
      MEDIA_PURGE_URLS: gate.url,
      MEDIA_EAGER_RENDERS: "true",
      WEBHOOK_BACKOFF_BASE_MS: "100",
      WEBHOOK_POLL_INTERVAL_MS: "100",
    };
    management = await startServiceProcess(mode.management, managementEnv, MANAGEMENT_READY);
    token = issueToken(mode.token, env, "tracing");
  }, 300_000);

  afterAll(async () => {
    await Promise.all([stopServiceProcess(media), stopServiceProcess(management)]);
    await gate?.close();
    await receiver?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it("an upload continues the caller's trace: its server span, database spans, logs with the trace id", async () => {
    const jpeg = await sharp({ create: { width: 320, height: 200, channels: 3, background: "#3366cc" } })
      .jpeg()
      .toBuffer();
    const form = new FormData();
    form.append("file", new Blob([jpeg]), "blue.jpg");
    const res = await fetch(`${management!.url}/v1/assets/upload`, {
      method: "POST",
      headers: { Authorization: `Bearer ${token}`, traceparent: upload.header },
      body: form,
    });
    expect(res.status).toBe(201);
    assetId = ((await res.json()) as { id: string }).id;
    const server = await receiver.waitFor(
      (spans) => inTrace(spans, upload.traceId, "management").find((s) => s.name === "POST /v1/assets/upload"),
      "upload server span",
    );
    expect(server.parentSpanId).toBe(upload.header.split("-")[2]);
    expect(server.resource).toMatchObject({ "service.name": "management", "deployment.environment.name": "test" });
    expect(receiver.contentTypes).toEqual(new Set([mode.contentType]));
    // Prisma's own spans (or the driver's) inside the request.
    await receiver.waitFor(
      (spans) => inTrace(spans, upload.traceId, "management").some((s) => /^prisma:|^pg\./.test(s.name)),
      "database span in the upload's trace",
    );
    expect(management!.output()).toContain(`"trace_id":"${upload.traceId}"`);
  });

  it("the eager render the outbox could not send is sent after a restart, linked to the upload", async () => {
    // The media service was unreachable (the gate answered 503): the row waits in the outbox.
    await receiver.waitFor(
      () => gate.seen.some((s) => s.path === EAGER_PATH && s.status === 503),
      "failed eager attempt",
    );
    await stopServiceProcess(management);
    gate.open();
    management = await startServiceProcess(mode.management, managementEnv, MANAGEMENT_READY);
    const deliver = await receiver.waitFor(
      (spans) =>
        spans.find(
          (s) =>
            s.service === "management" &&
            s.name === "outbox.deliver media.eager" &&
            s.links.some((l) => l.traceId === upload.traceId) &&
            // The server span itself: the render spans under it end first and may come in an earlier export.
            spans.some(
              (m) =>
                m.service === "media" && m.traceId === s.traceId && m.parentSpanId !== "" && m.name.startsWith("POST "),
            ),
        ),
      "outbox delivery linked to the upload, continued by media",
    );
    expect(deliver.parentSpanId).toBe("");
    const sent = gate.seen.find((s) => s.path === EAGER_PATH && s.status === 200 && s.traceparent);
    expect(sent?.traceparent?.split("-")[1]).toBe(deliver.traceId);
    const mediaServer = inTrace(receiver.spans, deliver.traceId, "media").find((s) => s.name.startsWith("POST "));
    expect(mediaServer?.name).toBe(`POST ${EAGER_PATH}`);
  });

  it("a MISS continues the CDN's trace: admission, cache tiers, original read, render stages", async () => {
    const cdn = traceparent();
    const res = await fetch(`${media!.url}/thumbnail:size=100:quality=auto/${assetId}.jpg`, {
      headers: { traceparent: cdn.header },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-cache")).toBe("MISS");
    await res.arrayBuffer();
    const need = [
      "media.limiter.wait",
      "media.original.open",
      "media.render",
      "media.admission",
      "render.read",
      "render.decode",
      "render.encode",
    ];
    const spans = await receiver.waitFor((all) => {
      const trace = inTrace(all, cdn.traceId, "media");
      return need.every((n) => trace.some((s) => s.name === n)) && trace;
    }, "MISS stages");
    const byName = (name: string) => spans.find((s) => s.name === name)!;
    const server = spans.find((s) => s.parentSpanId === cdn.header.split("-")[2])!;
    expect(server.name).toMatch(/^GET \//);
    expect(server.attributes["media.cache"]).toBe("MISS");
    const renderSpan = byName("media.render");
    for (const span of ["media.limiter.wait", "media.original.open", "media.render"]) {
      expect(byName(span).parentSpanId).toBe(server.spanId);
    }
    expect(byName("media.admission").parentSpanId).toBe(renderSpan.spanId);
    expect(byName("media.admission").attributes).toMatchObject({
      "media.work.pixels": expect.any(Number),
      "media.work.cost_ms": expect.any(Number),
    });
    for (const stage of ["render.read", "render.decode", "render.encode"]) {
      expect(byName(stage).parentSpanId).toBe(renderSpan.spanId);
    }
    expect(byName("render.read").attributes).toMatchObject({
      "media.original.pixels": 320 * 200,
      "media.work.pixels": expect.any(Number),
      "media.work.cost_ms": expect.any(Number),
    });
    expect(byName("render.encode").attributes).toMatchObject({ "media.format": "jpeg", "media.quality": "auto" });
    // quality=auto: each trial encode is a span under the render.
    const trials = spans.filter((s) => s.name === "render.encode.trial");
    expect(trials.length).toBeGreaterThan(0);
    for (const t of trials) expect(t.parentSpanId).toBe(renderSpan.spanId);
    expect(media!.output()).toContain(`"trace_id":"${cdn.traceId}"`);

    // The same URL again: a memory-tier HIT, its server span recorded once answered.
    const again = traceparent();
    const hit = await fetch(`${media!.url}/thumbnail:size=100:quality=auto/${assetId}.jpg`, {
      headers: { traceparent: again.header },
    });
    expect(hit.headers.get("x-cache")).toBe("HIT");
    await hit.arrayBuffer();
    const hitSpan = await receiver.waitFor(
      (all) => inTrace(all, again.traceId, "media").find((s) => s.name === "GET hot_path"),
      "HIT server span",
    );
    expect(hitSpan.parentSpanId).toBe(again.header.split("-")[2]);
    const hitAttributes = { "http.request.method": "GET", "http.route": "hot_path", "http.response.status_code": 200 };
    expect(hitSpan).toMatchObject({
      kind: 2,
      attributes: hitAttributes,
      resource: { "deployment.environment.name": "test" },
    });

    // A HIT that starts its own trace: a root server span, timed within the request.
    const roots = () => receiver.spans.filter((s) => s.name === "GET hot_path" && s.parentSpanId === "");
    const known = new Set(roots().map((s) => s.spanId));
    const before = Date.now();
    const own = await fetch(`${media!.url}/thumbnail:size=100:quality=auto/${assetId}.jpg`);
    expect(own.headers.get("x-cache")).toBe("HIT");
    await own.arrayBuffer();
    const after = Date.now();
    const root = await receiver.waitFor(() => roots().find((s) => !known.has(s.spanId)), "the root HIT span");
    expect(root).toMatchObject({ service: "media", kind: 2, attributes: hitAttributes });
    expect(root.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(root.startMs).toBeGreaterThanOrEqual(before - 50); // the performance clock may drift from Date.now()
    expect(root.endMs).toBeGreaterThanOrEqual(root.startMs);
    expect(root.endMs).toBeLessThanOrEqual(after + 50);
    // Its latency sample carries it as the exemplar of the hot path's bucket (OpenMetrics scrape).
    const scrape = await fetch(`${media!.url}/metrics`, { headers: { Accept: "application/openmetrics-text" } });
    const exemplars = (await scrape.text())
      .split("\n")
      .filter((l) => l.startsWith("http_request_duration_seconds_bucket{") && l.includes('route="hot_path"'))
      .flatMap((l) => [...l.matchAll(/# \{trace_id="([0-9a-f]{32})",span_id="([0-9a-f]{16})"\}/g)])
      .map((m) => `${m[1]}-${m[2]}`);
    expect(exemplars).toContain(`${root.traceId}-${root.spanId}`);
  });

  it("a trash continues the caller's trace into the media purge", async () => {
    const trash = traceparent();
    const res = await fetch(`${management!.url}/v1/assets/${assetId}`, {
      method: "DELETE",
      headers: { Authorization: `Bearer ${token}`, traceparent: trash.header },
    });
    expect(res.status).toBe(204);
    const purge = await receiver.waitFor(
      (spans) => inTrace(spans, trash.traceId, "media").find((s) => s.name === `POST ${PURGE_PATH}`),
      "media purge span in the trash's trace",
    );
    const parent = await receiver.waitFor(
      (spans) => spans.find((s) => s.spanId === purge.parentSpanId),
      "the management span that called the purge",
    );
    expect(parent).toMatchObject({ service: "management", traceId: trash.traceId });
    expect(inTrace(receiver.spans, trash.traceId, "management").map((s) => s.name)).toContain(
      "DELETE /v1/assets/:assetId",
    );
  });
});
