/**
 * The media library app (apps/library) built with Vite into apps/library/dist: run by `pnpm build`
 * (then copied next to the management bundle) and by `pnpm start`, so /library works on a fresh
 * clone. Vite runs as its own process: it is an ES module installed in the app's package only.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

const root = path.resolve(__dirname, "..");
export const LIBRARY_APP_DIR = path.join(root, "apps", "library");
export const LIBRARY_DIST_DIR = path.join(LIBRARY_APP_DIR, "dist");

/** Builds the app; throws with Vite's output when the build fails. */
export function buildLibrary(options: { quiet?: boolean } = {}): void {
  const vite = path.join(LIBRARY_APP_DIR, "node_modules", "vite", "bin", "vite.js");
  if (!fs.existsSync(vite)) throw new Error(`${vite} is missing: run pnpm install`);
  const result = spawnSync(process.execPath, [vite, "build", "--logLevel", options.quiet ? "error" : "warn"], {
    cwd: LIBRARY_APP_DIR,
    encoding: "utf8",
    stdio: options.quiet ? "pipe" : "inherit",
  });
  if (result.status !== 0) {
    throw new Error(
      `the library app's build failed (exit ${result.status}): ${result.stderr ?? ""}${result.stdout ?? ""}`,
    );
  }
}
