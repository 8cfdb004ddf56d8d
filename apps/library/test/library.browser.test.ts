/**
 * The media library in headless Chromium (Debian's /usr/bin/chromium, or CHROMIUM_PATH) against
 * both services started as `pnpm start` starts them, in embedded mode on free ports: sign-in,
 * drag-and-drop upload, search, tags, focal point, the URL studio, trash and restore, plus
 * accessibility (axe-core), both widths, the Content-Security-Policy and third-party requests.
 * A failing step leaves a screenshot in test-artifacts/library/.
 * LIBRARY_SCREENSHOTS=<folder> also saves the documentation screenshots there.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { buildLibrary } from "../../../scripts/library-build";
import { CHROMIUM, launchChromium } from "../../../test/support/chromium";
import { freePort } from "../../../test/support/net";

const root = path.resolve(__dirname, "../../..");
const CORPUS = path.resolve(root, "../shared/fixtures/corpus/sharp");
const ARTIFACTS = path.join(root, "test-artifacts", "library");
const DOC_SHOTS = process.env.LIBRARY_SCREENSHOTS ? path.resolve(root, process.env.LIBRARY_SCREENSHOTS) : null;
const WORKSPACE = "browser-test";

if (!fs.existsSync(CORPUS)) throw new Error(`the image corpus is missing: ${CORPUS}`);
if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is not installed (apt-get install chromium)`);

const corpus = (name: string): Buffer => fs.readFileSync(path.join(CORPUS, name));

async function waitReady(url: string, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 45_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`service exited (${child.exitCode}): ${log()}`);
    const ok = await fetch(`${url}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} not ready in 45 s: ${log()}`);
}

let dataDir: string;
let management: string;
let media: string;
const children: ChildProcess[] = [];
let context: BrowserContext;
let page: Page;
const requests: string[] = [];
const consoleErrors: string[] = [];

/** Runs one part of the journey; on failure keeps a screenshot of the page as it was. */
async function step(name: string, body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (error) {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true }).catch(() => undefined);
    throw error;
  }
}

async function axeViolations(): Promise<string[]> {
  // Evaluated through the DevTools protocol, which the page's script-src does not govern.
  const source = fs.readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
  await page.evaluate(source);
  const results = await page.evaluate(async () => {
    const axe = (
      globalThis as unknown as {
        axe: { run(): Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> };
      }
    ).axe;
    return (await axe.run()).violations;
  });
  return results
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}

async function noHorizontalOverflow(): Promise<void> {
  const [scroll, inner] = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
  expect(scroll).toBeLessThanOrEqual(inner);
}

beforeAll(async () => {
  buildLibrary({ quiet: true });
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "library-browser-"));
  const [managementPort, mediaPort] = [await freePort(), await freePort()];
  management = `http://127.0.0.1:${managementPort}`;
  media = `http://127.0.0.1:${mediaPort}`;
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME };
  Object.assign(env, {
    DATA_DIR: dataDir,
    HOST: "127.0.0.1",
    MANAGEMENT_PORT: String(managementPort),
    MEDIA_PORT: String(mediaPort),
    MEDIA_PUBLIC_URL: media,
    LOG_LEVEL: "warn",
  });
  for (const [entry, url] of [
    ["services/management/src/index.ts", management],
    ["services/media/src/index.ts", media],
  ] as const) {
    let output = "";
    const child = spawn(process.execPath, ["--import", "tsx", path.join(root, entry)], {
      cwd: root,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout!.on("data", (c: Buffer) => (output = (output + c.toString()).slice(-4000)));
    child.stderr!.on("data", (c: Buffer) => (output = (output + c.toString()).slice(-4000)));
    children.push(child);
    await waitReady(url, child, () => output);
  }
  context = await launchChromium("library", { viewport: { width: 1280, height: 800 } });

  page = context.pages()[0] ?? (await context.newPage());
  page.on("request", (r) => requests.push(r.url()));
  page.on("console", (m) => {
    if (m.type() === "error") consoleErrors.push(m.text());
  });
  page.on("pageerror", (e) => consoleErrors.push(e.message));
  // Every Content-Security-Policy violation, counted in the page (an init script is not a page script).
  await context.addInitScript(() => {
    const w = globalThis as unknown as { cspViolations: string[] };
    w.cspViolations = [];
    document.addEventListener("securitypolicyviolation", (e) =>
      w.cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`),
    );
  });
  page.on("dialog", (d) => void d.accept());
}, 120_000);

afterAll(async () => {
  await context?.close().catch(() => undefined);
  for (const child of children) if (child.exitCode === null) child.kill("SIGTERM");
  await Promise.all(children.map((c) => (c.exitCode !== null ? null : new Promise((r) => c.once("exit", r)))));
  fs.rmSync(dataDir, { recursive: true, force: true });
}, 30_000);

/** Drops files on the drop zone as a user's drag and drop does (a DataTransfer of Files). */
async function dropFiles(files: { name: string; type: string; bytes: Buffer }[]): Promise<void> {
  const transfer = await page.evaluateHandle(
    (list) => {
      const dt = new DataTransfer();
      for (const f of list) {
        const bytes = Uint8Array.from(atob(f.base64), (c) => c.charCodeAt(0));
        dt.items.add(new File([bytes], f.name, { type: f.type }));
      }
      return dt;
    },
    files.map((f) => ({ name: f.name, type: f.type, base64: f.bytes.toString("base64") })),
  );
  await page.dispatchEvent('[data-testid="drop-zone"]', "drop", { dataTransfer: transfer });
}

const cards = () => page.locator(".grid .card");

it("signs in, uploads, searches, edits, sets a focal point, builds a URL, trashes and restores", async () => {
  let harbourId = "";

  await step("sign-in", async () => {
    const response = await page.goto(`${management}/library`);
    expect(response?.status()).toBe(200);
    expect(response?.headers()["content-security-policy"]).toContain("script-src 'self'");
    await page.getByLabel("Workspace").fill(WORKSPACE);
    await page.getByRole("button", { name: "Sign in as developer" }).click();
    await page.getByRole("heading", { name: "Library", exact: true }).waitFor();
    // The token stays in sessionStorage, never in the address.
    expect(await page.evaluate(() => sessionStorage.getItem("media-library-token"))).toMatch(/^ey/);
    expect(page.url()).not.toContain("ey");
  });

  await step("upload", async () => {
    await dropFiles([
      { name: "Landscape_1.jpg", type: "image/jpeg", bytes: corpus("Landscape_1.jpg") },
      { name: "flowers.jpeg", type: "image/jpeg", bytes: corpus("flowers.jpeg") },
      { name: "corrupt-header.jpg", type: "image/jpeg", bytes: corpus("corrupt-header.jpg") },
    ]);
    await page.locator('.upload-item[data-state="done"]').nth(1).waitFor();
    const refused = page.locator('.upload-item[data-state="refused"]');
    await refused.waitFor();
    expect(await page.locator('.upload-item[data-state="uploading"]').count()).toBe(0);
    // The server's problem detail, as sent.
    expect(await refused.locator(".error").textContent()).toMatch(/^Refused: .+/);
    expect(await page.locator("#total-progress").getAttribute("value")).toBe(
      await page.locator("#total-progress").getAttribute("max"),
    );
    await expect(cards()).toHaveCountEventually(2);
    await expect(page.getByTestId("count")).toHaveTextEventually("2 assets");
    // Each card shows its thumbnail from the media service.
    await page.waitForFunction(() =>
      [...document.querySelectorAll<HTMLImageElement>(".grid img.image")].every(
        (i) => i.complete && i.naturalWidth > 0,
      ),
    );
    expect(await axeViolations()).toEqual([]);
  });

  await step("edit-title-and-tags", async () => {
    await page.locator('.card a[aria-label="Landscape_1.jpg"]').click();
    await page.getByRole("heading", { name: "Landscape_1.jpg" }).waitFor();
    harbourId = /#\/assets\/([0-9a-f-]+)/.exec(page.url())![1]!;
    await page.getByLabel("Title").fill("Harbour at dusk");
    await page.getByLabel("Title").press("Enter");
    await page.getByRole("heading", { name: "Harbour at dusk" }).waitFor();
    await page.getByLabel("Tags (comma-separated)").fill("boats, evening , boats");
    await page.getByLabel("Tags (comma-separated)").press("Enter");
    await page.locator(".status", { hasText: "Tags saved" }).waitFor();
    expect(await page.locator("ul.tags li").allTextContents()).toEqual(["boats", "evening"]);
    expect(await axeViolations()).toEqual([]);
  });

  await step("search", async () => {
    await page.getByRole("link", { name: "Library", exact: true }).click();
    await page.getByLabel("Search").fill("dusk");
    await expect(page.getByTestId("count")).toHaveTextEventually("1 asset");
    await expect(cards()).toHaveCountEventually(1);
    expect(await cards().locator(".title").textContent()).toBe("Harbour at dusk");
    await page.getByLabel("Search").fill("");
    await page.getByLabel("Tag").fill("evening");
    await expect(page.getByTestId("count")).toHaveTextEventually("1 asset");
    await page.getByLabel("Tag").fill("");
    await expect(cards()).toHaveCountEventually(2);
  });

  await step("focal-point", async () => {
    await page.goto(`${management}/library#/assets/${harbourId}`);
    const thumb = page.getByTestId("thumbnail");
    await page.waitForFunction(() => {
      const img = document.querySelector<HTMLImageElement>('[data-testid="thumbnail"]');
      return img !== null && img.complete && img.naturalWidth === 256;
    });
    const before = { src: await thumb.getAttribute("src"), shot: await thumb.screenshot() };
    const image = page.getByTestId("focal-image");
    const box = (await image.boundingBox())!;
    await image.click({ position: { x: box.width * 0.05, y: box.height * 0.5 } });
    await page.locator(".focal-marker").waitFor();
    await page.waitForFunction((old) => {
      const img = document.querySelector<HTMLImageElement>('[data-testid="thumbnail"]');
      return img !== null && img.getAttribute("src") !== old && img.complete && img.naturalWidth === 256;
    }, before.src);
    expect((await thumb.screenshot()).equals(before.shot)).toBe(false);
    expect(await page.locator("figcaption").textContent()).toMatch(/now 0\.0\d+, 0\.[45]\d*/);
    // The keyboard's way: fractions typed in.
    await page.getByLabel("Focal x").fill("0.9");
    await page.getByLabel("Focal y").fill("0.25");
    await page.getByLabel("Focal y").press("Enter");
    await expect(page.locator("figcaption")).toHaveTextEventually(/now 0\.9, 0\.25/);
  });

  await step("studio", async () => {
    await page.getByRole("link", { name: "Open in URL studio" }).click();
    await page.getByRole("heading", { name: "URL studio" }).waitFor();
    await page.getByLabel("Transformation").selectOption("resize");
    await page.getByRole("button", { name: "Add step" }).click();
    await page.getByLabel("width value").fill("200");
    await page.getByLabel("Transformation").selectOption("grayscale");
    await page.getByRole("button", { name: "Add step" }).click();
    const facts = page.getByTestId("preview-facts");
    await expect(facts).toHaveTextEventually(/^MISS · 200 × 150 px · image\/jpeg/);
    expect(await page.getByTestId("media-url").textContent()).toBe(
      `${media}/resize:width=200/grayscale/${harbourId}.jpg`,
    );
    // Grey pixels: every sampled pixel has R = G = B (within JPEG rounding).
    const spread = await page.evaluate(() => {
      const img = document.querySelector<HTMLImageElement>('[data-testid="studio-preview"]')!;
      const canvas = document.createElement("canvas");
      canvas.width = img.naturalWidth;
      canvas.height = img.naturalHeight;
      const ctx = canvas.getContext("2d")!;
      ctx.drawImage(img, 0, 0);
      const data = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
      let max = 0;
      for (let i = 0; i < data.length; i += 4)
        max = Math.max(max, Math.abs(data[i]! - data[i + 1]!), Math.abs(data[i + 1]! - data[i + 2]!));
      return max;
    });
    expect(spread).toBeLessThanOrEqual(3);
    // The same URL again: the media cache answers.
    await page.getByLabel("width value").fill("201");
    await expect(facts).toHaveTextEventually(/^MISS · 201 × 15[01] px/);
    await page.getByLabel("width value").fill("200");
    await expect(facts).toHaveTextEventually(/^HIT · 200 × 150 px/);
    expect(await axeViolations()).toEqual([]);
    if (DOC_SHOTS) {
      await page.evaluate(() => window.scrollTo(0, 0));
      await page.screenshot({ path: path.join(DOC_SHOTS, "studio.png") });
    }
    // A value the service refuses: its problem detail next to the parameter it names.
    await page.getByLabel("width value").fill("0");
    const error = page.locator('.step[data-step="resize"] .param[data-param="width"] [data-testid="param-error"]');
    await error.waitFor();
    expect(await error.textContent()).toMatch(/^"0" is below the allowed range/);
  });

  await step("studio-quality-auto", async () => {
    // A quality takes auto besides the numbers: chosen in the studio, quality=auto is in the URL.
    await page.getByLabel("width value").fill("200");
    await page.getByLabel("Transformation").selectOption("format");
    await page.getByRole("button", { name: "Add step" }).click();
    const format = page.locator('.step[data-step="format"]');
    await format.getByLabel("type", { exact: true }).selectOption("webp");
    await format.getByLabel("Set quality").check();
    const kind = format.getByLabel("quality kind", { exact: true });
    expect(await kind.locator("option").allTextContents()).toEqual(["a number", "auto"]);
    await kind.selectOption("auto");
    const url = page.getByTestId("media-url");
    const chain = `${media}/resize:width=200/grayscale/format:type=webp`;
    await expect(url).toHaveTextEventually(`${chain}:quality=auto/${harbourId}.jpg`);
    await expect(page.getByTestId("preview-facts")).toHaveTextEventually(/^MISS · 200 × 150 px · image\/webp/);
    expect(await format.getByLabel("quality value").isDisabled()).toBe(true);
    // Back to a number, typed in.
    await kind.selectOption({ label: "a number" });
    await format.getByLabel("quality value").fill("60");
    await expect(url).toHaveTextEventually(`${chain}:quality=60/${harbourId}.jpg`);
    expect(await axeViolations()).toEqual([]);
  });

  await step("trash-and-restore", async () => {
    await page.goto(`${management}/library#/assets/${harbourId}`);
    await page.getByRole("button", { name: "Move to trash" }).click();
    await page.getByRole("heading", { name: "Trash", exact: true }).waitFor();
    await expect(cards()).toHaveCountEventually(1);
    await page.getByRole("button", { name: "Restore Harbour at dusk" }).click();
    await expect(cards()).toHaveCountEventually(0);
    await page.getByRole("link", { name: "Library", exact: true }).click();
    await expect(cards()).toHaveCountEventually(2);
    if (DOC_SHOTS) {
      await page.waitForFunction(() =>
        [...document.querySelectorAll<HTMLImageElement>(".grid img.image")].every(
          (i) => i.complete && i.naturalWidth > 0,
        ),
      );
      await page.waitForTimeout(500);
      await page.screenshot({ path: path.join(DOC_SHOTS, "library.png") });
    }
  });

  await step("duplicate-warning", async () => {
    await dropFiles([{ name: "again.jpg", type: "image/jpeg", bytes: corpus("Landscape_1.jpg") }]);
    const duplicate = page.locator(".upload-item", { hasText: "again.jpg" }).locator(".duplicates img");
    await duplicate.waitFor();
    expect(await duplicate.getAttribute("alt")).toBe("Existing asset Harbour at dusk");
    await page.waitForFunction(() => {
      const img = document.querySelector<HTMLImageElement>(".duplicates img");
      return img !== null && img.complete && img.naturalWidth === 256;
    });
    await expect(cards()).toHaveCountEventually(3);
  });

  await step("widths", async () => {
    for (const width of [375, 1440]) {
      await page.setViewportSize({ width, height: 800 });
      for (const hash of ["#/", `#/assets/${harbourId}`, `#/assets/${harbourId}/studio`]) {
        await page.goto(`${management}/library${hash}`);
        await page.locator("h1").first().waitFor();
        await page.waitForLoadState("networkidle");
        await noHorizontalOverflow();
      }
    }
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  await step("sign-out-on-401", async () => {
    await page.evaluate(() => sessionStorage.setItem("media-library-token", "not-a-token"));
    // A fresh load reads the (now invalid) token; its first API call answers 401.
    await page.reload();
    await page.getByLabel("Bearer token").waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem("media-library-token"))).toBeNull();
  });

  await step("infinite-scroll", async () => {
    // 45 assets in a fresh workspace: the grid shows a page of 40, the rest as the end scrolls into view.
    const { token } = (await (
      await fetch(`${management}/library/dev-token`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ workspaceId: "browser-scroll" }),
      })
    ).json()) as { token: string };
    const png = corpus("2x2_fdcce6.png");
    for (let i = 0; i < 45; i++) {
      const form = new FormData();
      form.append("file", new Blob([new Uint8Array(png)], { type: "image/png" }), `tile-${i}.png`);
      const res = await fetch(`${management}/v1/assets/upload`, {
        method: "POST",
        headers: { Authorization: `Bearer ${token}` },
        body: form,
      });
      expect(res.status).toBe(201);
    }
    await page.goto(`${management}/library#/`);
    await page.getByLabel("Workspace").fill("browser-scroll");
    await page.getByRole("button", { name: "Sign in as developer" }).click();
    await expect(page.getByTestId("count")).toHaveTextEventually("45 assets");
    expect(await cards().count()).toBe(40);
    await page.locator(".sentinel").scrollIntoViewIfNeeded();
    await expect(cards()).toHaveCountEventually(45);
    expect(await page.getByRole("button", { name: "Load more" }).count()).toBe(0);
  });

  // Only the two services (and data:/blob: URLs the page makes itself); no policy violations.
  const foreign = requests.filter(
    (u) => !u.startsWith(`${management}/`) && !u.startsWith(`${media}/`) && !/^(data|blob):/.test(u),
  );
  expect(foreign).toEqual([]);
  expect(await page.evaluate(() => (globalThis as unknown as { cspViolations: string[] }).cspViolations)).toEqual([]);
  expect(consoleErrors.filter((e) => !/401|Unauthorized|status of 4\d\d/.test(e))).toEqual([]);
}, 90_000);

// Polling matchers: the page updates after debounces and network round trips.
declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace jest {
    interface Matchers<R> {
      toHaveCountEventually(count: number): Promise<R>;
      toHaveTextEventually(text: string | RegExp): Promise<R>;
    }
  }
}

async function poll<T>(read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  const deadline = Date.now() + 10_000;
  let value = await read();
  while (!ok(value) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    value = await read();
  }
  return value;
}

expect.extend({
  async toHaveCountEventually(locator: { count(): Promise<number> }, count: number) {
    const seen = await poll(
      () => locator.count(),
      (n) => n === count,
    );
    return { pass: seen === count, message: () => `expected ${count} elements, saw ${seen}` };
  },
  async toHaveTextEventually(locator: { textContent(): Promise<string | null> }, text: string | RegExp) {
    const matches = (s: string | null) => (typeof text === "string" ? (s ?? "").trim() === text : text.test(s ?? ""));
    const seen = await poll(() => locator.textContent(), matches);
    return { pass: matches(seen), message: () => `expected text ${String(text)}, saw ${JSON.stringify(seen)}` };
  },
});
