import { createHash } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import type { AddressInfo } from "node:net";
import { createApp } from "../src/app";
import type { UploadSettings } from "../src/config/uploads";
import { loadConfig } from "../src/config";
import { startManagement } from "../src/server";
import { createTestApp, fixture, type TestApp } from "./helpers";

/** Issue 8, slow clients and streamed uploads: idle body 408, header timeout, concurrent upload cap. */
let t: TestApp;
beforeAll(async () => {
  // Its own store: the real server below runs the start-up orphan sweep over the whole store.
  t = await createTestApp({ ownBlobStore: true });
});
afterAll(async () => {
  await t.close();
});

async function listen(
  settings: Partial<UploadSettings>,
): Promise<{ port: number; spoolDir: string; close(): Promise<void> }> {
  const spoolDir = fs.mkdtempSync(path.join(os.tmpdir(), "mgmt-spool-"));
  const app = createApp({
    ...t.deps,
    uploads: { spoolDir, bodyIdleTimeoutMs: 30_000, maxConcurrentUploads: 8, ...settings },
  });
  const server = http.createServer(app);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    port: (server.address() as AddressInfo).port,
    spoolDir,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
        fs.rmSync(spoolDir, { recursive: true, force: true });
      }),
  };
}

/**
 * The files in `spoolDir` once `done` holds of their count, polled (up to 30 s) rather than looked
 * at once: spooling starts, and the spool file goes, on the server's own schedule.
 */
async function spoolFilesOnce(spoolDir: string, done: (count: number) => boolean): Promise<string[]> {
  for (let attempt = 0; attempt < 1500 && !done(fs.readdirSync(spoolDir).length); attempt++)
    await new Promise((r) => setTimeout(r, 20));
  return fs.readdirSync(spoolDir);
}

const BOUNDARY = "----slowclient";
const head = (filename = "rocket.jpg") =>
  Buffer.from(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: image/jpeg\r\n\r\n`,
  );
const tail = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);

/** Opens an upload with a Content-Length for the whole body, sends `first`, and returns the socket + response text. */
function startUpload(port: number, token: string, body: Buffer, first: number) {
  const socket = net.connect(port, "127.0.0.1");
  socket.write(
    `POST /v1/assets/upload HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
      `Content-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: ${body.length}\r\n\r\n`,
  );
  socket.write(body.subarray(0, first));
  let text = "";
  socket.on("data", (d: Buffer) => (text += d.toString("latin1")));
  const closed = new Promise<string>((resolve) => {
    socket.on("close", () => resolve(text));
    socket.on("error", () => undefined);
  });
  return { socket, closed, rest: () => socket.write(body.subarray(first)) };
}

const status = (raw: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1]);
const header = (raw: string, name: string) =>
  new RegExp(`^${name}: (.*)$`, "im").exec(raw.split("\r\n\r\n")[0] ?? "")?.[1]?.trim();

describe("slow clients", () => {
  it("an upload body that stalls is answered 408 after the idle timeout, the connection closed, the spool file removed", async () => {
    const srv = await listen({ bodyIdleTimeoutMs: 300 });
    try {
      const body = Buffer.concat([head(), fixture("rocket.jpg"), tail]);
      const up = startUpload(srv.port, t.token("ws-slow"), body, 40_000);
      const raw = await up.closed; // the server closes the connection: no client timeout needed
      expect(status(raw)).toBe(408);
      expect(header(raw, "content-type")).toMatch(/^application\/problem\+json/);
      expect(header(raw, "connection")).toBe("close");
      expect(raw).toContain("No upload data received for 0.3 s");
      expect(await spoolFilesOnce(srv.spoolDir, (n) => n === 0)).toEqual([]);
      const list = await t.as("ws-slow").get("/v1/assets");
      expect(list.body.count).toBe(0);
    } finally {
      await srv.close();
    }
  });

  it("beyond MAX_CONCURRENT_UPLOADS a new upload is 503 + Retry-After before its body is read; the held one completes", async () => {
    const srv = await listen({ maxConcurrentUploads: 1, bodyIdleTimeoutMs: 10_000 });
    try {
      const image = fixture("rocket.jpg");
      const body = Buffer.concat([head(), image, tail]);
      const first = startUpload(srv.port, t.token("ws-cap"), body, 1000);
      // Wait until the first upload is being spooled.
      expect(await spoolFilesOnce(srv.spoolDir, (n) => n > 0)).toHaveLength(1);

      const second = startUpload(srv.port, t.token("ws-cap"), body, body.length);
      const raw2 = await second.closed;
      expect(status(raw2)).toBe(503);
      expect(header(raw2, "retry-after")).toMatch(/^\d+$/);
      expect(raw2).toContain("Too many uploads in progress (at most 1 per instance)");

      first.rest();
      await new Promise<void>((resolve) => {
        const check = () => (status(firstText()) ? resolve() : setTimeout(check, 20));
        let text = "";
        first.socket.on("data", (d: Buffer) => (text += d.toString("latin1")));
        const firstText = () => text;
        check();
      });
      first.socket.destroy();
      const list = await t.as("ws-cap").get("/v1/assets");
      expect(list.body.count).toBe(1);
      expect(list.body.assets[0].sha256).toBe(createHash("sha256").update(image).digest("hex"));
      expect(list.body.assets[0].bytes).toBe(image.length);
      // The slot is free again, the spool folder empty.
      expect(await spoolFilesOnce(srv.spoolDir, (n) => n === 0)).toEqual([]);
    } finally {
      await srv.close();
    }
  });

  it("one workspace holds at most its share of the upload slots (503 + Retry-After); another workspace still gets one", async () => {
    // 4 slots: a workspace may hold 2 (the default half).
    const srv = await listen({ maxConcurrentUploads: 4, bodyIdleTimeoutMs: 10_000 });
    const held: Array<ReturnType<typeof startUpload>> = [];
    try {
      const image = fixture("rocket.jpg");
      const body = Buffer.concat([head(), image, tail]);
      for (let n = 1; n <= 2; n++) {
        held.push(startUpload(srv.port, t.token("ws-greedy"), body, 1000));
        expect(await spoolFilesOnce(srv.spoolDir, (count) => count >= n)).toHaveLength(n);
      }

      const third = startUpload(srv.port, t.token("ws-greedy"), body, body.length);
      const raw3 = await third.closed;
      expect(status(raw3)).toBe(503);
      expect(header(raw3, "retry-after")).toMatch(/^\d+$/);
      expect(header(raw3, "content-type")).toMatch(/^application\/problem\+json/);
      expect(raw3).toContain("Too many uploads in progress (at most 2 per workspace on this instance)");

      const other = startUpload(srv.port, t.token("ws-modest"), body, body.length);
      let text = "";
      other.socket.on("data", (d: Buffer) => (text += d.toString("latin1")));
      for (let i = 0; i < 1500 && !status(text); i++) await new Promise((r) => setTimeout(r, 20));
      expect(status(text)).toBe(201);
      other.socket.destroy();
      expect((await t.as("ws-modest").get("/v1/assets")).body.count).toBe(1);
    } finally {
      for (const h of held) h.socket.destroy();
      await srv.close();
    }
  });

  it("a stalled request header is cut after HEADERS_TIMEOUT_MS with a 408 (real server)", async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "mgmt-headers-"));
    const running = await startManagement(
      loadConfig({
        MANAGEMENT_PORT: "0",
        HOST: "127.0.0.1",
        DATA_DIR: dataDir,
        HEADERS_TIMEOUT_MS: "1000",
        LOG_LEVEL: "silent",
      }),
      { database: t.db, blobStore: t.blobStore },
    );
    try {
      const socket = net.connect(running.port, "127.0.0.1");
      socket.write("GET /v1/assets HTTP/1.1\r\nHost: x\r\nX-Slow: ");
      let text = "";
      socket.on("data", (d: Buffer) => (text += d.toString("latin1")));
      await new Promise<void>((resolve) => socket.on("close", () => resolve()));
      expect(status(text)).toBe(408);
    } finally {
      await running.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
