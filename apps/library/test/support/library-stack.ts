/**
 * What the library's browser tests share: both services started as `pnpm start` starts them
 * (embedded mode, free ports, the library built), headless Chromium at 1280x800, axe-core, a
 * screenshot of every view in test-artifacts/library/, and polling matchers.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { buildLibrary } from "../../../../scripts/library-build";
import { CHROMIUM, launchChromium } from "../../../../test/support/chromium";
import { freePort } from "../../../../test/support/net";

export const root = path.resolve(__dirname, "../../../..");
export const CORPUS = path.resolve(root, "../shared/fixtures/corpus/sharp");
export const ARTIFACTS = path.join(root, "test-artifacts", "library");

if (!fs.existsSync(CORPUS)) throw new Error(`the image corpus is missing: ${CORPUS}`);
if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is not installed (apt-get install chromium)`);

export const corpus = (name: string): Buffer => fs.readFileSync(path.join(CORPUS, name));

export interface Stack {
  management: string;
  media: string;
  page: Page;
  context: BrowserContext;
  /** Every URL the page requested. */
  requests: string[];
  consoleErrors: string[];
  /** Mode name, prefixed to screenshots. */
  mode: string;
  stop(): Promise<void>;
}

async function waitReady(url: string, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 150_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`service exited (${child.exitCode}): ${log()}`);
    const ok = await fetch(`${url}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} not ready in 150 s: ${log()}`);
}

/** Both services (with `env` on top of the embedded defaults) and a browser page on them. */
export async function startStack(
  mode: string,
  env: Record<string, string> = {},
  /** Ports chosen beforehand (an identity provider registers the library's URL before it starts). */
  ports?: { management: number; media: number },
): Promise<Stack> {
  buildLibrary({ quiet: true });
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `library-${mode}-`));
  const [managementPort, mediaPort] = ports ? [ports.management, ports.media] : [await freePort(), await freePort()];
  const management = `http://127.0.0.1:${managementPort}`;
  const media = `http://127.0.0.1:${mediaPort}`;
  const childEnv: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DATA_DIR: dataDir,
    HOST: "127.0.0.1",
    MANAGEMENT_PORT: String(managementPort),
    MEDIA_PORT: String(mediaPort),
    MEDIA_PUBLIC_URL: media,
    LOG_LEVEL: "warn",
    ...env,
  };
  const children: ChildProcess[] = [];
  const stopChildren = async () => {
    for (const child of children) if (child.exitCode === null) child.kill("SIGTERM");
    await Promise.all(children.map((c) => (c.exitCode !== null ? null : new Promise((r) => c.once("exit", r)))));
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    for (const [entry, url] of [
      ["services/management/src/index.ts", management],
      ["services/media/src/index.ts", media],
    ] as const) {
      let output = "";
      const child = spawn(process.execPath, ["--import", "tsx", path.join(root, entry)], {
        cwd: root,
        env: childEnv,
        stdio: ["ignore", "pipe", "pipe"],
      });
      child.stdout!.on("data", (c: Buffer) => (output = (output + c.toString()).slice(-4000)));
      child.stderr!.on("data", (c: Buffer) => (output = (output + c.toString()).slice(-4000)));
      children.push(child);
      await waitReady(url, child, () => output);
    }
  } catch (error) {
    await stopChildren();
    throw error;
  }
  const context = await launchChromium(`library-${mode}`, { viewport: { width: 1280, height: 800 } });
  const page = context.pages()[0] ?? (await context.newPage());
  const requests: string[] = [];
  const consoleErrors: string[] = [];
  page.on("request", (r) => requests.push(r.url()));
  page.on("console", (m) => {
    if (m.type() === "error") consoleErrors.push(m.text());
  });
  page.on("pageerror", (e) => consoleErrors.push(e.message));
  page.on("dialog", (d) => void d.accept());
  // Every Content-Security-Policy violation, counted in the page (an init script is not a page script).
  await context.addInitScript(() => {
    const w = globalThis as unknown as { cspViolations: string[] };
    w.cspViolations = [];
    document.addEventListener("securitypolicyviolation", (e) =>
      w.cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`),
    );
  });
  return {
    management,
    media,
    page,
    context,
    requests,
    consoleErrors,
    mode,
    async stop() {
      await context.close().catch(() => undefined);
      await stopChildren();
    },
  };
}

/** A development token for `workspaceId` (the sign-in's own endpoint). */
export async function devToken(stack: Stack, workspaceId: string): Promise<string> {
  const response = await fetch(`${stack.management}/library/dev-token`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ workspaceId }),
  });
  return ((await response.json()) as { token: string }).token;
}

/** Uploads through the API (setup, not the flow under test). */
export async function apiUpload(stack: Stack, token: string, name: string, bytes: Buffer): Promise<string> {
  const form = new FormData();
  form.append("file", new Blob([new Uint8Array(bytes)]), name);
  const res = await fetch(`${stack.management}/v1/assets/upload`, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}` },
    body: form,
  });
  if (res.status !== 201) throw new Error(`upload of ${name}: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}

/** Signs in through the page's development sign-in. */
export async function signIn(stack: Stack, workspace: string): Promise<void> {
  const { page } = stack;
  await page.goto(`${stack.management}/library#/`);
  if (await page.evaluate(() => sessionStorage.getItem("media-library-token") !== null)) {
    await page.getByRole("button", { name: "Sign out" }).click();
  }
  await page.getByLabel("Workspace").fill(workspace);
  await page.getByRole("button", { name: "Sign in as developer" }).click();
  await page.getByRole("heading", { name: "Library", exact: true }).waitFor();
}

/** Runs one part of the journey; on failure keeps a screenshot of the page as it was. */
export async function step(stack: Stack, name: string, body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (error) {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    await stack.page
      .screenshot({ path: path.join(ARTIFACTS, `${stack.mode}-${name}-failed.png`), fullPage: true })
      .catch(() => undefined);
    throw error;
  }
}

/** The view as it is, attached to the test output (test-artifacts/library/<mode>-<view>.png). */
export async function shoot(stack: Stack, view: string, options: { fullPage?: boolean } = {}): Promise<void> {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  await stack.page.screenshot({ path: path.join(ARTIFACTS, `${stack.mode}-${view}.png`), fullPage: options.fullPage });
}

/** axe-core's serious and critical violations on the page as it is. */
export async function axeViolations(page: Page): Promise<string[]> {
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

/**
 * Drops files on the drop zone as a user's drag and drop does (a DataTransfer of Files). A file
 * from disk keeps its modification time across drops (`lastModified`, else now).
 */
export async function dropFiles(
  page: Page,
  files: { name: string; type: string; bytes: Buffer; lastModified?: number }[],
): Promise<void> {
  const transfer = await page.evaluateHandle(
    (list) => {
      const dt = new DataTransfer();
      for (const f of list) {
        const bytes = Uint8Array.from(atob(f.base64), (c) => c.charCodeAt(0));
        dt.items.add(new File([bytes], f.name, { type: f.type, lastModified: f.lastModified ?? Date.now() }));
      }
      return dt;
    },
    files.map((f) => ({
      name: f.name,
      type: f.type,
      base64: f.bytes.toString("base64"),
      lastModified: f.lastModified,
    })),
  );
  await page.dispatchEvent('[data-testid="drop-zone"]', "drop", { dataTransfer: transfer });
}

/** Every image of the grid (or of `selector`) has loaded with pixels; `count` of them when given. */
export async function imagesLoaded(page: Page, selector = ".grid img.image", count?: number): Promise<void> {
  await page.waitForFunction(
    ([sel, n]) => {
      const images = [...document.querySelectorAll<HTMLImageElement>(sel as string)];
      return (
        images.length > 0 &&
        (n === null || images.length === n) &&
        images.every((i) => i.complete && i.naturalWidth > 0)
      );
    },
    [selector, count ?? null] as const,
    { timeout: 30_000 },
  );
}

export async function noHorizontalOverflow(page: Page): Promise<void> {
  const [scroll, inner] = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
  expect(scroll).toBeLessThanOrEqual(inner);
}

// Polling matchers: the page updates after debounces and network round trips (renders on a
// loaded machine can take seconds).
declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace jest {
    interface Matchers<R> {
      toHaveCountEventually(count: number, timeoutMs?: number): Promise<R>;
      toHaveTextEventually(text: string | RegExp, timeoutMs?: number): Promise<R>;
    }
  }
}

async function poll<T>(read: () => Promise<T>, ok: (v: T) => boolean, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (!ok(value) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    value = await read();
  }
  return value;
}

expect.extend({
  async toHaveCountEventually(locator: { count(): Promise<number> }, count: number, timeoutMs = 20_000) {
    const seen = await poll(
      () => locator.count(),
      (n) => n === count,
      timeoutMs,
    );
    return { pass: seen === count, message: () => `expected ${count} elements, saw ${seen}` };
  },
  async toHaveTextEventually(
    locator: { textContent(options?: { timeout?: number }): Promise<string | null> },
    text: string | RegExp,
    timeoutMs = 20_000,
  ) {
    const matches = (s: string | null) => (typeof text === "string" ? (s ?? "").trim() === text : text.test(s ?? ""));
    // An element not (yet) on the page reads as null, polled again like a wrong text.
    const seen = await poll(() => locator.textContent({ timeout: 500 }).catch(() => null), matches, timeoutMs);
    return { pass: matches(seen), message: () => `expected text ${String(text)}, saw ${JSON.stringify(seen)}` };
  },
});
