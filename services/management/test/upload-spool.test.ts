import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import express from "express";
import request from "supertest";
import { uploadMiddleware } from "../src/assets/upload-intake";

const mode = (p: string) => fs.statSync(p).mode & 0o777;

describe("upload spool is private to the service's user", () => {
  let root: string;
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), "spool-mode-"));
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  const settings = (spoolDir: string) => ({ spoolDir, bodyIdleTimeoutMs: 5_000, maxConcurrentUploads: 2 });

  it("creates the spool folder with mode 0700, and tightens one that already exists world-readable", () => {
    const fresh = path.join(root, "fresh");
    uploadMiddleware(1024, settings(fresh));
    expect(mode(fresh)).toBe(0o700);

    const existing = path.join(root, "existing");
    fs.mkdirSync(existing, { mode: 0o777 });
    fs.chmodSync(existing, 0o777);
    uploadMiddleware(1024, settings(existing));
    expect(mode(existing)).toBe(0o700);
  });

  it("writes each upload body to a file of mode 0600", async () => {
    const dir = path.join(root, "spool");
    const app = express();
    app.post("/upload", uploadMiddleware(1024, settings(dir)), (req, res) => {
      const file = req.file!;
      res.json({ mode: mode(file.path), dir: path.dirname(file.path) });
    });
    const res = await request(app).post("/upload").attach("file", Buffer.from("spooled bytes"), "a.bin");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ mode: 0o600, dir });
  });
});
