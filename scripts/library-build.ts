/**
 * The media library app (apps/library) built with Vite into apps/library/dist: run by `pnpm build`
 * (then copied next to the management bundle) and by `pnpm start`, so /library works on a fresh
 * clone. Vite runs as its own process: it is an ES module installed in the app's package only.
 *
 * A build is skipped when dist was built from the same sources (a hash of them is kept in
 * dist/.source-hash), and a new build lands in a folder of its own before it replaces dist, so
 * processes that build at once (start, the bundle, tests in parallel) never see a half-written app.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

const root = path.resolve(__dirname, "..");
export const LIBRARY_APP_DIR = path.join(root, "apps", "library");
export const LIBRARY_DIST_DIR = path.join(LIBRARY_APP_DIR, "dist");
const HASH_FILE = ".source-hash";

/** What the app is built from: its own sources and the workspace packages it bundles. */
const SOURCES = [
  "apps/library/index.html",
  "apps/library/vite.config.ts",
  "apps/library/package.json",
  "apps/library/src",
  "packages/contracts/src",
  "packages/client/src",
];

function listFiles(entry: string): string[] {
  const stat = fs.statSync(entry, { throwIfNoEntry: false });
  if (!stat) return [];
  if (!stat.isDirectory()) return [entry];
  return fs
    .readdirSync(entry)
    .sort()
    .flatMap((name) => listFiles(path.join(entry, name)));
}

/** sha256 over the source files' paths and contents. */
export function librarySourceHash(): string {
  const hash = createHash("sha256");
  for (const file of SOURCES.flatMap((s) => listFiles(path.join(root, s)))) {
    hash.update(path.relative(root, file)).update("\0").update(fs.readFileSync(file)).update("\0");
  }
  return hash.digest("hex");
}

const builtHash = (dir: string): string | null => {
  try {
    return fs.readFileSync(path.join(dir, HASH_FILE), "utf8");
  } catch {
    return null;
  }
};

/** Builds the app unless dist is current; throws with Vite's output when the build fails. */
export function buildLibrary(options: { quiet?: boolean } = {}): void {
  const source = librarySourceHash();
  if (builtHash(LIBRARY_DIST_DIR) === source && fs.existsSync(path.join(LIBRARY_DIST_DIR, "index.html"))) return;
  const vite = path.join(LIBRARY_APP_DIR, "node_modules", "vite", "bin", "vite.js");
  if (!fs.existsSync(vite)) throw new Error(`${vite} is missing: run pnpm install`);
  const staging = fs.mkdtempSync(path.join(LIBRARY_APP_DIR, ".dist-"));
  try {
    const result = spawnSync(
      process.execPath,
      [vite, "build", "--outDir", staging, "--emptyOutDir", "--logLevel", options.quiet ? "error" : "warn"],
      { cwd: LIBRARY_APP_DIR, encoding: "utf8", stdio: options.quiet ? "pipe" : "inherit" },
    );
    if (result.status !== 0) {
      throw new Error(
        `the library app's build failed (exit ${result.status}): ${result.stderr ?? ""}${result.stdout ?? ""}`,
      );
    }
    fs.writeFileSync(path.join(staging, HASH_FILE), source);
    fs.chmodSync(staging, 0o755);
    // Another process may have put the same build in place meanwhile: then this one is not needed.
    if (builtHash(LIBRARY_DIST_DIR) === source) return;
    const old = `${staging}-old`;
    if (fs.existsSync(LIBRARY_DIST_DIR)) fs.renameSync(LIBRARY_DIST_DIR, old);
    try {
      fs.renameSync(staging, LIBRARY_DIST_DIR);
    } catch (error) {
      if (builtHash(LIBRARY_DIST_DIR) !== source) throw error;
    }
    fs.rmSync(old, { recursive: true, force: true });
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
}
