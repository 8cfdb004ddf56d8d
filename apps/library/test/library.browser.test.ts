/**
 * The media library in headless Chromium (Debian's /usr/bin/chromium, or CHROMIUM_PATH) against
 * both services started as `pnpm start` starts them, in embedded mode on free ports, without URL
 * signing (library.signed.browser.test.ts runs the signed deployment): sign-in, a batch of 50
 * files through the upload queue (with the server busy part of the time), search, tags, focal
 * point, the URL studio, multi-select and bulk actions, the trash with its thumbnails, and the
 * first view of a 200-asset grid. axe-core on every view; a screenshot of every view in
 * test-artifacts/library/ (and of a failing step). LIBRARY_SCREENSHOTS=<folder> also saves the
 * documentation screenshots there.
 */
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import sharp from "sharp";
import {
  ARTIFACTS,
  apiUpload,
  axeViolations,
  corpus,
  devToken,
  dropFiles,
  imagesLoaded,
  noHorizontalOverflow,
  root,
  shoot,
  signIn,
  startStack,
  step as runStep,
  type Stack,
} from "./support/library-stack";

const DOC_SHOTS = process.env.LIBRARY_SCREENSHOTS ? path.resolve(root, process.env.LIBRARY_SCREENSHOTS) : null;
const WORKSPACE = "browser-test";
/** The test's upload cap: a file above it is refused before a byte is sent. */
const MAX_UPLOAD_BYTES = 3 * 1024 * 1024;
/** Words that belong in developer documentation, not in the studio's tooltips. */
const DEVELOPER_WORDS = /Extension|spec\b|MEDIA_|PATCH|\/v1\/|libvips|SSIMULACRA|maxDimension|safety cap/;

let stack: Stack;
const step = (name: string, body: () => Promise<void>) => runStep(stack, name, body);

beforeAll(async () => {
  stack = await startStack("unsigned", { MAX_UPLOAD_BYTES: String(MAX_UPLOAD_BYTES) });
}, 240_000);

afterAll(async () => {
  await stack?.stop();
}, 30_000);

const cards = () => stack.page.locator(".grid .card");

/** Distinct small PNGs (one colour each): a batch as a camera card would give, only smaller. */
function tiles(count: number): Promise<{ name: string; type: string; bytes: Buffer }[]> {
  return Promise.all(
    Array.from({ length: count }, async (_, i) => ({
      name: `tile-${String(i).padStart(2, "0")}.png`,
      type: "image/png",
      bytes: await sharp({
        create: { width: 48, height: 32, channels: 3, background: { r: (i * 37) % 256, g: (i * 91) % 256, b: i * 5 } },
      })
        .png()
        .toBuffer(),
    })),
  );
}

/**
 * Holds `count` of the workspace's upload slots with uploads that send their headers and then
 * nothing, as slow phones on the same account do; released by destroying the sockets.
 */
async function holdUploadSlots(count: number, token: string): Promise<() => void> {
  const url = new URL(`${stack.management}/v1/assets/upload`);
  const held: http.ClientRequest[] = [];
  for (let i = 0; i < count; i++) {
    const req = http.request({
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      method: "POST",
      headers: {
        Authorization: `Bearer ${token}`,
        "Content-Type": "multipart/form-data; boundary=held",
        "Content-Length": "100000",
      },
    });
    req.on("error", () => undefined);
    req.write('--held\r\nContent-Disposition: form-data; name="file"; filename="slow.png"\r\n\r\n');
    held.push(req);
  }
  // The server counts a slot from the request's arrival: wait until the held ones are in.
  await new Promise((r) => setTimeout(r, 500));
  return () => held.forEach((r) => r.destroy());
}

it("signs in, uploads a batch, edits, builds URLs, selects in bulk, trashes and restores", async () => {
  const { page, management, media } = stack;
  let harbourId = "";
  const statuses: number[] = [];
  page.on("response", (r) => {
    if (r.url().endsWith("/v1/assets/upload")) statuses.push(r.status());
  });

  await step("sign-in", async () => {
    const response = await page.goto(`${management}/library`);
    expect(response?.status()).toBe(200);
    expect(response?.headers()["content-security-policy"]).toContain("script-src 'self'");
    expect(await axeViolations(page)).toEqual([]);
    await shoot(stack, "sign-in");
    await page.getByLabel("Workspace").fill(WORKSPACE);
    await page.getByRole("button", { name: "Sign in as developer" }).click();
    await page.getByRole("heading", { name: "Library", exact: true }).waitFor();
    // The token stays in sessionStorage, never in the address.
    expect(await page.evaluate(() => sessionStorage.getItem("media-library-token"))).toMatch(/^ey/);
    expect(page.url()).not.toContain("ey");
  });

  await step("upload-batch", async () => {
    // 50 files at once, while two other uploads of the workspace hold two of its four slots.
    const token = (await page.evaluate(() => sessionStorage.getItem("media-library-token")))!;
    const release = await holdUploadSlots(2, token);
    const files = [
      { name: "Landscape_1.jpg", type: "image/jpeg", bytes: corpus("Landscape_1.jpg") },
      ...(await tiles(46)),
      { name: "corrupt-header.jpg", type: "image/jpeg", bytes: corpus("corrupt-header.jpg") },
      { name: "notes.txt", type: "text/plain", bytes: Buffer.from("shopping list\n") },
      { name: "huge-scan.jpg", type: "image/jpeg", bytes: Buffer.alloc(MAX_UPLOAD_BYTES + 1024 * 1024, 0xff) },
    ];
    expect(files).toHaveLength(50);
    await dropFiles(page, files);
    const summary = page.getByTestId("upload-summary");
    // The queue never sends more than the server's limit; the busy answers make files wait, not fail.
    await expect(summary).toHaveTextEventually(/waiting/);
    await shoot(stack, "upload-in-progress");
    await page.waitForTimeout(2500);
    release();
    await expect(summary).toHaveTextEventually("47 of 50 files uploaded · 3 not uploaded", 90_000);
    expect(statuses.filter((s) => s === 503).length).toBeGreaterThan(0);
    expect(statuses.filter((s) => s === 201)).toHaveLength(47);
    // The total counts files finished, not bytes.
    expect(await page.getByTestId("upload-total").getAttribute("value")).toBe("50");
    expect(await page.getByTestId("upload-total").getAttribute("max")).toBe("50");
    // Each refusal says what happened and what to do.
    const reason = (name: string) =>
      page.locator(".upload-item", { hasText: name }).locator(".upload-failure").textContent();
    expect(await reason("notes.txt")).toMatch(/^Format not supported: TXTSave or export it as JPEG, PNG/);
    expect(await reason("huge-scan.jpg")).toMatch(/^File too large: 4\.0 MBFiles can be up to 3\.0 MB/);
    expect(await reason("corrupt-header.jpg")).toMatch(/^Image is damaged or incompleteOpen it in an image editor/);
    // Besides the busy answers, one answer per file sent: the oversized file never left the browser.
    expect(statuses.filter((s) => s !== 503).sort()).toEqual([...Array(47).fill(201), 415, 422]);
    await expect(page.getByTestId("count")).toHaveTextEventually("47 assets");
    const listed = await fetch(`${management}/v1/assets?limit=1`, { headers: { Authorization: `Bearer ${token}` } });
    expect(((await listed.json()) as { count: number }).count).toBe(47);
    expect(await axeViolations(page)).toEqual([]);
    await page.evaluate(() => document.querySelector(".upload-list")?.scrollTo(0, 1e6));
    await shoot(stack, "upload-list");
    // Clear finished: the list goes, the grid comes back up.
    await page.getByRole("button", { name: "Clear finished" }).click();
    expect(await page.locator(".upload-item").count()).toBe(0);
    await imagesLoaded(page);
    await shoot(stack, "grid");
  });

  await step("edit-title-and-tags", async () => {
    // The first file of the batch: the oldest, past the first page; found by its name.
    await page.getByLabel("Search").fill("Landscape");
    await expect(cards()).toHaveCountEventually(1);
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
    expect(await axeViolations(page)).toEqual([]);
    await shoot(stack, "asset-page");
  });

  await step("search", async () => {
    await page.getByRole("link", { name: "Library", exact: true }).click();
    await page.getByLabel("Search").fill("dusk");
    await expect(page.getByTestId("count")).toHaveTextEventually("1 asset");
    await expect(cards()).toHaveCountEventually(1);
    expect(await cards().locator(".title").textContent()).toBe("Harbour at dusk");
    await page.getByLabel("Search").fill("");
    await page.getByLabel("Tag", { exact: true }).fill("evening");
    await expect(page.getByTestId("count")).toHaveTextEventually("1 asset");
    await page.getByLabel("Tag", { exact: true }).fill("");
    await expect(page.getByTestId("count")).toHaveTextEventually("47 assets");
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

  await step("studio-opens-working", async () => {
    await page.getByRole("link", { name: "Open in URL studio" }).click();
    await page.getByRole("heading", { name: "URL studio" }).waitFor();
    // A working first step (the original is 600 px wide: its own width), never an error.
    const facts = page.getByTestId("preview-facts");
    await expect(facts).toHaveTextEventually(/^MISS · 600 × 450 px · image\/jpeg/);
    expect(await page.getByTestId("media-url").textContent()).toBe(`${media}/resize:width=600/${harbourId}.jpg`);
    expect(await page.getByTestId("preview-problem").count()).toBe(0);
    await expect(page.getByTestId("url-facts")).toHaveTextEventually(/Size600 × 450 pxFormatJPEG/);
    expect(await axeViolations(page)).toEqual([]);
    await shoot(stack, "studio", { fullPage: true });
    if (DOC_SHOTS) await page.screenshot({ path: path.join(DOC_SHOTS, "studio.png") });
  });

  await step("studio-help-and-defaults", async () => {
    // Every parameter of every step has one tooltip, written for users.
    const names = await page
      .getByLabel("Transformation")
      .locator("option")
      .evaluateAll((o) => o.map((x) => (x as HTMLOptionElement).value));
    for (const name of names) {
      await page.getByLabel("Transformation").selectOption(name);
      await page.getByRole("button", { name: "Add step" }).click();
      const added = page.locator(`.step[data-step="${name}"]`).last();
      expect(await added.locator(".hint").textContent()).not.toMatch(DEVELOPER_WORDS);
      const params = await added.locator(".param").count();
      for (const range of await added.locator('[data-testid="param-range"]').allTextContents())
        expect(range).not.toMatch(DEVELOPER_WORDS);
      const tips = await added.locator('[data-testid="param-tip"]').allTextContents();
      expect(tips).toHaveLength(params);
      for (const tip of tips) {
        expect(tip.length).toBeGreaterThan(10);
        expect(tip).not.toMatch(DEVELOPER_WORDS);
      }
      await added.getByRole("button", { name: /^Remove/ }).click();
    }
    // The real default of an unset quality: the encoder's for the output format.
    await page.getByLabel("Transformation").selectOption("format");
    await page.getByRole("button", { name: "Add step" }).click();
    const format = page.locator('.step[data-step="format"]');
    const quality = format.locator('.param[data-param="quality"]');
    await format.getByLabel("type", { exact: true }).selectOption("webp");
    expect(await quality.getByTestId("param-range").textContent()).toContain("default 80");
    expect(await quality.getByLabel("quality value").inputValue()).toBe("80");
    await format.getByLabel("type", { exact: true }).selectOption("jpeg");
    expect(await quality.getByTestId("param-range").textContent()).toContain("default 82");
    // quality=auto, then back to a number.
    await format.getByLabel("type", { exact: true }).selectOption("webp");
    await format.getByLabel("Set quality").check();
    const kind = format.getByLabel("quality kind", { exact: true });
    expect(await kind.locator("option").allTextContents()).toEqual(["a number", "auto"]);
    await kind.selectOption("auto");
    const url = page.getByTestId("media-url");
    const chain = `${media}/resize:width=600/format:type=webp`;
    // quality=auto encodes up to four times: a loaded machine takes its time.
    await expect(url).toHaveTextEventually(`${chain}:quality=auto/${harbourId}.jpg`, 60_000);
    await expect(page.getByTestId("preview-facts")).toHaveTextEventually(/^MISS · 600 × 450 px · image\/webp/);
    await kind.selectOption({ label: "a number" });
    await format.getByLabel("quality value").fill("60");
    await expect(url).toHaveTextEventually(`${chain}:quality=60/${harbourId}.jpg`);
    await format.getByRole("button", { name: /^Remove/ }).click();
  });

  await step("studio-chain", async () => {
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
  });

  await step("studio-errors-inline", async () => {
    // A value the service refuses: its problem next to the parameter, and no link to copy.
    await page.getByLabel("width value").fill("0");
    const error = page.locator('.step[data-step="resize"] .param[data-param="width"] [data-testid="param-error"]');
    await error.waitFor();
    expect(await error.textContent()).toMatch(/^"0" is below the allowed range/);
    await expect(page.getByTestId("media-url-pending")).toHaveTextEventually("No link while the steps have an error.");
    expect(await page.getByTestId("media-url").count()).toBe(0);
    expect(await page.getByRole("button", { name: "Copy link" }).count()).toBe(0);
    expect(await page.getByRole("button", { name: "Copy snippet" }).count()).toBe(0);
    expect(await axeViolations(page)).toEqual([]);
    await shoot(stack, "studio-error", { fullPage: true });
  });

  await step("studio-srcset-truth", async () => {
    // Without the resize: the original is 600 px wide, so 640, 960, 1280 and 1920 all give 600.
    await page
      .locator('.step[data-step="resize"]')
      .getByRole("button", { name: /^Remove/ })
      .click();
    await expect(page.locator(".step")).toHaveCountEventually(1);
    const snippet = page.getByTestId("srcset");
    await snippet.waitFor();
    await expect(snippet).toHaveTextEventually(/ 600w"/);
    const text = (await snippet.textContent())!;
    expect([...text.matchAll(/ (\d+)w/g)].map((m) => m[1])).toEqual(["320", "600"]);
    expect(text).toContain(`${media}/grayscale/resize:width=320/${harbourId}.jpg 320w`);
    expect(text).toContain(`${media}/grayscale/resize:width=640/${harbourId}.jpg 600w`);
    // No step at all: the original.
    await page
      .locator('.step[data-step="grayscale"]')
      .getByRole("button", { name: /^Remove/ })
      .click();
    await expect(page.getByTestId("media-url")).toHaveTextEventually(`${media}/original/${harbourId}.jpg`);
    await expect(page.getByTestId("preview-facts")).toHaveTextEventually(/ · 600 × 450 px · image\/jpeg/);
  });

  await step("bulk-select-and-tag", async () => {
    await page.goto(`${management}/library#/`);
    await expect(cards()).toHaveCountEventually(40);
    // Click the first card's box, shift-click the fifth: five selected.
    await cards().nth(0).getByRole("checkbox").click();
    await cards()
      .nth(4)
      .getByRole("checkbox")
      .click({ modifiers: ["Shift"] });
    const bar = page.getByTestId("bulk-bar");
    await expect(bar.locator("p")).toHaveTextEventually("5 selected");
    // The keyboard: from the fifth card, right arrow, space: a sixth.
    await cards().nth(4).locator("a.card-link").focus();
    await page.keyboard.press("ArrowRight");
    expect(await page.evaluate(() => document.activeElement?.closest(".card")?.getAttribute("data-asset-id"))).toBe(
      await cards().nth(5).getAttribute("data-asset-id"),
    );
    await page.keyboard.press("Space");
    await expect(bar.locator("p")).toHaveTextEventually("6 selected");
    // Down a row and back up: the same column.
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("ArrowUp");
    expect(await page.evaluate(() => document.activeElement?.closest(".card")?.getAttribute("data-asset-id"))).toBe(
      await cards().nth(5).getAttribute("data-asset-id"),
    );
    const chosen = await page
      .locator(".grid .card.selected")
      .evaluateAll((c) => c.map((x) => x.getAttribute("data-asset-id")));
    expect(chosen).toHaveLength(6);
    expect(await axeViolations(page)).toEqual([]);
    await shoot(stack, "bulk-selection");
    await bar.getByLabel("Tag", { exact: true }).fill("holiday");
    await bar.getByRole("button", { name: "Add tag" }).click();
    await expect(page.getByTestId("bulk-status")).toHaveTextEventually("Tagged: 6 assets");
    await page.getByLabel("Tag", { exact: true }).fill("holiday");
    await expect(page.getByTestId("count")).toHaveTextEventually("6 assets");
    expect((await cards().evaluateAll((c) => c.map((x) => x.getAttribute("data-asset-id")))).sort()).toEqual(
      [...chosen].sort(),
    );
  });

  await step("bulk-collection-and-select-all", async () => {
    const token = (await page.evaluate(() => sessionStorage.getItem("media-library-token")))!;
    const created = await fetch(`${management}/v1/asset-collections`, {
      method: "POST",
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
      body: JSON.stringify({ name: "Holidays" }),
    });
    const collectionId = ((await created.json()) as { id: string }).id;
    await page.reload();
    await page.getByLabel("Tag", { exact: true }).fill("holiday");
    await expect(page.getByTestId("count")).toHaveTextEventually("6 assets");
    // Select all of the current filter, then file them in the collection.
    await page.getByRole("button", { name: /^Select all/ }).click();
    const bar = page.getByTestId("bulk-bar");
    await expect(bar.locator("p")).toHaveTextEventually("6 selected");
    await bar.getByLabel("Collection").selectOption(collectionId);
    await bar.getByRole("button", { name: "Move to collection" }).click();
    await expect(page.getByTestId("bulk-status")).toHaveTextEventually("Moved: 6 assets");
    const inCollection = await fetch(`${management}/v1/assets?collectionId=${collectionId}`, {
      headers: { Authorization: `Bearer ${token}` },
    });
    expect(((await inCollection.json()) as { count: number }).count).toBe(6);
  });

  let trashedIds: string[] = [];
  await step("bulk-trash-with-thumbnails", async () => {
    // Select all 6 again and move them to the trash.
    await page.getByRole("button", { name: /^Select all/ }).click();
    const bar = page.getByTestId("bulk-bar");
    await expect(bar.locator("p")).toHaveTextEventually("6 selected");
    trashedIds = await cards().evaluateAll((c) => c.map((x) => x.getAttribute("data-asset-id")!));
    const publicUrl = (await cards().nth(0).locator("img.image").getAttribute("src"))!.split("?")[0]!;
    expect((await fetch(publicUrl)).status).toBe(200);
    await bar.getByRole("button", { name: "Move to trash" }).click();
    await expect(page.getByTestId("bulk-status")).toHaveTextEventually("Moved to the trash: 6 assets");
    await expect(page.getByTestId("count")).toHaveTextEventually("0 assets");
    // The public media URL of a trashed asset answers 404.
    expect((await fetch(publicUrl)).status).toBe(404);
    await page.getByRole("link", { name: "Trash" }).click();
    await page.getByRole("heading", { name: "Trash", exact: true }).waitFor();
    await expect(cards()).toHaveCountEventually(6);
    // Real thumbnails, rendered by the API for the signed-in owner.
    await imagesLoaded(page, ".grid img.image", 6);
    const sizes = await page
      .locator(".grid img.image")
      .evaluateAll((imgs) =>
        imgs.map((i) => [(i as HTMLImageElement).src.slice(0, 5), (i as HTMLImageElement).naturalWidth]),
      );
    expect(sizes).toEqual(Array(6).fill(["blob:", 256]));
    expect((await fetch(`${management}/v1/assets/${trashedIds[0]}/trash-thumbnail`)).status).toBe(401);
    expect(await axeViolations(page)).toEqual([]);
    await shoot(stack, "trash");
  });

  await step("bulk-restore", async () => {
    await cards().nth(0).getByRole("checkbox").click();
    await cards()
      .nth(5)
      .getByRole("checkbox")
      .click({ modifiers: ["Shift"] });
    await page.getByTestId("bulk-bar").getByRole("button", { name: "Restore selected" }).click();
    await expect(page.getByTestId("bulk-status")).toHaveTextEventually("Restored: 6 assets");
    await expect(cards()).toHaveCountEventually(0);
    await page.getByRole("link", { name: "Library", exact: true }).click();
    await expect(page.getByTestId("count")).toHaveTextEventually("47 assets");
    if (DOC_SHOTS) {
      await imagesLoaded(page);
      await page.waitForTimeout(500);
      await page.screenshot({ path: path.join(DOC_SHOTS, "library.png") });
    }
  });

  await step("duplicate-warning", async () => {
    await dropFiles(page, [{ name: "again.jpg", type: "image/jpeg", bytes: corpus("Landscape_1.jpg") }]);
    const duplicate = page.locator(".upload-item", { hasText: "again.jpg" }).locator(".duplicates img");
    await duplicate.waitFor();
    expect(await duplicate.getAttribute("alt")).toBe("Existing asset Harbour at dusk");
    await page.waitForFunction(() => {
      const img = document.querySelector<HTMLImageElement>(".duplicates img");
      return img !== null && img.complete && img.naturalWidth === 256;
    });
    await expect(page.getByTestId("count")).toHaveTextEventually("48 assets");
  });

  await step("widths", async () => {
    for (const width of [375, 1440]) {
      await page.setViewportSize({ width, height: 800 });
      for (const hash of ["#/", `#/assets/${harbourId}`, `#/assets/${harbourId}/studio`, "#/trash"]) {
        await page.goto(`${management}/library${hash}`);
        await page.locator("h1").first().waitFor();
        await page.waitForLoadState("networkidle");
        await noHorizontalOverflow(page);
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

  // Only the two services (and data:/blob: URLs the page makes itself); no policy violations.
  const foreign = stack.requests.filter(
    (u) => !u.startsWith(`${management}/`) && !u.startsWith(`${media}/`) && !/^(data|blob):/.test(u),
  );
  expect(foreign).toEqual([]);
  expect(await page.evaluate(() => (globalThis as unknown as { cspViolations: string[] }).cspViolations)).toEqual([]);
  expect(stack.consoleErrors.filter((e) => !/401|Unauthorized|status of (4\d\d|503)/.test(e))).toEqual([]);
}, 300_000);

it("shows the first screen of a 200-asset grid within the budget, then scrolls through the rest", async () => {
  const { page, management } = stack;
  // 200 assets in a fresh workspace, uploaded four at a time (the workspace's limit).
  const token = await devToken(stack, "browser-200");
  const png = corpus("2x2_fdcce6.png");
  for (let i = 0; i < 200; i += 4) {
    await Promise.all([0, 1, 2, 3].map((j) => apiUpload(stack, token, `tile-${i + j}.png`, png)));
  }
  await signIn(stack, "browser-200");
  // The first view, measured as a person waits for it: a fresh load until every thumbnail in the
  // viewport has its pixels (ms since the navigation started, by the page's own clock). Once
  // with every thumbnail rendered for the first time (MISS), then as any later visitor sees it:
  // the media service's cache warm, the browser's cache off.
  const firstView = async (): Promise<number> => {
    await page.goto("about:blank");
    await page.goto(`${management}/library#/`);
    return page.evaluate(
      () =>
        new Promise<number>((resolve) => {
          const check = () => {
            const inView = [...document.querySelectorAll<HTMLImageElement>(".grid img.image")].filter(
              (i) => i.getBoundingClientRect().top < window.innerHeight,
            );
            if (inView.length > 0 && inView.every((i) => i.complete && i.naturalWidth > 0)) resolve(performance.now());
            else requestAnimationFrame(check);
          };
          check();
        }),
    );
  };
  const cdp = await stack.context.newCDPSession(page);
  await cdp.send("Network.setCacheDisabled", { cacheDisabled: true });
  const cold = await firstView();
  const warm = await firstView();
  await cdp.send("Network.setCacheDisabled", { cacheDisabled: false });
  await expect(page.getByTestId("count")).toHaveTextEventually("200 assets");
  expect(await page.locator(".grid .card").count()).toBe(40);
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const figures = { assets: 200, coldMs: Math.round(cold), warmMs: Math.round(warm) };
  fs.writeFileSync(path.join(ARTIFACTS, "first-view.json"), JSON.stringify(figures));
  console.log(`first view of a 200-asset grid: ${JSON.stringify(figures)}`);
  // The budget is 1.5 s on a quiet machine for the view as visitors see it; a loaded CI machine
  // gets three times that. The cold view renders 40 thumbnails at once: reported, not asserted.
  expect(warm).toBeLessThan(4500);
  await shoot(stack, "grid-200");
  await page.locator(".sentinel").scrollIntoViewIfNeeded();
  await expect(page.locator(".grid .card")).toHaveCountEventually(80);
}, 240_000);
