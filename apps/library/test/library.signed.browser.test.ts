/**
 * The media library on a signed deployment (MEDIA_SIGNING_KEY on both services): every media URL
 * the page shows or offers carries a signature and an expiry the API gave it (the grid, the
 * asset page, the studio's preview, /info, srcset and link), every one loads, a trashed asset
 * shows its thumbnail in the trash and stays unreachable publicly. axe-core and a screenshot on
 * every view (test-artifacts/library/signed-*.png). Half a day later the page has asked for its
 * URLs again, before they lapse.
 */
import {
  apiUpload,
  axeViolations,
  corpus,
  devToken,
  dropFiles,
  imagesLoaded,
  shoot,
  signIn,
  startStack,
  step as runStep,
  type Stack,
} from "./support/library-stack";

const KEY = "library-browser-signing-key-0123456789abcdef";
const WORKSPACE = "signed-browser";

let stack: Stack;
const step = (name: string, body: () => Promise<void>) => runStep(stack, name, body);

beforeAll(async () => {
  stack = await startStack("signed", { MEDIA_SIGNING_KEY: KEY });
}, 240_000);

afterAll(async () => {
  await stack?.stop();
}, 30_000);

/** A signed URL of the media service: path, exp in the future, sig last. */
const SIGNED = /^http:\/\/127\.0\.0\.1:\d+\/[^?]+\?exp=\d{10}&sig=[A-Za-z0-9_-]{43}$/;

it("shows, offers and refreshes only signed media URLs, and every one loads", async () => {
  const { page, management, media } = stack;
  let id = "";

  await step("api-media-url", async () => {
    // The API's own mediaUrl is signed: it loads; unsigned, the same path is refused.
    const token = await devToken(stack, WORKSPACE);
    id = await apiUpload(stack, token, "Landscape_1.jpg", corpus("Landscape_1.jpg"));
    const asset = (await (
      await fetch(`${management}/v1/assets/${id}`, { headers: { Authorization: `Bearer ${token}` } })
    ).json()) as { mediaUrl: string };
    expect(asset.mediaUrl).toMatch(SIGNED);
    expect((await fetch(asset.mediaUrl)).status).toBe(200);
    expect((await fetch(asset.mediaUrl.split("?")[0]!)).status).toBe(403);
  });

  await step("grid", async () => {
    await signIn(stack, WORKSPACE);
    await dropFiles(page, [
      { name: "flowers.jpeg", type: "image/jpeg", bytes: corpus("flowers.jpeg") },
      { name: "Portrait_1.jpg", type: "image/jpeg", bytes: corpus("Portrait_1.jpg") },
    ]);
    await expect(page.getByTestId("upload-summary")).toHaveTextEventually("2 of 2 files uploaded", 60_000);
    await expect(page.locator(".grid .card")).toHaveCountEventually(3);
    await imagesLoaded(page, ".grid img.image", 3);
    const srcs = await page.locator(".grid img.image").evaluateAll((i) => i.map((x) => (x as HTMLImageElement).src));
    expect(srcs).toHaveLength(3);
    for (const src of srcs) expect(src).toMatch(SIGNED);
    expect(await axeViolations(page)).toEqual([]);
    await shoot(stack, "grid");
  });

  await step("asset-page-and-focal-point", async () => {
    await page.locator(`.card[data-asset-id="${id}"] a.card-link`).click();
    await page.getByRole("heading", { name: "Landscape_1.jpg" }).waitFor();
    await imagesLoaded(page, '[data-testid="focal-image"], [data-testid="thumbnail"]');
    const thumb = page.getByTestId("thumbnail");
    expect(await thumb.getAttribute("src")).toMatch(SIGNED);
    expect(await page.getByTestId("focal-image").getAttribute("src")).toMatch(SIGNED);
    // A new focal point: the same signed URL, new pixels (the browser's copy is fetched again).
    const before = await thumb.screenshot();
    const image = page.getByTestId("focal-image");
    const box = (await image.boundingBox())!;
    await image.click({ position: { x: box.width * 0.05, y: box.height * 0.5 } });
    await page.locator(".focal-marker").waitFor();
    await page.waitForFunction(
      () => {
        const img = document.querySelector<HTMLImageElement>('[data-testid="thumbnail"]');
        return img !== null && img.complete && img.naturalWidth === 256;
      },
      null,
      { timeout: 15_000 },
    );
    let changed = false;
    for (let i = 0; i < 50 && !changed; i++) {
      // The thumbnail is replaced when its new URL arrives: a screenshot may meet the old element
      // detached, which is "not yet", so the next try looks again.
      const shot = await thumb.screenshot().catch(() => undefined);
      changed = shot !== undefined && !shot.equals(before);
      if (!changed) await page.waitForTimeout(100);
    }
    expect(changed).toBe(true);
    expect(await axeViolations(page)).toEqual([]);
    await shoot(stack, "asset-page");
  });

  await step("studio", async () => {
    await page.getByRole("link", { name: "Open in URL studio" }).click();
    await page.getByRole("heading", { name: "URL studio" }).waitFor();
    await expect(page.getByTestId("preview-facts")).toHaveTextEventually(/^MISS · 600 × 450 px · image\/jpeg/);
    const link = (await page.getByTestId("media-url").textContent())!;
    expect(link).toMatch(SIGNED);
    expect(link.startsWith(`${media}/resize:width=600/${id}.jpg?exp=`)).toBe(true);
    // The URL's facts come from the signed /info.
    await expect(page.getByTestId("url-facts")).toHaveTextEventually(/Size600 × 450 px/);
    // The srcset: signed URLs, each at the width it really gives (the original is 600 wide).
    await page
      .locator('.step[data-step="resize"]')
      .getByRole("button", { name: /^Remove/ })
      .click();
    await page.getByLabel("Transformation").selectOption("grayscale");
    await page.getByRole("button", { name: "Add step" }).click();
    const snippet = page.getByTestId("srcset");
    await expect(snippet).toHaveTextEventually(/ 600w"/);
    const candidates = [...(await snippet.textContent())!.matchAll(/(http\S+) (\d+)w/g)].map((m) => ({
      url: m[1]!,
      width: Number(m[2]),
    }));
    expect(candidates.map((c) => c.width)).toEqual([320, 600]);
    for (const c of candidates) {
      expect(c.url).toMatch(SIGNED);
      const response = await fetch(c.url);
      expect(response.status).toBe(200);
      expect(response.headers.get("cache-control")).toMatch(/^public, max-age=\d+$/);
    }
    // Asked again, the same URL: one string per rendition, so caches hit.
    await page.getByLabel("Transformation").selectOption("sharpen");
    await page.getByRole("button", { name: "Add step" }).click();
    await page
      .locator('.step[data-step="sharpen"]')
      .getByRole("button", { name: /^Remove/ })
      .click();
    await expect(snippet).toHaveTextEventually(/ 600w"/);
    expect((await snippet.textContent())!).toContain(candidates[1]!.url);
    expect(await axeViolations(page)).toEqual([]);
    await shoot(stack, "studio", { fullPage: true });
  });

  await step("trash", async () => {
    const publicUrl = (await fetch(`${management}/v1/assets/${id}`, {
      headers: { Authorization: `Bearer ${await page.evaluate(() => sessionStorage.getItem("media-library-token"))}` },
    }).then((r) => r.json())) as { mediaUrl: string };
    await page.goto(`${management}/library#/assets/${id}`);
    await page.getByRole("button", { name: "Move to trash" }).click();
    await page.getByRole("heading", { name: "Trash", exact: true }).waitFor();
    await imagesLoaded(page, ".grid img.image", 1);
    const shown = await page
      .locator(".grid img.image")
      .evaluateAll((imgs) =>
        imgs.map((i) => [(i as HTMLImageElement).src.slice(0, 5), (i as HTMLImageElement).naturalWidth]),
      );
    expect(shown).toEqual([["blob:", 256]]);
    // The signed URL handed out before is no way to it now.
    expect((await fetch(publicUrl.mediaUrl)).status).toBe(404);
    expect(await axeViolations(page)).toEqual([]);
    await shoot(stack, "trash");
  });

  await step("refresh-before-expiry", async () => {
    // Half a day later (the URLs live more than 12 h of the default day), the page asks for its
    // URLs again before they lapse, and keeps showing its images.
    await page.clock.install();
    await page.goto(`${management}/library#/`);
    await imagesLoaded(page, ".grid img.image", 2);
    const signs = () => stack.requests.filter((u) => u.endsWith("/v1/media-urls/sign-batch")).length;
    const before = signs();
    await page.clock.fastForward("12:05:00");
    for (let i = 0; i < 100 && signs() === before; i++) await page.waitForTimeout(100);
    expect(signs()).toBeGreaterThan(before);
    await imagesLoaded(page, ".grid img.image", 2);
    for (const src of await page
      .locator(".grid img.image")
      .evaluateAll((i) => i.map((x) => (x as HTMLImageElement).src)))
      expect(src).toMatch(SIGNED);
  });

  // Every request to the media service carried a signature, and nothing was refused.
  const mediaRequests = stack.requests.filter((u) => u.startsWith(`${media}/`));
  expect(mediaRequests.length).toBeGreaterThan(10);
  expect(mediaRequests.filter((u) => !/[?&]sig=/.test(u) && !/\/(transformations|presets)$/.test(u))).toEqual([]);
  expect(stack.consoleErrors.filter((e) => !/status of 404/.test(e))).toEqual([]);
  expect(await page.evaluate(() => (globalThis as unknown as { cspViolations: string[] }).cspViolations)).toEqual([]);
}, 240_000);
