/**
 * The library's weight budget: everything the page loads (its JavaScript and CSS, as built for
 * production) stays under 300 KB gzip. Deterministic: the same sources build the same files,
 * measured at gzip's level 9 as a server or CDN compresses static files.
 */
import fs from "node:fs";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { buildLibrary, LIBRARY_DIST_DIR } from "../../../scripts/library-build";

export const BUDGET_GZIP_BYTES = 300 * 1024;

it("ships under 300 KB of JavaScript and CSS, gzip", () => {
  buildLibrary({ quiet: true });
  const assets = path.join(LIBRARY_DIST_DIR, "assets");
  const files = fs.readdirSync(assets).filter((f) => /\.(js|css)$/.test(f));
  expect(files.some((f) => f.endsWith(".js"))).toBe(true);
  expect(files.some((f) => f.endsWith(".css"))).toBe(true);
  const sizes = Object.fromEntries(
    files.map((f) => [f, gzipSync(fs.readFileSync(path.join(assets, f)), { level: 9 }).length]),
  );
  const total = Object.values(sizes).reduce((a, b) => a + b, 0);
  console.log(`library JS + CSS: ${total} bytes gzip (${JSON.stringify(sizes)})`);
  expect(total).toBeLessThan(BUDGET_GZIP_BYTES);
}, 120_000);
