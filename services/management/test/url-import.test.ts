import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { defaultTransportsConfig } from "../src/config/transports";
import { addressRefusal } from "../src/assets/url-import";
import { createTestApp, expectProblem, fixture, type TestApp } from "./helpers";

/**
 * POST /v1/assets/import behind the SSRF guard, against real listeners: a "victim" on loopback
 * that every bypass attempt aims at (it must never see a connection), and an allowed source.
 */
interface Listener {
  server: http.Server;
  port: number;
  connections: number;
}

async function listen(handler: http.RequestListener): Promise<Listener> {
  const server = http.createServer(handler);
  const listener: Listener = { server, port: 0, connections: 0 };
  server.on("connection", () => listener.connections++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  listener.port = (server.address() as AddressInfo).port;
  return listener;
}

const png = fixture("logo.png");
let t: TestApp;
let victim: Listener;
let source: Listener;
let spoolDir: string;

beforeAll(async () => {
  victim = await listen((_req, res) => res.writeHead(200, { "Content-Type": "image/png" }).end(png));
  source = await listen((req, res) => {
    const url = new URL(req.url ?? "/", "http://source");
    switch (url.pathname) {
      case "/logo.png":
        res.writeHead(200, { "Content-Type": "image/png" }).end(png);
        return;
      case "/page":
        res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" }).end("<html><body>hello</body></html>");
        return;
      case "/html-as-octets":
        res.writeHead(200, { "Content-Type": "application/octet-stream" }).end("<html><body>hello</body></html>");
        return;
      case "/to-victim":
        res.writeHead(302, { Location: `http://127.0.0.1:${victim.port}/logo.png` }).end();
        return;
      case "/to-localhost":
        res.writeHead(301, { Location: `http://localhost:${victim.port}/logo.png` }).end();
        return;
      case "/loop":
        res.writeHead(302, { Location: "/loop" }).end();
        return;
      case "/big":
        res.writeHead(200, { "Content-Type": "image/png" });
        res.end(Buffer.alloc(300 * 1024));
        return;
      default:
        res.writeHead(404).end("missing");
    }
  });
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "import-test-"));
  spoolDir = path.join(dataDir, "spool");
  const transports = defaultTransportsConfig(dataDir);
  t = await createTestApp({
    maxUploadBytes: 256 * 1024,
    transports: { ...transports, import: { allowedHosts: [`127.0.0.1:${source.port}`], timeoutMs: 10_000 } },
    uploads: { spoolDir, bodyIdleTimeoutMs: 30_000, maxConcurrentUploads: 8 },
  });
});

afterAll(async () => {
  for (const l of [victim, source]) {
    l.server.closeAllConnections();
    await new Promise((resolve) => l.server.close(resolve));
  }
  await t.close();
});

const importUrl = (url: string, extra: Record<string, unknown> = {}) =>
  t
    .as("ws-import")
    .post("/v1/assets/import")
    .send({ url, ...extra });

describe("POST /v1/assets/import: the SSRF guard", () => {
  // Every spelling of a forbidden address aims at the victim's port where a port matters.
  const bypasses = (v: number): string[] => [
    `http://127.0.0.1:${v}/logo.png`,
    `http://localhost:${v}/logo.png`,
    `http://2130706433:${v}/logo.png`,
    `http://0x7f000001:${v}/logo.png`,
    `http://017700000001:${v}/logo.png`,
    `http://0x7f.1:${v}/logo.png`,
    `http://127.1:${v}/logo.png`,
    `http://0177.0.0.1:${v}/logo.png`,
    `http://0x7f.0x0.0x0.0x1:${v}/logo.png`,
    `http://127.0.0.1.:${v}/logo.png`,
    `http://①②⑦.0.0.1:${v}/logo.png`,
    `http://0:${v}/logo.png`,
    `http://0.0.0.0:${v}/logo.png`,
    `http://[::1]:${v}/logo.png`,
    `http://[::]:${v}/logo.png`,
    `http://[::ffff:127.0.0.1]:${v}/logo.png`,
    `http://[::ffff:7f00:1]:${v}/logo.png`,
    `http://[::127.0.0.1]:${v}/logo.png`,
    `http://[64:ff9b::127.0.0.1]:${v}/logo.png`,
    `http://[2002:7f00:1::]:${v}/logo.png`,
    "http://169.254.169.254/latest/meta-data/",
    "http://[::ffff:a9fe:a9fe]/latest/meta-data/",
    "http://[fd00:ec2::254]/latest/meta-data/",
    "http://100.100.100.200/latest/meta-data/",
    "http://10.0.0.1/",
    "http://172.16.0.1/",
    "http://192.168.1.1/",
    "http://100.64.0.1/",
    "http://224.0.0.1/",
    "http://255.255.255.255/",
    "http://[fe80::1]/",
    "http://[ff02::1]/",
    "https://user:secret@example.com/logo.png",
  ];

  it("refuses at least 25 bypass attempts with 400 import-refused, never connecting", async () => {
    const urls = bypasses(victim.port);
    expect(urls.length).toBeGreaterThanOrEqual(25);
    const outcomes: string[] = [];
    for (const url of urls) {
      const res = await importUrl(url);
      outcomes.push(`${url} -> ${res.status} ${String(res.body.type).split("/").pop()}`);
    }
    expect(outcomes).toEqual(urls.map((url) => `${url} -> 400 import-refused`));
    expect(victim.connections).toBe(0);
  });

  it("names the reason in the detail", async () => {
    const res = await importUrl("http://0x7f000001/");
    expectProblem(res, 400);
    expect(res.body.detail).toBe("127.0.0.1 is a loopback address");
    const dns = await importUrl(`http://localhost:${victim.port}/`);
    expect(dns.body.detail).toMatch(/^localhost resolves to (127\.0\.0\.1|::1), a loopback address$/);
  });

  it("refuses schemes other than http and https (400)", async () => {
    for (const url of [
      "file:///etc/passwd",
      "ftp://example.com/a.png",
      "gopher://127.0.0.1/",
      "data:image/png;base64,AAAA",
    ]) {
      const res = await importUrl(url);
      expectProblem(res, 400);
      expect(res.body.errors[0].path).toBe("body.url");
    }
  });

  it("classifies public addresses as allowed", () => {
    for (const address of ["93.184.215.14", "8.8.8.8", "2606:4700:4700::1111", "2a00:1450:4001::200e"]) {
      expect(addressRefusal(address)).toBeNull();
    }
  });
});

describe("POST /v1/assets/import from an allowed host", () => {
  it("imports an image into an asset named after the URL", async () => {
    const res = await importUrl(`http://127.0.0.1:${source.port}/logo.png`);
    expect(res.status).toBe(201);
    expect(res.headers.location).toBe(`/v1/assets/${res.body.id}`);
    expect(res.body.originalFilename).toBe("logo.png");
    expect(res.body.bytes).toBe(png.length);
  });

  it("refuses a redirect from it to a forbidden address before connecting", async () => {
    const before = victim.connections;
    for (const hop of ["/to-victim", "/to-localhost"]) {
      const res = await importUrl(`http://127.0.0.1:${source.port}${hop}`);
      expectProblem(res, 400);
      expect(res.body.type).toMatch(/import-refused$/);
    }
    expect(victim.connections).toBe(before);
  });

  it("refuses an HTML page (415) and an HTML body sent as octets (415), leaving no spool file", async () => {
    const page = await importUrl(`http://127.0.0.1:${source.port}/page`);
    expectProblem(page, 415);
    expect(page.body.type).toMatch(/import-not-an-image$/);
    expect(page.body.detail).toMatch(/text\/html/);
    const octets = await importUrl(`http://127.0.0.1:${source.port}/html-as-octets`);
    expectProblem(octets, 415);
    expect(fs.existsSync(spoolDir) ? fs.readdirSync(spoolDir) : []).toEqual([]);
  });

  it("answers 502 import-failed naming the remote status", async () => {
    const res = await importUrl(`http://127.0.0.1:${source.port}/missing.png`);
    expectProblem(res, 502);
    expect(res.body.type).toMatch(/import-failed$/);
    expect(res.body.detail).toMatch(/answered 404/);
  });

  it("stops after 5 redirects (400) and refuses a body above the upload limit (413)", async () => {
    const loop = await importUrl(`http://127.0.0.1:${source.port}/loop`);
    expectProblem(loop, 400);
    expect(loop.body.detail).toBe("More than 5 redirects");
    const big = await importUrl(`http://127.0.0.1:${source.port}/big`);
    expectProblem(big, 413);
    expect(fs.existsSync(spoolDir) ? fs.readdirSync(spoolDir) : []).toEqual([]);
  });
});
