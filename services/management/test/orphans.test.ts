import { randomBytes, randomUUID } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { signToken } from "../src/auth/keys";
import { createTestDatabase, fixture } from "./helpers";
import { childEnv, filesUnder, startManagementChild, type ManagementChild } from "./support/child";

/**
 * Issue 8 defect 3: a management process killed with SIGKILL mid-upload leaves blobs without a
 * row, driver temp files (`@tmp-`) and spool files; the restarted process removes every one of
 * them (the orphan sweep at start-up), on PGlite or Postgres, and keeps every asset with its blob.
 */
const secret = randomBytes(32).toString("hex");
const WS = "ws-orphans";
let dataDir: string;
let env: NodeJS.ProcessEnv;
let drop: (() => Promise<void>) | undefined;
let child: ManagementChild | undefined;

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "mgmt-orphans-"));
  const vars: Record<string, string> = {
    DATA_DIR: dataDir,
    UPLOAD_SPOOL_DIR: path.join(dataDir, "spool"),
    AUTH_JWT_SECRET: secret,
    ORPHAN_GRACE_SECONDS: "1",
    ORPHAN_SWEEP_INTERVAL_SECONDS: "0",
  };
  if (process.env.DATABASE_URL) {
    const db = await createTestDatabase();
    await db.db.close();
    if (db.url) vars.DATABASE_URL = db.url;
    drop = db.drop;
  }
  env = childEnv(vars);
});
afterAll(async () => {
  await child?.kill("SIGKILL");
  await drop?.().catch(() => undefined);
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const token = () => signToken(secret, { workspaceId: WS, ttl: "10m" });
const uploadTo = async (url: string, bytes: Buffer, name: string): Promise<number> => {
  const form = new FormData();
  form.append("file", new Blob([bytes], { type: "image/jpeg" }), name);
  const res = await fetch(`${url}/v1/assets/upload`, {
    method: "POST",
    headers: { Authorization: `Bearer ${token()}` },
    body: form,
  });
  await res.arrayBuffer();
  return res.status;
};

it("SIGKILL mid-upload, then restart: no blob without a row, no temp or spool file, every asset keeps its blob", async () => {
  const blobsDir = path.join(dataDir, "blobs");
  const spoolDir = path.join(dataDir, "spool");
  child = startManagementChild(env);
  const url = await child.url;
  expect(await uploadTo(url, fixture("rocket.jpg"), "kept.jpg")).toBe(201);

  // A stalled upload (its spool file exists) and an 8-way upload loop, then kill -9.
  const stalled = net.connect(new URL(url).port ? Number(new URL(url).port) : 80, "127.0.0.1");
  stalled.on("error", () => undefined);
  const boundary = "----orphans";
  stalled.write(
    `POST /v1/assets/upload HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token()}\r\n` +
      `Content-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: 999999\r\n\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="s.jpg"\r\n\r\n`,
  );
  stalled.write(fixture("rocket.jpg").subarray(0, 50_000));
  let stop = false;
  const loops = Array.from({ length: 8 }, async (_, i) => {
    const photo = fixture(i % 2 ? "rocket.jpg" : "coffee.png");
    while (!stop) await uploadTo(url, photo, `loop-${i}.jpg`).catch(() => 0);
  });
  for (let i = 0; i < 200 && filesUnder(spoolDir).length === 0; i++) await new Promise((r) => setTimeout(r, 20));
  await new Promise((r) => setTimeout(r, 400));
  await child.kill("SIGKILL");
  stop = true;
  await Promise.all(loops);
  stalled.destroy();

  // What a crash at other instants leaves, planted so each kind is certainly there.
  const orphanId = randomUUID();
  fs.mkdirSync(path.join(blobsDir, "originals"), { recursive: true });
  const planted = [
    path.join(blobsDir, "originals", `${orphanId}@blob`),
    path.join(blobsDir, "originals", `${orphanId}@meta.json`),
    path.join(blobsDir, "originals", `${randomUUID()}@tmp-${randomUUID()}`),
    path.join(spoolDir, `upload-${randomUUID()}`),
  ];
  for (const file of planted) fs.writeFileSync(file, "x");
  const old = new Date(Date.now() - 3600_000);
  for (const file of planted) fs.utimesSync(file, old, old);
  const before = filesUnder(blobsDir).length + filesUnder(spoolDir).length;
  // Past the grace period for the leftovers of the kill too.
  await new Promise((r) => setTimeout(r, 1200));

  child = startManagementChild(env);
  const url2 = await child.url;
  const sweep = JSON.parse((await child.waitFor(/^.*"msg":"orphan sweep done".*$/m))[0]) as Record<string, number>;
  expect(sweep.blobs).toBeGreaterThanOrEqual(1);
  expect(sweep.incompleteWrites).toBeGreaterThanOrEqual(1);
  expect(sweep.spoolFiles).toBeGreaterThanOrEqual(1);

  const ids: string[] = [];
  for (let cursor: string | null = null; ;) {
    const res = await fetch(`${url2}/v1/assets?limit=100${cursor ? `&cursor=${cursor}` : ""}`, {
      headers: { Authorization: `Bearer ${token()}` },
    });
    const page = (await res.json()) as { assets: Array<{ id: string }>; nextCursor: string | null };
    ids.push(...page.assets.map((a) => a.id));
    if (!page.nextCursor) break;
    cursor = page.nextCursor;
  }
  expect(ids.length).toBeGreaterThanOrEqual(1);
  // Exactly the blob and sidecar of each asset row; nothing else (no orphan, no temp file).
  expect(filesUnder(path.join(blobsDir, "originals"))).toEqual(
    ids.flatMap((id) => [`${id}@blob`, `${id}@meta.json`]).sort(),
  );
  expect(filesUnder(spoolDir)).toEqual([]);
  expect(before).toBeGreaterThan(ids.length * 2);
  await child.kill("SIGTERM");
});
