import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { BrowserContext } from "playwright-core";

/** Debian's chromium; CHROMIUM_PATH points elsewhere. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/**
 * Headless Chromium in a fresh profile, removed when the context closes. The background-networking flags keep it from calling
 * Google's hosts, which a closed network refuses many at a time.
 */
export async function launchChromium(
  name: string,
  options: { viewport?: { width: number; height: number } } = {},
): Promise<BrowserContext> {
  const { chromium } = await import("playwright-core");
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), `${name}-chromium-`));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    ...options,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  // Chromium may still be writing the profile when the context reports closed: retry, never fail.
  context.once("close", () => {
    fs.promises.rm(userDataDir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 }).catch(() => {});
  });
  return context;
}
