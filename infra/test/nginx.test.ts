// infra/cdn/nginx.conf checked by nginx itself (`nginx -t`) and then run for real in front of a
// stub media upstream on loopback: the cache rules are observed, not just grepped. Needs an
// nginx binary (Debian: nginx-light); without one the run is skipped, the static checks stay.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { readRepoFile } from "./support/files";
import { freePort } from "../../test/support/net";

const CONF = readRepoFile("infra/cdn/nginx.conf");

function findNginx(): string | undefined {
  const dirs = [...(process.env.PATH ?? "").split(":"), "/usr/sbin", "/usr/local/sbin", "/usr/local/nginx/sbin"];
  return dirs.map((d) => path.join(d, "nginx")).find((p) => fs.existsSync(p));
}
const NGINX = findNginx();

/** Directives without comments, for the static checks. */
const directives = CONF.split("\n")
  .map((l) => l.replace(/#.*$/, "").trim())
  .filter(Boolean);
const has = (re: RegExp) => directives.some((d) => re.test(d));

describe("infra/cdn/nginx.conf (static)", () => {
  test("caches with the upstream's own rules", () => {
    expect(has(/^proxy_cache_path \S+ .*keys_zone=media_cache:/)).toBe(true);
    expect(has(/^proxy_cache media_cache;$/)).toBe(true);
    // The asset's generation + the URI as received, query string included, + the Accept format bucket (MEDIA_AUTO_FORMAT).
    expect(has(/^proxy_cache_key "\$asset_generation\|\$request_uri\|\$media_format_bucket";$/)).toBe(true);
    expect(has(/^auth_request \/_asset_generation;$/)).toBe(true);
    expect(has(/^proxy_cache_revalidate on;$/)).toBe(true); // ETag / If-None-Match revalidation
    expect(has(/^proxy_cache_lock on;$/)).toBe(true);
    expect(has(/^add_header X-CDN-Cache \$upstream_cache_status always;$/)).toBe(true);
    // Overrides would make the edge ignore the service's Cache-Control (and cache no-store errors).
    expect(has(/^proxy_ignore_headers\b.*(Cache-Control|Expires)/)).toBe(false);
    expect(has(/^proxy_cache_valid\b/)).toBe(false);
    expect(has(/^proxy_hide_header\s+(X-Cache|ETag|Cache-Control)\b/i)).toBe(false);
    expect(has(/^proxy_pass http:\/\/media_upstream;$/)).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------

interface Upstream {
  server: http.Server;
  port: number;
  hits: Map<string, number>;
  requests: Array<{ url: string; headers: http.IncomingHttpHeaders }>;
  /** Asset generations the stub's /internal/generation answers (bumped by a "purge"). */
  generations: Map<string, number>;
  generationRequests: string[];
  /** Per-URL content suffix (a replaced original) and URLs whose asset was deleted. */
  versions: Map<string, string>;
  deleted: Set<string>;
}

async function startUpstream(): Promise<Upstream> {
  const hits = new Map<string, number>();
  const requests: Upstream["requests"] = [];
  const generations = new Map<string, number>();
  const generationRequests: string[] = [];
  const versions = new Map<string, string>();
  const deleted = new Set<string>();
  const server = http.createServer((req, res) => {
    const url = req.url ?? "";
    if (url.startsWith("/internal/generation/")) {
      // The media service's generation endpoint (purge/router.ts): cacheable for 1 s.
      const id = url.slice("/internal/generation/".length);
      generationRequests.push(id);
      res.writeHead(204, {
        "x-asset-generation": String(generations.get(id) ?? 0),
        "cache-control": "public, max-age=1",
      });
      res.end();
      return;
    }
    requests.push({ url, headers: req.headers });
    if (deleted.has(url)) {
      res.writeHead(404, { "content-type": "application/problem+json", "cache-control": "no-store" }).end("{}");
      return;
    }
    const n = (hits.get(url) ?? 0) + 1;
    hits.set(url, n);
    if (url.startsWith("/err")) {
      res
        .writeHead(400, { "content-type": "application/problem+json", "cache-control": "no-store" })
        .end('{"status":400}');
      return;
    }
    const short = url.startsWith("/short");
    const etag = `"${Buffer.from(url + (versions.get(url) ?? "")).toString("base64url")}"`;
    const headers = {
      "content-type": "image/jpeg",
      "cache-control": short ? "public, max-age=1" : "public, max-age=31536000, immutable",
      etag,
      "x-cache": n === 1 ? "MISS" : "HIT",
      // as the media service with MEDIA_AUTO_FORMAT on
      ...(url.startsWith("/resize") && { vary: "Accept" }),
    };
    if (req.headers["if-none-match"] === etag) {
      res.writeHead(304, headers).end();
      return;
    }
    const body = Buffer.from(`image bytes for ${url}${versions.get(url) ?? ""}`);
    res.writeHead(200, { ...headers, "content-length": body.length }).end(req.method === "HEAD" ? undefined : body);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    server,
    port: (server.address() as AddressInfo).port,
    hits,
    requests,
    generations,
    generationRequests,
    versions,
    deleted,
  };
}

/** The config with the container paths and names swapped for this machine's; each swap must hit exactly once. */
function localConf(dir: string, listenPort: number, upstreamPort: number): string {
  const swaps: Array<[RegExp, string]> = [
    [/^(\s*)listen 8080;$/m, `$1listen 127.0.0.1:${listenPort};`],
    [/^(\s*)server media:3001;$/m, `$1server 127.0.0.1:${upstreamPort};`],
    [/^pid \/tmp\/nginx\.pid;$/m, `pid ${dir}/nginx.pid;`],
    [/proxy_cache_path \/var\/cache\/nginx\/media /, `proxy_cache_path ${dir}/cache `],
    [/access_log \/dev\/stdout;/, `access_log ${dir}/access.log;`],
  ];
  let conf = CONF;
  for (const [re, to] of swaps) {
    const count = (conf.match(new RegExp(re.source, re.flags.includes("g") ? re.flags : `${re.flags}g`)) ?? []).length;
    if (count !== 1) throw new Error(`expected exactly one match of ${re} in nginx.conf, found ${count}`);
    conf = conf.replace(re, to);
  }
  conf = conf.replace(/\/tmp\/(client|proxy|fastcgi|uwsgi|scgi)_temp/g, `${dir}/$1_temp`);
  return conf;
}

// CI (REQUIRE_SERVICES=1) installs nginx, so there a missing binary fails instead of skipping.
const maybe = NGINX || process.env.REQUIRE_SERVICES === "1" ? describe : describe.skip;
if (!NGINX)
  process.stderr.write(
    "nginx not installed: skipping the nginx run of infra/cdn/nginx.conf (apt-get install nginx-light)\n",
  );

maybe("infra/cdn/nginx.conf run by nginx in front of a stub media service", () => {
  let dir: string;
  let upstream: Upstream;
  let nginx: ChildProcess | undefined;
  let base: string;
  let nginxLog = "";
  const asRoot = process.getuid?.() === 0;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "cdn-nginx-"));
    upstream = await startUpstream();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    fs.writeFileSync(path.join(dir, "nginx.conf"), localConf(dir, port, upstream.port));
    const globals = asRoot ? ["-g", "daemon off; user root;"] : ["-g", "daemon off;"];
    const check = spawnSync(
      NGINX as string,
      ["-t", "-p", dir, "-e", "stderr", "-c", path.join(dir, "nginx.conf"), ...(asRoot ? ["-g", "user root;"] : [])],
      { encoding: "utf8" },
    );
    nginxLog += check.stderr;
    if (check.status !== 0) throw new Error(`nginx -t failed:\n${check.stderr}`);
    nginx = spawn(NGINX as string, ["-p", dir, "-e", "stderr", "-c", path.join(dir, "nginx.conf"), ...globals], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    nginx.stderr?.on("data", (d) => (nginxLog += d));
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        const r = await fetch(`${base}/nginx-health`);
        if (r.ok) break;
      } catch {
        /* not listening yet */
      }
      if (Date.now() > deadline || nginx.exitCode !== null) throw new Error(`nginx did not start:\n${nginxLog}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  });

  afterAll(async () => {
    if (nginx && nginx.exitCode === null) {
      const exited = new Promise((r) => nginx?.once("exit", r));
      nginx.kill("SIGQUIT");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (nginx.exitCode === null) nginx.kill("SIGKILL");
    }
    upstream?.server.closeAllConnections();
    await new Promise((r) => upstream?.server.close(r));
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  test("nginx -t accepts the configuration", () => {
    expect(nginxLog).toMatch(/syntax is ok/);
    expect(nginxLog).toMatch(/test is successful/);
  });

  test("first request MISS, then HIT from the edge without reaching the service; X-Cache passes through", async () => {
    const url = "/thumbnail:size=64/3f2504e0-4f89-41d3-9a0c-0305e82c3301.jpg";
    const a = await fetch(base + url);
    expect(a.status).toBe(200);
    expect(a.headers.get("x-cdn-cache")).toBe("MISS");
    expect(a.headers.get("x-cache")).toBe("MISS");
    const bodyA = await a.text();
    const b = await fetch(base + url);
    expect(b.status).toBe(200);
    expect(b.headers.get("x-cdn-cache")).toBe("HIT");
    expect(b.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(b.headers.get("etag")).toBe(a.headers.get("etag"));
    expect(await b.text()).toBe(bodyA);
    expect(upstream.hits.get(url)).toBe(1);
  });

  test("If-None-Match on a cached entry is answered 304 by the edge", async () => {
    const url = "/grayscale/3f2504e0-4f89-41d3-9a0c-0305e82c3302.png";
    const a = await fetch(base + url);
    const etag = a.headers.get("etag") as string;
    await a.arrayBuffer();
    const b = await fetch(base + url, { headers: { "if-none-match": etag } });
    expect(b.status).toBe(304);
    expect(b.headers.get("x-cdn-cache")).toBe("HIT");
    expect(upstream.hits.get(url)).toBe(1);
  });

  test("the cache key includes the query string", async () => {
    const url = "/thumbnail:size=32/3f2504e0-4f89-41d3-9a0c-0305e82c3303.jpg";
    await (await fetch(base + url)).arrayBuffer();
    const signed = await fetch(`${base}${url}?sig=abc`);
    expect(signed.headers.get("x-cdn-cache")).toBe("MISS");
    await signed.arrayBuffer();
    expect(upstream.hits.get(`${url}?sig=abc`)).toBe(1);
    expect((await fetch(`${base}${url}?sig=abc`)).headers.get("x-cdn-cache")).toBe("HIT");
  });

  test("no-store errors are never cached", async () => {
    for (let i = 0; i < 2; i++) {
      const r = await fetch(`${base}/err/bad-step/x.jpg`);
      expect(r.status).toBe(400);
      expect(r.headers.get("cache-control")).toBe("no-store");
      expect(r.headers.get("x-cdn-cache")).toBe("MISS");
      await r.arrayBuffer();
    }
    expect(upstream.hits.get("/err/bad-step/x.jpg")).toBe(2);
  });

  test("an expired entry is served stale while it is revalidated in the background with its ETag", async () => {
    const url = "/short/3f2504e0-4f89-41d3-9a0c-0305e82c3304.jpg";
    const a = await fetch(base + url);
    const body = await a.text();
    expect(a.headers.get("x-cdn-cache")).toBe("MISS");
    await new Promise((r) => setTimeout(r, 2100));
    const b = await fetch(base + url);
    expect(b.status).toBe(200);
    expect(await b.text()).toBe(body);
    expect(b.headers.get("x-cdn-cache")).toBe("STALE"); // proxy_cache_background_update + use_stale updating
    const deadline = Date.now() + 5000;
    while (upstream.requests.filter((r) => r.url === url).length < 2 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    const revalidation = upstream.requests.filter((r) => r.url === url)[1];
    expect(revalidation.headers["if-none-match"]).toBe(a.headers.get("etag")); // conditional: the service answers 304
    await new Promise((r) => setTimeout(r, 100));
    const c = await fetch(base + url);
    expect(c.headers.get("x-cdn-cache")).toBe("HIT"); // refreshed by the 304
    expect(await c.text()).toBe(body);
    expect(upstream.requests.filter((r) => r.url === url)).toHaveLength(2);
  });

  test("request ids: the caller's is forwarded, else one is minted", async () => {
    await (await fetch(`${base}/rid/1.jpg`, { headers: { "x-request-id": "caller-id-1" } })).arrayBuffer();
    await (await fetch(`${base}/rid/2.jpg`)).arrayBuffer();
    const seen = (u: string) => upstream.requests.find((r) => r.url === u)?.headers["x-request-id"];
    expect(seen("/rid/1.jpg")).toBe("caller-id-1");
    expect(seen("/rid/2.jpg")).toMatch(/^[0-9a-f]{32}$/);
  });

  test("only GET/HEAD reach the service; /metrics stays private", async () => {
    const before = upstream.requests.length;
    expect((await fetch(`${base}/thumbnail/x.jpg`, { method: "POST", body: "x" })).status).toBe(403);
    expect((await fetch(`${base}/metrics`)).status).toBe(404);
    // Every spelling the service would answer as /metrics or /internal/... is closed at the edge too.
    for (const path of [
      "/metrics/",
      "/METRICS",
      "/Metrics//",
      "//metrics",
      "/%6detrics",
      "/INTERNAL/generation/x",
      "/internal",
    ])
      expect([path, (await fetch(`${base}${path}`)).status]).toEqual([path, 404]);
    expect(upstream.requests.length).toBe(before);
  });

  test("format negotiation: keyed on the Accept bucket (avif, webp, none), never the raw Accept", async () => {
    const url = "/resize:width=320/3f2504e0-4f89-41d3-9a0c-0305e82c3305.jpg";
    const accepts = [
      ["image/avif,image/webp,image/apng,image/*,*/*;q=0.8", "MISS"],
      ["image/avif,image/webp,*/*", "HIT"], // another browser string, same bucket
      ["image/webp,image/png,image/*;q=0.8,*/*;q=0.5", "MISS"],
      ["*/*", "MISS"],
      ["text/html,*/*", "HIT"],
    ];
    for (const [accept, cdn] of accepts) {
      const r = await fetch(base + url, { headers: { accept } });
      await r.arrayBuffer();
      expect([accept, r.headers.get("x-cdn-cache"), r.headers.get("vary")]).toEqual([accept, cdn, "Accept"]);
    }
    // The service sees only the bucket's Accept, so it negotiates on what the edge keys on.
    expect(upstream.requests.filter((r) => r.url === url).map((r) => r.headers.accept)).toEqual([
      "image/avif",
      "image/webp",
      "*/*",
    ]);
  });

  /** Polls until `done` holds (the edge's generation lookup is cached for 1 s); bounded. */
  async function until(url: string, done: (r: Response, body: string) => boolean): Promise<Response> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const r = await fetch(base + url);
      const body = await r.text();
      if (done(r, body)) return r;
      if (Date.now() > deadline) throw new Error(`${url} never changed: ${r.status} ${body}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  test("purge: after the asset's generation moves, a cached URL is fetched anew (replace) or 404 (delete)", async () => {
    const id = "3f2504e0-4f89-41d3-9a0c-0305e82c3399";
    const url = `/thumbnail:size=64/${id}.jpg`;
    expect((await fetch(base + url)).headers.get("x-cdn-cache")).toBe("MISS");
    const hit = await fetch(base + url);
    expect(hit.headers.get("x-cdn-cache")).toBe("HIT");
    expect(await hit.text()).toBe(`image bytes for ${url}`);
    expect(upstream.generationRequests).toContain(id);

    // Replace: the service renders new bytes and its purge bumped the generation.
    upstream.versions.set(url, " v2");
    upstream.generations.set(id, 1);
    const fresh = await until(url, (_r, body) => body.endsWith(" v2"));
    expect(fresh.headers.get("x-cdn-cache")).toBe("MISS");
    expect(upstream.hits.get(url)).toBe(2);
    expect((await fetch(base + url)).headers.get("x-cdn-cache")).toBe("HIT");

    // Delete: the original is gone and the generation moved again.
    upstream.deleted.add(url);
    upstream.generations.set(id, 2);
    const gone = await until(url, (r) => r.status === 404);
    expect(gone.headers.get("content-type")).toMatch(/problem\+json/);
  });

  test("the internal endpoints are not reachable through the edge", async () => {
    expect((await fetch(`${base}/internal/generation/3f2504e0-4f89-41d3-9a0c-0305e82c3399`)).status).toBe(404);
    expect((await fetch(`${base}/internal/purge`, { method: "POST" })).status).toBe(404);
  });
});
