/**
 * `pnpm usage:day`: a scripted day of traffic on a fresh embedded deployment (both services
 * in-process, a temporary DATA_DIR), then what GET /v1/usage answers. Uploads the fixture photos,
 * renders each three ways (once, then from the cache), replaces two originals, trashes three and
 * deletes two for good, sets an asset quota and tries an upload past it.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import jwt from "jsonwebtoken";
import { loadConfig, startManagement } from "@media-platform/management";
import { loadMediaConfig, startMedia } from "@media-platform/media";

const root = path.resolve(__dirname, "..");
const PHOTOS = ["astronaut.png", "camera.png", "chelsea.png", "coffee.png", "rocket.jpg"];
const STEPS = ["thumbnail:size=200", "thumbnail:size=128/format:type=webp", "saturation:value=1.2"];

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "usage-day-"));
  const env = {
    ...process.env,
    DATA_DIR: dataDir,
    DATABASE_URL: "",
    STORAGE_DRIVER: "fs",
    STORAGE_DIR: path.join(dataDir, "blobs"),
    MANAGEMENT_PORT: "0",
    MEDIA_PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    USAGE_INGEST_INTERVAL_SECONDS: "1",
    MEDIA_USAGE_REPORT_INTERVAL_SECONDS: "1",
  };
  const media = await startMedia(loadMediaConfig(env));
  const management = await startManagement(loadConfig({ ...env, MEDIA_PUBLIC_URL: media.url }));
  const api = management.url;
  try {
    const secret = fs.readFileSync(path.join(dataDir, "auth-secret"), "utf8").trim();
    const token = jwt.sign({ workspace_id: "acme" }, secret, { algorithm: "HS256", expiresIn: "1h", subject: "ops" });
    const call = async (method: string, url: string, body?: unknown): Promise<Response> =>
      fetch(`${api}${url}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body !== undefined && !(body instanceof FormData) && { "content-type": "application/json" }),
        },
        body: body instanceof FormData ? body : body === undefined ? undefined : JSON.stringify(body),
      });
    const uploadFile = (name: string, url = "/v1/assets/upload", method = "POST") => {
      const form = new FormData();
      form.append("file", new Blob([fs.readFileSync(path.join(root, "fixtures/images", name))]), name);
      return call(method, url, form);
    };

    const ids: string[] = [];
    for (let round = 0; round < 4; round++)
      for (const name of PHOTOS) {
        const res = await uploadFile(name);
        if (res.status !== 201) throw new Error(`upload ${name}: ${res.status} ${await res.text()}`);
        ids.push(((await res.json()) as { id: string }).id);
      }
    let renders = 0;
    let bytes = 0;
    for (const id of ids)
      for (const step of STEPS)
        for (let view = 0; view < 2; view++) {
          const res = await fetch(`${media.url}/${step}/${id}.jpg`);
          const body = Buffer.from(await res.arrayBuffer());
          if (res.status !== 200) throw new Error(`render ${step}: ${res.status}`);
          if (res.headers.get("x-cache") === "MISS") renders++;
          bytes += body.length;
        }
    for (const id of ids.slice(0, 2)) await uploadFile("logo.png", `/v1/assets/${id}/original`, "PUT");
    for (const id of ids.slice(2, 5)) await call("DELETE", `/v1/assets/${id}`);
    for (const id of ids.slice(5, 7)) await call("DELETE", `/v1/assets/${id}?permanent=true`);
    await call("PUT", "/v1/usage/quotas", { assets: ids.length - 2 });
    const refused = await uploadFile("rocket.jpg");

    // Reports are written every second by media and counted every second by management.
    await new Promise((r) => setTimeout(r, 3500));
    const usage = (await (await call("GET", "/v1/usage")).json()) as {
      storageBytes: number;
      assets: number;
      quotas: unknown;
      days: Array<{ date: string; uploads: number; renders: number; egressBytes: number }>;
    };
    const audit = (await (await call("GET", "/v1/audit-events")).json()) as { events: Array<{ action: string }> };
    const today = usage.days.at(-1)!;
    const out = {
      traffic: {
        uploads: ids.length,
        replaced: 2,
        trashed: 3,
        deletedPermanently: 2,
        mediaRequests: ids.length * STEPS.length * 2,
        rendersSeenAsMiss: renders,
        bytesReceived: bytes,
        uploadPastQuota: { status: refused.status, body: await refused.json() },
      },
      usage: { storageBytes: usage.storageBytes, assets: usage.assets, quotas: usage.quotas, today },
      audit: audit.events.reduce<Record<string, number>>((n, e) => ({ ...n, [e.action]: (n[e.action] ?? 0) + 1 }), {}),
    };
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  } finally {
    await management.close();
    await media.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
