import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import sharp from "sharp";
import { ApiError, MediaPlatformClient, mediaUrl, step } from "@media-platform/client";
import { FIXTURES_DIR } from "./support/memory-store";
import {
  MANAGEMENT_READY,
  MEDIA_READY,
  REPO_ROOT,
  startServiceProcess,
  stopServiceProcess,
  type ServiceProcess,
} from "./support/service-process";

/**
 * End to end on the embedded defaults: both services as real processes (`node --import tsx`),
 * sharing one temp DATA_DIR (PGlite + filesystem blobs). Upload through the management API,
 * then fetch a transformation URL from the media service: MISS, then HIT with the same bytes.
 */

const ROOT = REPO_ROOT;
const execFileAsync = promisify(execFile);

describe("end to end: management upload -> media MISS -> HIT", () => {
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  let media: ServiceProcess | undefined;
  let management: ServiceProcess | undefined;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), "media-e2e-"));
    env = {
      ...process.env,
      HOST: "127.0.0.1",
      DATA_DIR: dataDir,
      PGLITE_DIR: path.join(dataDir, "pg"),
      STORAGE_DRIVER: "fs",
      STORAGE_DIR: path.join(dataDir, "blobs"),
      DATABASE_URL: "",
      REDIS_URL: "",
      MEDIA_SIGNING_KEY: "",
      AUTH_JWKS_URL: "",
      AUTH_PUBLIC_KEY: "",
      AUTH_JWT_SECRET: `e2e-${randomUUID()}`,
      LOG_LEVEL: "warn",
      MEDIA_PORT: "0",
      MANAGEMENT_PORT: "0",
    };
    media = await startServiceProcess("services/media/src/index.ts", env, MEDIA_READY);
    management = await startServiceProcess(
      "services/management/src/index.ts",
      { ...env, MEDIA_PUBLIC_URL: media.url },
      MANAGEMENT_READY,
    );
  }, 180_000);

  afterAll(async () => {
    await Promise.all([stopServiceProcess(media), stopServiceProcess(management)]);
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  /**
   * A token from the CLI, run without blocking this process: a blocked event loop would miss the
   * services closing their idle keep-alive connections, and the next request would be sent on one.
   */
  async function tokenFor(workspace: string): Promise<string> {
    const { stdout, stderr } = await execFileAsync(
      process.execPath,
      ["--import", "tsx", "services/management/src/cli/token.ts", "--workspace", workspace],
      { cwd: ROOT, env, encoding: "utf8" },
    );
    expect(stderr).toBe("");
    return stdout.trim();
  }

  it("uploads astronaut.png and serves /thumbnail:size=256/<id>.png as MISS, then HIT", async () => {
    const token = await tokenFor(randomUUID());

    const form = new FormData();
    const original = await readFile(path.join(FIXTURES_DIR, "astronaut.png"));
    form.append("file", new Blob([original], { type: "image/png" }), "astronaut.png");
    const upload = await fetch(`${management!.url}/v1/assets/upload`, {
      method: "POST",
      headers: { Authorization: `Bearer ${token}` },
      body: form,
    });
    const asset = (await upload.json()) as { id: string; mimeType?: string };
    expect(upload.status).toBe(201);
    expect(asset.id).toMatch(/^[0-9a-f-]{36}$/);

    const url = `${media!.url}/thumbnail:size=256/${asset.id}.png`;
    const miss = await fetch(url);
    const missBody = Buffer.from(await miss.arrayBuffer());
    expect(miss.status).toBe(200);
    expect(miss.headers.get("x-cache")).toBe("MISS");
    expect(miss.headers.get("content-type")).toBe("image/png");
    const meta = await sharp(missBody).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(["png", 256, 256]);

    const hit = await fetch(url);
    const hitBody = Buffer.from(await hit.arrayBuffer());
    expect(hit.status).toBe(200);
    expect(hit.headers.get("x-cache")).toBe("HIT");
    expect(hit.headers.get("etag")).toBe(miss.headers.get("etag"));
    expect(hitBody.equals(missBody)).toBe(true);

    // An id that was never uploaded is a 404 problem from the media service.
    const unknown = await fetch(`${media!.url}/thumbnail:size=256/${randomUUID()}.png`);
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get("content-type")).toMatch(/^application\/problem\+json/);
  });

  it("drives both services through the typed client and the media URL builder", async () => {
    const client = new MediaPlatformClient({ baseUrl: management!.url, token: await tokenFor(randomUUID()) });
    const collection = await client.createCollection("Launches");
    const asset = await client.uploadAsset({
      file: path.join(FIXTURES_DIR, "rocket.jpg"),
      collectionId: collection.id,
      warnAboutDuplicateImages: true,
    });
    expect(asset.duplicates).toEqual([]);
    const again = await client.uploadAsset({
      file: path.join(FIXTURES_DIR, "rocket.jpg"),
      warnAboutDuplicateImages: true,
    });
    expect(again.duplicates).toEqual([expect.objectContaining({ assetId: asset.id, match: "exact", distance: 0 })]);

    await client.updateAsset(asset.id, { userTitle: "Falcon launch", userTags: ["rocket", "spacex"] });
    const found = await client.searchAssets("launches");
    expect(found.assets.map((a) => a.id)).toContain(asset.id);
    const collections = await client.listCollections();
    expect(collections.collections.find((c) => c.id === collection.id)?.assetCount).toBe(1);
    await expect(client.getAsset(randomUUID())).rejects.toMatchObject({ status: 404 });
    await expect(client.getAsset(randomUUID())).rejects.toBeInstanceOf(ApiError);

    // The asset's own example URL and a chained URL from the builder both render (MISS, then HIT).
    const example = await fetch(asset.mediaUrl);
    expect([example.status, example.headers.get("content-type")]).toEqual([200, "image/jpeg"]);
    const url = mediaUrl(media!.url, asset.id, "jpg", [
      step("crop", { width: 400, height: 400, gravity: "west" }),
      step("grayscale"),
      step("thumbnail", { size: 128 }),
    ]);
    expect(url).toBe(
      `${media!.url}/crop:width=400:height=400:gravity=west/grayscale/thumbnail:size=128/${asset.id}.jpg`,
    );
    const first = await fetch(url);
    const pixels = await sharp(Buffer.from(await first.arrayBuffer()))
      .raw()
      .toBuffer({ resolveWithObject: true });
    expect([first.status, first.headers.get("x-cache"), pixels.info.width, pixels.info.height]).toEqual([
      200,
      "MISS",
      128,
      128,
    ]);
    // Grey: either a one-channel file, or R, G and B within JPEG rounding of each other.
    let spread = 0;
    const colour = Math.min(3, pixels.info.channels);
    for (let i = 0; i < pixels.data.length; i += pixels.info.channels) {
      const px = pixels.data.subarray(i, i + colour);
      spread = Math.max(spread, Math.max(...px) - Math.min(...px));
    }
    expect(spread).toBeLessThanOrEqual(2);
    expect((await fetch(url)).headers.get("x-cache")).toBe("HIT");
    expect(() => mediaUrl(media!.url, asset.id, "jpg", [step("thumbnail", { size: 20 })])).toThrow(/thumbnail\.size/);
  });
});
