/**
 * The library's resumable uploads in headless Chromium: a file above one tus chunk (5 MiB) goes
 * through /v1/assets/tus (POST, then PATCHes) with byte progress in its row, pauses without a
 * byte sent while paused and resumes from the server's offset, and after a reload, dropped again,
 * continues from the offset the server holds (HEAD, then a PATCH from there) into one asset. The
 * page's upload is throttled through the DevTools protocol so each step happens mid-upload.
 */
import type { Request } from "playwright-core";
import sharp from "sharp";
import { dropFiles, shoot, signIn, startStack, step as runStep, type Stack } from "./support/library-stack";

/** The transport's chunk (and threshold): files above it go through tus. */
const CHUNK = 5 * 1024 * 1024;
const SIDE = 1600;
/** Upload bandwidth of the page: slow enough that a chunk is still travelling when the test acts. */
const UPLOAD_BYTES_PER_SECOND = 1024 * 1024;

let stack: Stack;
const step = (name: string, body: () => Promise<void>) => runStep(stack, name, body);

beforeAll(async () => {
  stack = await startStack("tus");
  const cdp = await stack.context.newCDPSession(stack.page);
  await cdp.send("Network.enable");
  await cdp.send("Network.emulateNetworkConditions", {
    offline: false,
    latency: 0,
    downloadThroughput: -1,
    uploadThroughput: UPLOAD_BYTES_PER_SECOND,
  });
}, 300_000);
afterAll(async () => {
  await stack?.stop();
}, 30_000);

/** A PNG of seeded noise (it does not compress): SIDE x SIDE, a little above 7 MiB, the same bytes every run. */
async function noisyPng(seed: number): Promise<Buffer> {
  const raw = Buffer.alloc(SIDE * SIDE * 3);
  let state = seed >>> 0 || 1;
  for (let i = 0; i < raw.length; i++) {
    // xorshift32
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    raw[i] = state & 0xff;
  }
  const png = await sharp(raw, { raw: { width: SIDE, height: SIDE, channels: 3 } })
    .png({ compressionLevel: 1 })
    .toBuffer();
  expect(png.length).toBeGreaterThan(CHUNK);
  return png;
}

/** The tus and multipart requests the page makes, in order. */
interface Sent {
  method: string;
  url: string;
  offset: number | null;
}
function watchUploads(): { sent: Sent[]; patches(): Sent[]; stop(): void } {
  const sent: Sent[] = [];
  const listener = (r: Request) => {
    const url = r.url();
    if (!url.includes("/v1/assets/tus") && !url.endsWith("/v1/assets/upload")) return;
    const offset = r.headers()["upload-offset"];
    sent.push({ method: r.method(), url, offset: offset === undefined ? null : Number(offset) });
  };
  stack.page.on("request", listener);
  return {
    sent,
    patches: () => sent.filter((s) => s.method === "PATCH"),
    stop: () => stack.page.off("request", listener),
  };
}

/** The first PATCH answered 204: one chunk is on the server. */
const firstChunkStored = () =>
  stack.page.waitForResponse((r) => r.request().method() === "PATCH" && r.url().includes("/v1/assets/tus/"), {
    timeout: 60_000,
  });

const row = (name: string) => stack.page.locator(".upload-item", { hasText: name });
const inState = (name: string, state: string, timeout = 20_000) =>
  stack.page.locator(`.upload-item[data-state="${state}"]`, { hasText: name }).waitFor({ timeout });

async function token(): Promise<string> {
  return (await stack.page.evaluate(() => sessionStorage.getItem("media-library-token")))!;
}

/** The workspace's assets through the API. */
async function listed(): Promise<{
  count: number;
  assets: { width: number; height: number; originalFilename?: string }[];
}> {
  const res = await fetch(`${stack.management}/v1/assets`, { headers: { Authorization: `Bearer ${await token()}` } });
  expect(res.status).toBe(200);
  return (await res.json()) as { count: number; assets: { width: number; height: number }[] };
}

/** Bytes a PATCH carries: the rest of the chunk from its offset (an aborted one sent at most this). */
const patchBytes = (size: number, s: Sent) => Math.min(CHUNK, size - s.offset!);

it("sends a large file through tus with byte progress into one asset", async () => {
  const { page } = stack;
  const bytes = await noisyPng(1);
  const uploads = watchUploads();
  await step("progress", async () => {
    await signIn(stack, "tus-progress");
    await dropFiles(page, [{ name: "noise-one.png", type: "image/png", bytes }]);
    // Byte progress while the file travels: some of it sent, not all.
    await page.waitForFunction(
      (size) => {
        const p = document.querySelector<HTMLProgressElement>('progress[aria-label="noise-one.png sent"]');
        return p !== null && p.value > 0 && p.value < size && p.max === size;
      },
      bytes.length,
      { timeout: 60_000 },
    );
    await expect(row("noise-one.png").locator(".upload-state")).toHaveTextEventually(/^Uploading .+ of .+$/);
    await shoot(stack, "progress");
    await inState("noise-one.png", "done", 120_000);
    uploads.stop();
    expect(uploads.sent.some((s) => s.url.endsWith("/v1/assets/upload"))).toBe(false);
    expect(uploads.sent[0]!.method).toBe("POST");
    expect(uploads.sent.slice(1).map((s) => s.method)).toEqual(["PATCH", "PATCH"]);
    expect(uploads.patches().map((s) => s.offset)).toEqual([0, CHUNK]);
    await expect(page.getByTestId("count")).toHaveTextEventually("1 asset");
    await page.getByRole("button", { name: "Clear finished" }).click();
    await expect(page.locator(".grid .card")).toHaveCountEventually(1);
    const list = await listed();
    expect(list.count).toBe(1);
    expect([list.assets[0]!.width, list.assets[0]!.height]).toEqual([SIDE, SIDE]);
  });
}, 240_000);

it("pauses mid-upload without sending, then resumes from the server's offset", async () => {
  const { page } = stack;
  const bytes = await noisyPng(2);
  const uploads = watchUploads();
  await step("pause-resume", async () => {
    await signIn(stack, "tus-pause");
    const stored = firstChunkStored();
    await dropFiles(page, [{ name: "noise-two.png", type: "image/png", bytes }]);
    expect((await stored).status()).toBe(204);
    // The second chunk is on its way: pause it.
    await row("noise-two.png").getByRole("button", { name: "Pause" }).click();
    await inState("noise-two.png", "paused");
    await expect(row("noise-two.png").locator(".upload-state")).toHaveTextEventually("Paused");
    await shoot(stack, "paused");
    const whilePaused = uploads.sent.length;
    // A while paused: nothing goes out and the row stays paused.
    await page.waitForTimeout(2000);
    expect(uploads.sent.length).toBe(whilePaused);
    expect(await row("noise-two.png").getAttribute("data-state")).toBe("paused");
    await row("noise-two.png").getByRole("button", { name: "Resume" }).click();
    await inState("noise-two.png", "done", 120_000);
    uploads.stop();
    const after = uploads.sent.slice(whilePaused);
    // Resumed where the server stands: a HEAD of the same upload, a PATCH from its offset, no new upload.
    const uploadUrl = uploads.sent.find((s) => s.method === "PATCH")!.url;
    expect(after[0]).toMatchObject({ method: "HEAD", url: uploadUrl });
    expect(after.filter((s) => s.method === "POST")).toEqual([]);
    const resumed = after.filter((s) => s.method === "PATCH");
    expect(resumed.length).toBeGreaterThan(0);
    expect(resumed[0]!.offset).toBeGreaterThanOrEqual(CHUNK);
    expect(uploads.sent.filter((s) => s.method === "POST")).toHaveLength(1);
    const total = uploads.patches().reduce((sum, s) => sum + patchBytes(bytes.length, s), 0);
    expect(total).toBeLessThan(2 * bytes.length);
    const list = await listed();
    expect(list.count).toBe(1);
    expect([list.assets[0]!.width, list.assets[0]!.height]).toEqual([SIDE, SIDE]);
  });
}, 240_000);

it("after a reload, the same file dropped again continues from the server's offset", async () => {
  const { page } = stack;
  const bytes = await noisyPng(3);
  // The same file from disk both times: its modification time is part of its fingerprint.
  const file = { name: "noise-three.png", type: "image/png", bytes, lastModified: 1_700_000_000_000 };
  const uploads = watchUploads();
  await step("reload", async () => {
    await signIn(stack, "tus-reload");
    const stored = firstChunkStored();
    await dropFiles(page, [file]);
    expect((await stored).status()).toBe(204);
    const uploadUrl = uploads.patches()[0]!.url;
    await page.reload();
    await page.getByRole("heading", { name: "Library", exact: true }).waitFor();
    // What the reloaded page sends (the old page's second PATCH went out before it).
    const afterReload = uploads.sent.length;
    await dropFiles(page, [file]);
    await inState("noise-three.png", "done", 120_000);
    uploads.stop();
    const after = uploads.sent.slice(afterReload);
    expect(after.filter((s) => s.method === "POST")).toEqual([]);
    expect(after[0]).toMatchObject({ method: "HEAD", url: uploadUrl });
    const resumed = after.filter((s) => s.method === "PATCH");
    expect(resumed.length).toBeGreaterThan(0);
    expect(resumed.every((s) => s.url === uploadUrl)).toBe(true);
    expect(resumed[0]!.offset).toBeGreaterThan(0);
    await shoot(stack, "reloaded");
    const list = await listed();
    expect(list.count).toBe(1);
    expect([list.assets[0]!.width, list.assets[0]!.height]).toEqual([SIDE, SIDE]);
  });
}, 240_000);
