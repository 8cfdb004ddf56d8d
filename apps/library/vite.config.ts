import { fileURLToPath } from "node:url";
import preact from "@preact/preset-vite";
import { defineConfig } from "vite";

// Served by the management service at /library (services/management/src/library/router.ts).
export default defineConfig({
  base: "/library/",
  plugins: [preact()],
  resolve: {
    alias: {
      // The contracts' URL signing uses node:crypto; the browser never signs (the management API
      // does, POST /v1/media-urls/sign), so it gets a stub that throws if ever called.
      "node:crypto": fileURLToPath(new URL("./src/platform/node-crypto.ts", import.meta.url)),
      // The client opens a path with node:fs only under Node; a browser uploads Files.
      "node:fs": fileURLToPath(new URL("./src/platform/node-fs.ts", import.meta.url)),
    },
  },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    // No inline script: the page's Content-Security-Policy is script-src 'self'.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    target: "es2022",
    reportCompressedSize: true,
  },
});
