/**
 * `pnpm build`: compiles each service to JavaScript under services/<name>/dist, which the
 * containers run with plain `node dist/index.js` (no TypeScript transpiling at start-up).
 * Type checking stays with `pnpm typecheck`; this only emits.
 *
 * One esbuild bundle per entry: the service's own code and the workspace packages it uses
 * (whose package.json points at TypeScript sources) are compiled in; the service's own
 * dependencies stay external and load from its node_modules, as a pruned `pnpm deploy`
 * installs them. Worker-thread entries land where their parent looks for them
 * (path.join(__dirname, ...): the media bundle sits directly in dist/, so its workers do too).
 */
import { build, type BuildOptions } from "esbuild";
import fs from "node:fs";
import path from "node:path";
import { buildLibrary, LIBRARY_DIST_DIR } from "./library-build";

const root = path.resolve(__dirname, "..");

interface ServiceBuild {
  name: string;
  /** dist file (without .js) -> source file, relative to the service folder. */
  entries: Record<string, string>;
  /** Plain CommonJS worker files copied as they are: dist name -> source. */
  copies: Record<string, string>;
  /** Runs after the bundle: static files the service serves from its dist folder. */
  after?: (outdir: string) => void;
}

/** Both services: tracing's OTLP sender thread (packages/observability tracing/worker-exporter.ts). */
const TRACING_COPIES = { "otlp-export-worker.cjs": "../../packages/observability/src/tracing/otlp-export-worker.cjs" };

const services: ServiceBuild[] = [
  {
    name: "management",
    entries: {
      index: "src/index.ts",
      "cli/token": "src/cli/token.ts",
      "cli/migrate": "src/cli/migrate.ts",
    },
    // assets/format-workers.ts starts <its folder>/format-worker.cjs (HEIC, camera RAW, PDF decoders,
    // and SVG sanitising, which it requires from svg-sanitiser.cjs beside it).
    copies: {
      "format-worker.cjs": "src/assets/format-worker.cjs",
      "svg-sanitiser.cjs": "src/assets/svg-sanitiser.cjs",
      ...TRACING_COPIES,
    },
    // The media library app, served at /library from dist/library (library/router.ts findLibraryDir).
    after: (outdir) => {
      buildLibrary();
      fs.cpSync(LIBRARY_DIST_DIR, path.join(outdir, "library"), { recursive: true });
    },
  },
  {
    name: "media",
    entries: {
      index: "src/index.ts",
      // render/pixels/worker.cjs loads compiled kernels from <its folder>/kernels/index.js.
      "kernels/index": "src/render/pixels/kernels/index.ts",
      // render/pipeline/killable-render.ts forks <its folder>/render-process.js.
      "render-process": "src/render/pipeline/render-process.ts",
    },
    copies: {
      "worker.cjs": "src/render/pixels/worker.cjs",
      "face-worker.cjs": "src/faces/face-worker.cjs",
      ...TRACING_COPIES,
    },
  },
];

/** The service's own (non-workspace) dependencies, and their subpaths, stay require()s. */
function externals(serviceDir: string): string[] {
  const pkg = JSON.parse(fs.readFileSync(path.join(serviceDir, "package.json"), "utf8")) as {
    dependencies?: Record<string, string>;
  };
  return Object.keys(pkg.dependencies ?? {})
    .filter((name) => !name.startsWith("@media-platform/"))
    .flatMap((name) => [name, `${name}/*`]);
}

async function buildService(service: ServiceBuild): Promise<void> {
  const dir = path.join(root, "services", service.name);
  const outdir = path.join(dir, "dist");
  fs.rmSync(outdir, { recursive: true, force: true });
  const options: BuildOptions = {
    absWorkingDir: dir,
    entryPoints: Object.entries(service.entries).map(([out, src]) => ({ out, in: src })),
    outdir,
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    external: externals(dir),
    sourcemap: "linked",
    // Stack traces name the original functions; logs stay readable.
    keepNames: true,
    logLevel: "warning",
  };
  await build(options);
  for (const [out, src] of Object.entries(service.copies)) fs.copyFileSync(path.join(dir, src), path.join(outdir, out));
  service.after?.(outdir);
  console.log(`built services/${service.name}/dist (${Object.keys(service.entries).join(", ")})`);
}

async function main(): Promise<void> {
  const only = process.argv.slice(2);
  for (const service of services) if (!only.length || only.includes(service.name)) await buildService(service);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
