import { spawn, type ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import sharp from "sharp";
import { FilesystemBlobStore } from "@media-platform/storage";
import { sweepOrphans } from "../src/assets/orphans";
import { signToken } from "../src/auth/keys";
import { openDatabase } from "../src/db/client";
import { createTestDatabase } from "./helpers";
import { childEnv, filesUnder, startManagementChild, type ManagementChild } from "./support/child";

/**
 * Several replicas under load, one of each kind killed: 2 management and 2 media processes (tsx)
 * share a dedicated Postgres database, Redis (a key prefix of their own) and one storage folder,
 * while clients upload, replace, delete and read media (MISSes and HITs) through all of them. One
 * management and one media process get SIGKILL mid-load and are restarted on their ports.
 * Afterwards: every acknowledged upload is there, no blob without its row or row without its blob
 * (once the orphan sweep has run), every webhook event reached the receiver, a purge reached the
 * surviving media replica within 2 s, and no answer was a 5xx other than 503 + Retry-After.
 * Runs in the Postgres CI pass (REQUIRE_SERVICES=1 with DATABASE_URL and REDIS_URL); skipped otherwise.
 */
const enabled = process.env.REQUIRE_SERVICES === "1" && !!process.env.DATABASE_URL && !!process.env.REDIS_URL;
const suite = enabled ? describe : describe.skip;

const REPO = path.resolve(__dirname, "../../..");
const jwtSecret = randomBytes(32).toString("hex");
const purgeSecret = randomBytes(32).toString("hex");
const webhookSecret = `whsec_${randomBytes(32).toString("base64")}`;
const WS = "ws-replicas";
const token = signToken(jwtSecret, { workspaceId: WS, ttl: "30m" });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** A small JPEG of its own colour (unique up to 65,536 calls): every upload and replace has other bytes. */
let shade = 0;
const photo = () => {
  const n = shade++;
  return sharp({
    create: { width: 48, height: 36, channels: 3, background: { r: n & 255, g: (n >> 8) & 255, b: 120 } },
  })
    .jpeg({ quality: 80 })
    .toBuffer();
};

interface Answer {
  what: string;
  status: number;
  retryAfter: string | null;
  body: Buffer;
}
/** One request; a refused or cut connection (a killed process) is status 0. */
async function send(what: string, url: string, init: RequestInit = {}): Promise<Answer> {
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(20_000) });
    const body = Buffer.from(await res.arrayBuffer());
    return { what, status: res.status, retryAfter: res.headers.get("retry-after"), body };
  } catch {
    return { what, status: 0, retryAfter: null, body: Buffer.alloc(0) };
  }
}
const authed = { Authorization: `Bearer ${token}` };
const form = (bytes: Buffer) => {
  const f = new FormData();
  f.append("file", new Blob([bytes], { type: "image/jpeg" }), "photo.jpg");
  return f;
};

/** A media process (tsx) on a fixed port, so a restart comes back at the same URL. */
class MediaProcess {
  proc: ChildProcess | undefined;
  constructor(
    readonly port: number,
    private readonly env: NodeJS.ProcessEnv,
  ) {}
  get url() {
    return `http://127.0.0.1:${this.port}`;
  }
  async start(): Promise<void> {
    const proc = spawn(process.execPath, ["--import", "tsx", "services/media/src/index.ts"], {
      cwd: REPO,
      env: { ...this.env, MEDIA_PORT: String(this.port) },
      stdio: "ignore",
    });
    this.proc = proc;
    for (let i = 0; i < 600; i++) {
      if (proc.exitCode !== null) throw new Error(`media on ${this.port} exited with ${proc.exitCode}`);
      if ((await send("ready", `${this.url}/readyz`)).status === 200) return;
      await sleep(100);
    }
    throw new Error(`media on ${this.port} did not become ready`);
  }
  async kill(signal: NodeJS.Signals): Promise<void> {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((r) => proc.once("exit", r));
    proc.kill(signal);
    await exited;
  }
}

suite("replicas under load, one of each kind killed (real processes, Postgres, Redis)", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "replicas-chaos-"));
  const blobsDir = path.join(dir, "blobs");
  let dbUrl: string;
  let drop: () => Promise<void>;
  let receiver: http.Server;
  const received = new Map<string, { type: string; id: string | undefined }>();
  const media: MediaProcess[] = [];
  const mgmt: Array<{ child: ManagementChild | undefined; env: NodeJS.ProcessEnv; url: string }> = [];

  const startManagement = async (i: number) => {
    const m = mgmt[i]!;
    m.child = startManagementChild(m.env);
    await m.child.url;
  };

  beforeAll(async () => {
    const db = await createTestDatabase();
    await db.db.close();
    dbUrl = db.url!;
    drop = db.drop;
    receiver = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const event = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { type: string; data?: { id?: string } };
        received.set(String(req.headers["webhook-id"]), { type: event.type, id: event.data?.id });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
    const hook = `http://127.0.0.1:${(receiver.address() as net.AddressInfo).port}/hooks`;

    // Nothing of the CI run's own service settings reaches the children.
    const base = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !/^(DATABASE_URL|STORAGE_|S3_|REDIS_|MEDIA_|CACHE_|AUTH_)/.test(k)),
    );
    const mediaPorts = [await freePort(), await freePort()];
    const mediaEnv = {
      ...base,
      HOST: "127.0.0.1",
      STORAGE_DRIVER: "fs",
      STORAGE_DIR: blobsDir,
      REDIS_URL: process.env.REDIS_URL,
      REDIS_KEY_PREFIX: `replicas-chaos-${randomBytes(4).toString("hex")}:`,
      CACHE_TTL_SECONDS: "600",
      MEDIA_PURGE_SECRET: purgeSecret,
      LOG_LEVEL: "warn",
    };
    for (const port of mediaPorts) media.push(new MediaProcess(port, mediaEnv));
    for (let i = 0; i < 2; i++) {
      const port = await freePort();
      mgmt.push({
        child: undefined,
        url: `http://127.0.0.1:${port}`,
        env: childEnv({
          MANAGEMENT_PORT: String(port),
          DATA_DIR: path.join(dir, `mgmt-${i}`),
          DATABASE_URL: dbUrl,
          STORAGE_DRIVER: "fs",
          STORAGE_DIR: blobsDir,
          AUTH_JWT_SECRET: jwtSecret,
          MEDIA_PUBLIC_URL: media[0]!.url,
          MEDIA_PURGE_URLS: media.map((m) => m.url).join(","),
          MEDIA_PURGE_SECRET: purgeSecret,
          WEBHOOK_URLS: hook,
          WEBHOOK_SECRET: webhookSecret,
          WEBHOOK_POLL_INTERVAL_MS: "100",
          WEBHOOK_BACKOFF_BASE_MS: "100",
          LOG_LEVEL: "warn",
        }),
      });
    }
    // The first management process migrates the fresh database; the rest start together.
    await startManagement(0);
    await Promise.all([startManagement(1), ...media.map((m) => m.start())]);
  }, 120_000);

  afterAll(async () => {
    for (const m of mgmt) await m.child?.kill("SIGKILL");
    for (const m of media) await m.kill("SIGKILL");
    await new Promise((r) => receiver?.close(r));
    await drop?.().catch(() => undefined);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("loses no acknowledged upload, leaves no orphan, delivers every event, purges the survivor within 2 s, answers no 5xx but 503", async () => {
    const answers: Answer[] = [];
    /** Acknowledged uploads: id -> the path of its media URL. */
    const acked = new Map<string, string>();
    /** Assets a delete was sent for (acknowledged or not). */
    const deleteSent = new Set<string>();
    const live = () => [...acked.keys()].filter((id) => !deleteSent.has(id));
    /** Assets the load leaves alone: the probes below, and each asset while the load replaces it. */
    const reserved = new Set<string>();
    /** Replaces of the load in flight, by asset. */
    const replacing = new Map<string, number>();
    const pickable = () => live().filter((id) => !reserved.has(id));
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(Math.random() * xs.length)]!;
    let running = true;
    let size = 0;

    const client = async (n: number) => {
      for (let i = 0; running; i++) {
        const api = mgmt[(n + i) % 2]!.url;
        const op = i % 5;
        if (op === 0 || live().length < 4) {
          const a = await send("upload", `${api}/v1/assets/upload`, {
            method: "POST",
            headers: authed,
            body: form(await photo()),
          });
          answers.push(a);
          if (a.status === 201) {
            const asset = JSON.parse(a.body.toString("utf8")) as { id: string; mediaUrl: string };
            acked.set(asset.id, new URL(asset.mediaUrl).pathname);
          }
        } else if (op === 1) {
          const id = pick(pickable());
          replacing.set(id, (replacing.get(id) ?? 0) + 1);
          answers.push(
            await send("replace", `${api}/v1/assets/${id}/original`, {
              method: "PUT",
              headers: authed,
              body: form(await photo()),
            }),
          );
          replacing.set(id, replacing.get(id)! - 1);
        } else if (op === 2 && i % 10 === 2) {
          const id = pick(pickable());
          deleteSent.add(id);
          answers.push(await send("delete", `${api}/v1/assets/${id}`, { method: "DELETE", headers: authed }));
        } else {
          // A new size is a MISS; the fixed one is a HIT after its first render.
          const id = pick([...acked.keys()]);
          const step = op === 3 ? `thumbnail:size=${50 + (size++ % 200)}` : "thumbnail:size=64";
          answers.push(await send("media", `${pick(media).url}/${step}${acked.get(id)}`));
        }
      }
    };
    const clients = [0, 1, 2, 3].map((n) => client(n));
    try {
      await sleep(6000);
      // One of each kind killed mid-load.
      await Promise.all([mgmt[0]!.child!.kill("SIGKILL"), media[0]!.kill("SIGKILL")]);

      // While media 0 is down: a replace and a delete through the surviving management process must
      // reach the surviving media replica (directly and through Redis) within 2 s.
      const survivor = media[1]!;
      // Two assets no replace of the load is changing, which the load then leaves alone.
      const [probeA, probeB] = live()
        .filter((id) => !replacing.get(id))
        .slice(-2);
      reserved.add(probeA!);
      reserved.add(probeB!);
      const url = (id: string) => `${survivor.url}/thumbnail:size=60${acked.get(id)}`;
      const before = await send("media", url(probeA!));
      const where = (id: string) =>
        ["originals", "trash"].filter((d) => fs.existsSync(path.join(blobsDir, d, `${id}@blob`))).join(",");
      expect(`${before.status} ${before.status === 200 ? "" : before.body.toString("utf8")} ${where(probeA!)}`).toBe(
        `200  originals`,
      );
      expect((await send("media", url(probeA!))).body.equals(before.body)).toBe(true);
      const b = await send("media", url(probeB!));
      expect(`${b.status} ${b.status === 200 ? "" : b.body.toString("utf8")} ${where(probeB!)}`).toBe(`200  originals`);
      deleteSent.add(probeB!);
      // A 503 (+ Retry-After) is an answer to retry, as a client would.
      const withRetry = async (request: () => Promise<Answer>): Promise<Answer> => {
        for (let attempt = 1; ; attempt++) {
          const a = await request();
          answers.push(a);
          if (a.status !== 503 || attempt === 5) return a;
          await sleep(Math.min(1000, Number(a.retryAfter ?? 1) * 1000));
        }
      };
      // Green, unlike every photo of the load (blue 120): its thumbnail cannot equal the one before.
      const green = await sharp({ create: { width: 24, height: 24, channels: 3, background: "#00ff00" } })
        .jpeg()
        .toBuffer();
      const replaced = await withRetry(() =>
        send("replace", `${mgmt[1]!.url}/v1/assets/${probeA}/original`, {
          method: "PUT",
          headers: authed,
          body: form(green),
        }),
      );
      expect(`${replaced.status} ${replaced.status === 200 ? "" : replaced.body.toString("utf8")}`).toBe("200 ");
      // The purge is what is timed: the survivor serves the old thumbnail no later than 2 s after the
      // replace. A 503 (+ Retry-After) while the load keeps it busy is no stale answer; the new
      // thumbnail must still come, within 15 s.
      const replacedAt = Date.now();
      let oldUntil = 0;
      let changedAfter = Infinity;
      const polled: number[] = [];
      while (Date.now() - replacedAt < 15_000) {
        const sentAt = Date.now() - replacedAt;
        const now = await send("media", url(probeA!));
        polled.push(now.status);
        if (now.status === 200 && !now.body.equals(before.body)) {
          changedAfter = Date.now() - replacedAt;
          break;
        }
        if (now.status === 200) oldUntil = sentAt;
        await sleep(50);
      }
      const outcome = { changedAfter, servedOldAt: oldUntil, statuses: [...new Set(polled)] };
      expect(changedAfter < Infinity && oldUntil <= 2000 ? "purged" : JSON.stringify(outcome)).toBe("purged");
      const deleted = await withRetry(() =>
        send("delete", `${mgmt[1]!.url}/v1/assets/${probeB}`, { method: "DELETE", headers: authed }),
      );
      expect(`${deleted.status} ${deleted.body.toString("utf8")}`).toBe("204 ");
      // Timed the same way: the deleted asset's thumbnail is served no later than 2 s after the delete.
      const deletedAt = Date.now();
      let servedUntil = 0;
      let goneAfter = Infinity;
      const polledGone: number[] = [];
      while (Date.now() - deletedAt < 15_000) {
        const sentAt = Date.now() - deletedAt;
        const now = await send("media", url(probeB!));
        polledGone.push(now.status);
        if (now.status === 404) {
          goneAfter = Date.now() - deletedAt;
          break;
        }
        if (now.status === 200) servedUntil = sentAt;
        await sleep(50);
      }
      const gone = { goneAfter, servedAt: servedUntil, statuses: [...new Set(polledGone)] };
      expect(goneAfter < Infinity && servedUntil <= 2000 ? "purged" : JSON.stringify(gone)).toBe("purged");

      await Promise.all([startManagement(0), media[0]!.start()]);
      await sleep(5000);
      running = false;
      await Promise.all(clients);

      // No 5xx but 503 + Retry-After; refused connections (status 0) only while a process was down.
      const bad = answers.filter(
        (a) => a.status >= 500 && !(a.status === 503 && a.retryAfter && /^\d+$/.test(a.retryAfter)),
      );
      expect(bad.map((a) => `${a.what} ${a.status} ${a.body.toString("utf8").slice(0, 200)}`)).toEqual([]);
      for (const what of ["upload", "replace", "delete", "media"])
        expect([what, answers.filter((a) => a.what === what && a.status >= 200 && a.status < 300).length > 0]).toEqual([
          what,
          true,
        ]);

      // Every webhook event reaches the receiver (the outbox is drained by the replicas left).
      const db = await openDatabase({ databaseUrl: dbUrl });
      try {
        let events: Array<{ eventId: string; status: string }> = [];
        for (let i = 0; i < 150; i++) {
          // The eager-render requests to media share the outbox; only webhook events go to the receiver.
          events = await db.prisma.webhookDelivery.findMany({
            where: { eventType: { not: "media.eager" } },
            select: { eventId: true, status: true },
          });
          if (events.every((e) => e.status === "delivered" && received.has(e.eventId))) break;
          await sleep(100);
        }
        expect(events.filter((e) => !received.has(e.eventId))).toEqual([]);
        const created = new Set([...received.values()].filter((e) => e.type === "asset.created").map((e) => e.id));
        expect([...acked.keys()].filter((id) => !created.has(id))).toEqual([]);

        // No acknowledged upload lost: a row for each, live unless a delete was sent for it.
        const rows = await db.prisma.asset.findMany({ select: { id: true, deletedAt: true } });
        const byId = new Map(rows.map((r) => [r.id, r]));
        expect([...acked.keys()].filter((id) => !byId.has(id))).toEqual([]);
        expect(live().filter((id) => byId.get(id)!.deletedAt !== null)).toEqual([]);

        for (const m of mgmt) await m.child!.kill("SIGTERM");
        await sweepOrphans(
          { prisma: db.prisma, blobStore: new FilesystemBlobStore(blobsDir) },
          { graceMs: 0, spoolDir: path.join(dir, "no-spool") },
        );
        const blobsOf = (ids: string[]) => ids.flatMap((id) => [`${id}@blob`, `${id}@meta.json`]).sort();
        const liveRows = rows.filter((r) => r.deletedAt === null).map((r) => r.id);
        const trashedRows = rows.filter((r) => r.deletedAt !== null).map((r) => r.id);
        expect(filesUnder(path.join(blobsDir, "originals"))).toEqual(blobsOf(liveRows));
        expect(filesUnder(path.join(blobsDir, "trash"))).toEqual(blobsOf(trashedRows));
        const versions = await db.prisma.assetVersion.findMany({ select: { assetId: true, version: true } });
        expect(filesUnder(path.join(blobsDir, "versions"))).toEqual(
          versions.flatMap((v) => [`${v.assetId}/v${v.version}@blob`, `${v.assetId}/v${v.version}@meta.json`]).sort(),
        );
        // Each original, live or trashed, is the bytes its row describes, also that of a replace
        // killed between its overwrite and its commit (the sweep puts the saved bytes back).
        const described = await db.prisma.asset.findMany({ select: { id: true, sha256: true, deletedAt: true } });
        const stored = (r: (typeof described)[number]) =>
          sha256(fs.readFileSync(path.join(blobsDir, r.deletedAt ? "trash" : "originals", `${r.id}@blob`)));
        expect(described.filter((r) => stored(r) !== r.sha256).map((r) => r.id)).toEqual([]);
      } finally {
        await db.close();
      }
    } finally {
      running = false;
      await Promise.all(clients);
    }
  }, 150_000);
});
