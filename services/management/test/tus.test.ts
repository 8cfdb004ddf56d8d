import { createHash } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import express from "express";
import request from "supertest";
import { resumableUploads } from "../src/assets/tus";
import { UploadGate } from "../src/assets/upload-intake";
import { errorHandler } from "../src/problem";
import { defaultTransportsConfig } from "../src/config/transports";
import { createTestApp, fixture, type TestApp } from "./helpers";

/**
 * tus 1.0 at /v1/assets/tus over a real listener: the protocol answers, workspace isolation, the
 * checks before any byte is stored, and the intake of a finished upload.
 */
const meta = (pairs: Record<string, string>) =>
  Object.entries(pairs)
    .map(([k, v]) => `${k} ${Buffer.from(v).toString("base64")}`)
    .join(",");

let t: TestApp;
let tusDir: string;
let server: http.Server;
let base: string;

beforeAll(async () => {
  tusDir = fs.mkdtempSync(path.join(os.tmpdir(), "tus-test-"));
  t = await createTestApp({
    maxUploadBytes: 2 * 1024 * 1024,
    transports: { ...defaultTransportsConfig(tusDir), tus: { dir: tusDir, expiryMs: 60_000 } },
  });
  server = http.createServer(t.app);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await t.close();
  fs.rmSync(tusDir, { recursive: true, force: true });
});

const tusFiles = () => fs.readdirSync(tusDir);
const auth = (ws: string) => ({ Authorization: `Bearer ${t.token(ws)}`, "Tus-Resumable": "1.0.0" });

async function create(ws: string, length: number, metadata: Record<string, string> = { filename: "a.png" }) {
  return request(base)
    .post("/v1/assets/tus")
    .set(auth(ws))
    .set("Upload-Length", String(length))
    .set("Upload-Metadata", meta(metadata));
}

describe("tus at /v1/assets/tus", () => {
  it("answers OPTIONS without a token, naming its extensions and checksum algorithms", async () => {
    const res = await request(base).options("/v1/assets/tus").set("Origin", "https://app.example");
    expect(res.status).toBe(204);
    expect(res.headers["tus-version"]).toBe("1.0.0");
    const extensions = String(res.headers["tus-extension"]).split(",");
    for (const e of ["creation", "creation-with-upload", "termination", "expiration", "checksum"]) {
      expect(extensions).toContain(e);
    }
    expect(res.headers["tus-checksum-algorithm"]).toBe("sha1,sha256");
    expect(res.headers["tus-max-size"]).toBe(String(2 * 1024 * 1024));
  });

  it("refuses every other method without a token (401 problem)", async () => {
    const res = await request(base).post("/v1/assets/tus").set("Tus-Resumable", "1.0.0").set("Upload-Length", "10");
    expect(res.status).toBe(401);
    expect(res.headers["content-type"]).toMatch(/application\/problem\+json/);
  });

  it("takes API keys like /v1 does: a write key creates an upload, a read key gets 403 naming write", async () => {
    const keyOf = async (scopes: string[]) => {
      const res = await t
        .as("ws-tus-keys")
        .post("/v1/api-keys")
        .send({ name: scopes.join("+"), scopes });
      expect(res.status).toBe(201);
      return res.body.secret as string;
    };
    const withKey = (key: string) =>
      request(base)
        .post("/v1/assets/tus")
        .set({ Authorization: `Bearer ${key}`, "Tus-Resumable": "1.0.0" })
        .set("Upload-Length", "10")
        .set("Upload-Metadata", meta({ filename: "a.png" }));
    const before = tusFiles().length;
    const refused = await withKey(await keyOf(["read"]));
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ type: expect.stringMatching(/insufficient-scope$/), requiredScope: "write" });
    expect(tusFiles()).toHaveLength(before);
    const writer = await keyOf(["read", "write"]);
    const created = await withKey(writer);
    expect(created.status).toBe(201);
    expect(created.headers.location).toMatch(/\/v1\/assets\/tus\/[0-9a-f]{32}$/);
    const ended = await request(base)
      .delete(new URL(created.headers.location as string, base).pathname)
      .set({ Authorization: `Bearer ${writer}`, "Tus-Resumable": "1.0.0" });
    expect(ended.status).toBe(204);
    expect(tusFiles()).toHaveLength(before);
  });

  it("refuses an Upload-Length above the upload limit before storing anything (413 problem)", async () => {
    const before = tusFiles().length;
    const res = await create("ws-a", 2 * 1024 * 1024 + 1);
    expect(res.status).toBe(413);
    expect(res.headers["content-type"]).toMatch(/application\/problem\+json/);
    expect(res.body.type).toMatch(/payload-too-large$/);
    expect(tusFiles().length).toBe(before);
  });

  it("refuses bad Upload-Metadata before creating the upload (400 naming the field)", async () => {
    const before = tusFiles().length;
    const res = await create("ws-a", 10, { filename: "a.png", collectionId: "not-a-uuid" });
    expect(res.status).toBe(400);
    expect(res.body.errors[0].path).toBe("Upload-Metadata.collectionId");
    expect(tusFiles().length).toBe(before);
  });

  it("uploads in two PATCHes into an asset, with Asset-Id, a link, title and tags; HEAD finds it after", async () => {
    const png = fixture("logo.png");
    const created = await create("ws-a", png.length, {
      filename: "logo.png",
      filetype: "image/png",
      title: "Logo",
      tags: "brand, blue",
    });
    expect(created.status).toBe(201);
    const location = created.headers.location as string;
    expect(location).toMatch(/^\/v1\/assets\/tus\/[0-9a-f]{32}$/);
    const half = Math.floor(png.length / 2);
    const first = await request(base)
      .patch(location)
      .set(auth("ws-a"))
      .set("Content-Type", "application/offset+octet-stream")
      .set("Upload-Offset", "0")
      .send(png.subarray(0, half));
    expect(first.status).toBe(204);
    expect(first.headers["upload-offset"]).toBe(String(half));

    // A wrong offset: 409, nothing written.
    const wrong = await request(base)
      .patch(location)
      .set(auth("ws-a"))
      .set("Content-Type", "application/offset+octet-stream")
      .set("Upload-Offset", "1")
      .send(png.subarray(1));
    expect(wrong.status).toBe(409);
    expect(wrong.body.type).toMatch(/upload-offset-mismatch$/);
    const head = await request(base).head(location).set(auth("ws-a"));
    expect(head.headers["upload-offset"]).toBe(String(half));

    // Another workspace cannot see, write or delete it.
    expect((await request(base).head(location).set(auth("ws-b"))).status).toBe(404);
    const foreign = await request(base)
      .patch(location)
      .set(auth("ws-b"))
      .set("Content-Type", "application/offset+octet-stream")
      .set("Upload-Offset", String(half))
      .send(png.subarray(half));
    expect(foreign.status).toBe(404);
    expect((await request(base).delete(location).set(auth("ws-b"))).status).toBe(404);

    const last = await request(base)
      .patch(location)
      .set(auth("ws-a"))
      .set("Content-Type", "application/offset+octet-stream")
      .set("Upload-Offset", String(half))
      .set("Upload-Checksum", `sha256 ${createHash("sha256").update(png.subarray(half)).digest("base64")}`)
      .send(png.subarray(half));
    expect(last.status).toBe(204);
    const assetId = last.headers["asset-id"] as string;
    expect(assetId).toMatch(/^[0-9a-f-]{36}$/);
    expect(last.headers.link).toBe(`</v1/assets/${assetId}>; rel="asset"`);

    const asset = await t.as("ws-a").get(`/v1/assets/${assetId}`);
    expect(asset.status).toBe(200);
    expect(asset.body.originalFilename).toBe("logo.png");
    expect(asset.body.bytes).toBe(png.length);
    expect(asset.body.userTitle).toBe("Logo");
    expect(asset.body.userTags).toEqual(["brand", "blue"]);
    expect(asset.body.sha256).toBe(createHash("sha256").update(png).digest("hex"));
    // The upload's bytes are gone; the receipt answers HEAD, in its workspace only.
    expect(tusFiles().filter((f) => location.endsWith(f.replace(/\.json$/, "")))).toEqual([]);
    const after = await request(base).head(location).set(auth("ws-a"));
    expect(after.status).toBe(200);
    expect(after.headers["asset-id"]).toBe(assetId);
    expect(after.headers["upload-offset"]).toBe(String(png.length));
    expect((await request(base).head(location).set(auth("ws-b"))).status).toBe(404);
  });

  it("refuses a chunk whose checksum does not match (460), storing none of it", async () => {
    const png = fixture("logo.png");
    const created = await create("ws-a", png.length);
    const location = created.headers.location as string;
    const res = await request(base)
      .patch(location)
      .set(auth("ws-a"))
      .set("Content-Type", "application/offset+octet-stream")
      .set("Upload-Offset", "0")
      .set("Upload-Checksum", `sha1 ${createHash("sha1").update("other bytes").digest("base64")}`)
      .send(png);
    expect(res.status).toBe(460);
    expect(res.body.type).toMatch(/checksum-mismatch$/);
    const head = await request(base).head(location).set(auth("ws-a"));
    expect(head.headers["upload-offset"]).toBe("0");
    const unknown = await request(base)
      .patch(location)
      .set(auth("ws-a"))
      .set("Content-Type", "application/offset+octet-stream")
      .set("Upload-Offset", "0")
      .set("Upload-Checksum", "md5 AAAA")
      .send(png);
    expect(unknown.status).toBe(400);
    expect((await request(base).delete(location).set(auth("ws-a"))).status).toBe(204);
    expect(tusFiles().filter((f) => location.endsWith(f.replace(/\.json$/, "")))).toEqual([]);
  });

  it("refuses a finished upload that is not an image (415) and keeps nothing of it", async () => {
    const body = Buffer.from("<html><body>not an image</body></html>");
    const created = await request(base)
      .post("/v1/assets/tus")
      .set(auth("ws-a"))
      .set("Upload-Length", String(body.length))
      .set("Upload-Metadata", meta({ filename: "page.html" }))
      .set("Content-Type", "application/offset+octet-stream")
      .send(body);
    expect(created.status).toBe(415);
    expect(created.headers["content-type"]).toMatch(/application\/problem\+json/);
    expect(tusFiles()).toEqual([]);
  });
});

describe("an unfinished upload past TUS_UPLOAD_EXPIRY", () => {
  it("answers 410 and its bytes are swept", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tus-expiry-"));
    const resumable = resumableUploads(
      { ...t.deps, transports: { ...defaultTransportsConfig(dir), tus: { dir, expiryMs: 300 } } },
      t.deps.verifier,
    );
    const app = express()
      .use(resumable.router)
      .use(errorHandler({ log: t.deps.log }));
    const png = fixture("logo.png");
    const created = await request(app)
      .post("/v1/assets/tus")
      .set(auth("ws-a"))
      .set("Upload-Length", String(png.length))
      .set("Upload-Metadata", meta({ filename: "a.png" }));
    expect(created.status).toBe(201);
    expect(created.headers["upload-expires"]).toBeDefined();
    const location = created.headers.location as string;
    expect(fs.readdirSync(dir).length).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 600));
    const late = await request(app)
      .patch(location)
      .set(auth("ws-a"))
      .set("Content-Type", "application/offset+octet-stream")
      .set("Upload-Offset", "0")
      .send(png);
    expect(late.status).toBe(410);
    expect(late.body.type).toMatch(/upload-expired$/);
    expect(await resumable.sweep()).toBe(1);
    expect(fs.readdirSync(dir)).toEqual([]);
    await resumable.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

describe("resumable uploads share MAX_CONCURRENT_UPLOADS with multipart ones", () => {
  it("answers 503 + Retry-After to a request with bytes while the workspace's slots are taken", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tus-gate-"));
    const gate = new UploadGate(1, 1);
    const resumable = resumableUploads(
      { ...t.deps, transports: { ...defaultTransportsConfig(dir), tus: { dir, expiryMs: 60_000 } } },
      t.deps.verifier,
      gate,
    );
    const app = express()
      .use(resumable.router)
      .use(errorHandler({ log: t.deps.log }));
    const local = http.createServer(app);
    await new Promise<void>((resolve) => local.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(local.address() as AddressInfo).port}`;
    const png = fixture("logo.png");
    const created = await request(url)
      .post("/v1/assets/tus")
      .set(auth("ws-a"))
      .set("Upload-Length", String(png.length))
      .set("Upload-Metadata", meta({ filename: "a.png" }));
    expect(created.status).toBe(201);
    // A PATCH that has sent half its bytes holds the one slot.
    const slow = http.request(`${url}${created.headers.location}`, {
      method: "PATCH",
      headers: {
        ...auth("ws-a"),
        "Content-Type": "application/offset+octet-stream",
        "Upload-Offset": "0",
        "Content-Length": String(png.length),
      },
    });
    const answered = new Promise<number>((resolve) => slow.on("response", (res) => resolve(res.statusCode ?? 0)));
    slow.write(png.subarray(0, 100));
    while (gate.inFlight === 0) await new Promise((r) => setTimeout(r, 20));
    const busy = await request(url)
      .post("/v1/assets/tus")
      .set(auth("ws-a"))
      .set("Upload-Length", String(png.length))
      .set("Upload-Metadata", meta({ filename: "b.png" }))
      .set("Content-Type", "application/offset+octet-stream")
      .send(png);
    expect(busy.status).toBe(503);
    expect(busy.headers["retry-after"]).toBe("2");
    expect(busy.body.detail).toMatch(/at most 1 per instance|at most 1 per workspace/);
    slow.end(png.subarray(100));
    expect(await answered).toBe(204);
    local.closeAllConnections();
    await new Promise((r) => local.close(r));
    await resumable.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
