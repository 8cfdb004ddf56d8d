/**
 * Upload memory: twenty concurrent 50 MB uploads against a real management process must add at
 * most 500 MB of RSS (issue 8). Uploads stream to a spool file (hashed and measured on the way),
 * are decoded from that file and streamed to the blob store, so memory does not grow with the
 * upload size.
 *
 *   pnpm exec tsx bench/diagnostics/upload-memory.ts        # writes bench/results/upload-memory.md
 *
 * The service runs as a child process (PGlite and filesystem blobs in a temp DATA_DIR,
 * MAX_CONCURRENT_UPLOADS=20). Its RSS is read from /proc/<pid>/status (VmRSS) every 20 ms:
 * baseline = RSS after one small warm-up upload, peak = the highest sample (and VmHWM) during the
 * twenty uploads. Linux only.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import jwt from "jsonwebtoken";
import sharp from "sharp";
import { freePort, table } from "../harness";

const ROOT = path.resolve(__dirname, "../..");
const CONCURRENT = Number(process.env.BENCH_CONCURRENT_UPLOADS ?? 20);
const BUDGET_MB = 500;
const SECRET = "bench-secret-0123456789abcdef";

const mb = (bytes: number) => bytes / (1024 * 1024);

function procStatus(pid: number, field: "VmRSS" | "VmHWM"): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!m) throw new Error(`no ${field} for ${pid}`);
  return Number(m[1]) * 1024;
}

/** A PNG of random pixels (incompressible): 4096 x 4000 RGB is about 50 MB, under the 50 MiB limit. */
async function bigPng(): Promise<Buffer> {
  const width = 4096;
  const height = 4000;
  const raw = randomBytes(width * height * 3);
  return sharp(raw, { raw: { width, height, channels: 3 } })
    .png({ compressionLevel: 1 })
    .toBuffer();
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(path.join(tmpdir(), "bench-upload-memory-"));
  const port = await freePort();
  const child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "services/management/src/index.ts")], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: "",
      MANAGEMENT_PORT: String(port),
      HOST: "127.0.0.1",
      DATA_DIR: dataDir,
      UPLOAD_SPOOL_DIR: path.join(dataDir, "spool"),
      AUTH_JWT_SECRET: SECRET,
      MAX_CONCURRENT_UPLOADS: String(CONCURRENT),
      LOG_LEVEL: "warn",
    },
    stdio: ["ignore", "ignore", "inherit"],
  });
  const pid = child.pid!;
  const base = `http://127.0.0.1:${port}`;
  const token = jwt.sign({ workspace_id: "bench-memory" }, SECRET, { expiresIn: "1h" });
  try {
    for (let i = 0; ; i++) {
      if (child.exitCode !== null) throw new Error(`management exited with ${child.exitCode}`);
      const ok = await fetch(`${base}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      if (i > 300) throw new Error("management did not start");
      await new Promise((r) => setTimeout(r, 200));
    }
    const uploadOne = async (bytes: Buffer, name: string): Promise<number> => {
      const form = new FormData();
      form.append("file", new Blob([bytes], { type: "image/png" }), name);
      const res = await fetch(`${base}/v1/assets/upload`, {
        method: "POST",
        headers: { Authorization: `Bearer ${token}` },
        body: form,
      });
      await res.arrayBuffer();
      return res.status;
    };

    const png = await bigPng();
    process.stderr.write(`[upload-memory] file: ${mb(png.length).toFixed(1)} MiB\n`);
    // Warm-up: sharp, Prisma and the routes loaded, one small upload done.
    const small = await sharp(png, { limitInputPixels: false }).resize(256).png().toBuffer();
    if ((await uploadOne(small, "warm.png")) !== 201) throw new Error("warm-up upload failed");
    await new Promise((r) => setTimeout(r, 500));
    const baseline = procStatus(pid, "VmRSS");

    let peak = baseline;
    const sampler = setInterval(() => {
      try {
        peak = Math.max(peak, procStatus(pid, "VmRSS"));
      } catch {
        /* exited */
      }
    }, 20);
    const started = Date.now();
    const statuses = await Promise.all(Array.from({ length: CONCURRENT }, (_, i) => uploadOne(png, `big-${i}.png`)));
    const seconds = (Date.now() - started) / 1000;
    clearInterval(sampler);
    peak = Math.max(peak, procStatus(pid, "VmHWM"));
    const added = peak - baseline;
    const created = statuses.filter((s) => s === 201).length;

    const md = [
      "# Upload memory (bench/diagnostics/upload-memory.ts)",
      "",
      `${CONCURRENT} concurrent uploads of one ${mb(png.length).toFixed(1)} MiB PNG (4096x4000 random RGB) to a real`,
      "management process (PGlite, filesystem blobs). RSS of the service process from /proc (VmRSS sampled every",
      "20 ms, and VmHWM). Budget: at most 500 MB added.",
      "",
      table(
        ["uploads", "201s", "wall time", "RSS baseline", "RSS peak", "added", "budget", "added / uploaded bytes"],
        [
          [
            String(CONCURRENT),
            String(created),
            `${seconds.toFixed(1)} s`,
            `${mb(baseline).toFixed(0)} MiB`,
            `${mb(peak).toFixed(0)} MiB`,
            `${mb(added).toFixed(0)} MiB`,
            `${BUDGET_MB} MB (${((added / (BUDGET_MB * 1e6)) * 100).toFixed(0)}% used)`,
            `${(added / (png.length * CONCURRENT)).toFixed(2)}x`,
          ],
        ],
      ),
      "",
      `Run at ${new Date().toISOString()}.`,
      "",
    ].join("\n");
    process.stdout.write(md);
    writeFileSync(path.join(ROOT, "bench/results/upload-memory.md"), md);
    if (created !== CONCURRENT)
      throw new Error(`only ${created} of ${CONCURRENT} uploads answered 201: ${statuses.join(",")}`);
    if (added > BUDGET_MB * 1e6) process.exitCode = 1;
  } finally {
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(
    `upload-memory: ${err instanceof Error ? err.stack : String(err)} ${String((err as { cause?: unknown }).cause)}\n`,
  );
  process.exitCode = 1;
});
