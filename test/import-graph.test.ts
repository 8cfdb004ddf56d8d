import path from "node:path";
import madge from "madge";

/**
 * The source of both services and the shared packages has no import cycle (Prisma's generated
 * client, which is not ours, aside), and inside each service imports run one way: from a layer
 * to the same or a lower one, never up.
 */
const ROOT = path.resolve(__dirname, "..");
const EXCLUDE = [/generated[\\/]/, /node_modules/, /[\\/]test[\\/]/];

async function graphOf(dirs: string[]): Promise<Record<string, string[]>> {
  const graph = await madge(
    dirs.map((dir) => path.join(ROOT, dir)),
    { fileExtensions: ["ts"], tsConfig: path.join(ROOT, "tsconfig.json"), excludeRegExp: EXCLUDE },
  );
  return graph.obj();
}

/**
 * A service's layers, lowest first: a file belongs to the first layer with a prefix of its path
 * (relative to the service's src/); every file must belong to one.
 */
type Layers = ReadonlyArray<{ name: string; paths: readonly string[] }>;

const MEDIA_LAYERS: Layers = [
  // Pure functions on pixel buffers, run in worker threads: they import nothing of the service.
  { name: "pixel kernels", paths: ["render/pixels/kernels/"] },
  // The render core's vocabulary and its errors.
  { name: "render vocabulary", paths: ["render/types.ts", "render/errors.ts"] },
  {
    name: "render services",
    paths: ["render/raw.ts", "render/deadline.ts", "render/pixels/", "faces/", "perceptual/", "negotiation/"],
  },
  { name: "transformations", paths: ["render/transformations/"] },
  { name: "render pipeline", paths: ["render/pipeline/"] },
  {
    name: "delivery",
    paths: [
      "heap.ts",
      "metrics.ts",
      "config.ts",
      "problem.ts",
      "cache/",
      "presets/",
      "catalog/",
      "originals/",
      "purge/",
      "delivery/",
      "info/",
      "eager/",
      "usage/",
    ],
  },
  { name: "HTTP and process", paths: ["app.ts", "server.ts", "index.ts", "tracing.ts"] },
  // The package's declared entry points (package.json "exports"): re-exports only.
  { name: "public surface", paths: ["public/"] },
];

const MANAGEMENT_LAYERS: Layers = [
  // Leaves: configuration with its defaults, what a request's services are handed (context), the
  // domain errors and the table that answers them, the database client, metrics, logging.
  {
    name: "foundation",
    paths: [
      "native-require.ts",
      "logger.ts",
      "metrics.ts",
      "config/",
      "db/",
      "domain-errors.ts",
      "problem.ts",
      "http.ts",
      "context.ts",
      "jobs/periodic.ts",
    ],
  },
  // What every domain service writes through or names: the outbox, an asset's blob layout, the caller.
  {
    name: "domain vocabulary",
    paths: [
      "webhooks/outbox.ts",
      "assets/blobs.ts",
      "assets/media-links.ts",
      "auth/keys.ts",
      "auth/jwks-key-set.ts",
      "auth/scopes.ts",
      "audit/log.ts",
      "usage/service.ts",
    ],
  },
  // Assets: analysis of an upload, the one write of an original, listing, search, sweeps.
  {
    name: "assets",
    paths: [
      "assets/attributes.ts",
      "assets/backfill.ts",
      "assets/camera-raw.ts",
      "assets/cursor.ts",
      "assets/decoded-formats.ts",
      "assets/duplicates.ts",
      "assets/facets.ts",
      "assets/format-workers.ts",
      "assets/image-analysis.ts",
      "assets/image-metadata.ts",
      "assets/metadata-containers/",
      "assets/original-privacy.ts",
      "assets/original-write.ts",
      "assets/orphans.ts",
      "assets/rows.ts",
      "assets/search.ts",
      "assets/serializer.ts",
      "assets/service.ts",
      "assets/svg-original.ts",
      "assets/upload-receipts.ts",
      "assets/url-import.ts",
      "assets/direct-uploads.ts",
    ],
  },
  // The lifecycle of assets (trash, restore, replace, versions, batch) and telling caches about it.
  {
    name: "lifecycle",
    paths: ["lifecycle/service.ts", "lifecycle/propagation.ts", "lifecycle/trash-thumbnail.ts"],
  },
  // Services built on the lifecycle, and the background work.
  {
    name: "collections, media URLs and jobs",
    paths: [
      "collections/service.ts",
      "media-urls/service.ts",
      "jobs/trash-retention.ts",
      "webhooks/dispatcher.ts",
      "webhooks/delivery-span.ts",
      "auth/api-keys.ts",
      "usage/ingest.ts",
    ],
  },
  // HTTP: routers, the upload intake, authentication, the library and API docs.
  {
    name: "HTTP",
    paths: [
      "auth/middleware.ts",
      "auth/rate-limit.ts",
      "auth/sign-ins.ts",
      "credentials/routes.ts",
      "assets/upload-intake.ts",
      "assets/routes.ts",
      "assets/tus.ts",
      "assets/tus-lock.ts",
      "lifecycle/routes.ts",
      "collections/routes.ts",
      "media-urls/routes.ts",
      "library/",
      "docs/",
    ],
  },
  { name: "app, process and CLIs", paths: ["app.ts", "server.ts", "index.ts", "tracing.ts", "cli/"] },
  // The package's declared entry points (package.json "exports"): re-exports only.
  { name: "public surface", paths: ["public/"] },
];

function layerOf(layers: Layers, file: string): number {
  const index = layers.findIndex((layer) => layer.paths.some((p) => file === p || file.startsWith(p)));
  if (index < 0) throw new Error(`${file} belongs to no layer: add it to the layer table`);
  return index;
}

/** Every import that runs from a layer up to a higher one, as "from -> to (layer -> layer)". */
function upwardImports(graph: Record<string, string[]>, layers: Layers): string[] {
  const own = (file: string) => !file.startsWith("../");
  const found: string[] = [];
  for (const [from, imports] of Object.entries(graph)) {
    if (!own(from)) continue;
    const fromLayer = layerOf(layers, from);
    for (const to of imports.filter(own)) {
      const toLayer = layerOf(layers, to);
      if (toLayer > fromLayer) found.push(`${from} -> ${to} (${layers[fromLayer]!.name} -> ${layers[toLayer]!.name})`);
    }
  }
  return found;
}

describe("import graph", () => {
  it("has no cycle in services/*/src and packages/*/src", async () => {
    const graph = await madge(
      ["services/management/src", "services/media/src", "packages"].map((dir) => path.join(ROOT, dir)),
      { fileExtensions: ["ts"], tsConfig: path.join(ROOT, "tsconfig.json"), excludeRegExp: EXCLUDE },
    );
    expect(Object.keys(graph.obj()).length).toBeGreaterThan(150);
    expect(graph.circular()).toEqual([]);
  }, 120_000);

  it("runs one way through the media service's layers, render core at the bottom", async () => {
    const graph = await graphOf(["services/media/src"]);
    expect(Object.keys(graph).filter((f) => f.startsWith("render/")).length).toBeGreaterThan(40);
    expect(upwardImports(graph, MEDIA_LAYERS)).toEqual([]);
    // The domain's errors are data (a code): only the HTTP side maps them to problems (problem.ts).
    const domain = /^(delivery|render|cache|eager|faces)\//;
    const http = new Set(["problem.ts", "app.ts", "server.ts"]);
    const domainToHttp = Object.entries(graph).flatMap(([from, imports]) =>
      domain.test(from) ? imports.filter((to) => http.has(to)).map((to) => `${from} -> ${to}`) : [],
    );
    expect(domainToHttp).toEqual([]);
  }, 120_000);

  it("runs one way through the management service's layers, configuration and errors at the bottom", async () => {
    const graph = await graphOf(["services/management/src"]);
    expect(Object.keys(graph).filter((f) => f.startsWith("assets/")).length).toBeGreaterThan(15);
    expect(upwardImports(graph, MANAGEMENT_LAYERS)).toEqual([]);
  }, 120_000);

  it("loads neither sharp nor multer for `pnpm run token` (cli/token.ts), as the server does", async () => {
    const npmOf = async (entry: string) => {
      const graph = await madge(path.join(ROOT, entry), {
        fileExtensions: ["ts"],
        tsConfig: path.join(ROOT, "tsconfig.json"),
        excludeRegExp: [/generated[\\/]/],
        includeNpm: true,
      });
      const packages = Object.values(graph.obj())
        .flat()
        .filter((file) => file.includes("node_modules/"))
        .map(
          (file) =>
            file
              .replace(/.*node_modules\//, "")
              .replace(/^@types\//, "")
              .split("/")[0]!,
        );
      return new Set(packages);
    };
    const image = ["sharp", "sharp-phash", "multer"];
    const token = await npmOf("services/management/src/cli/token.ts");
    expect(image.filter((name) => token.has(name))).toEqual([]);
    // The same question of the server's entry finds all three: the check sees them.
    const server = await npmOf("services/management/src/index.ts");
    expect(image.filter((name) => server.has(name))).toEqual(image);
  }, 120_000);

  it("finds an upward import when there is one (the check itself)", () => {
    const graph = {
      "render/types.ts": ["render/pipeline/render.ts"],
      "render/pipeline/render.ts": ["render/types.ts"],
    };
    expect(upwardImports(graph, MEDIA_LAYERS)).toEqual([
      "render/types.ts -> render/pipeline/render.ts (render vocabulary -> render pipeline)",
    ]);
    expect(() => layerOf(MEDIA_LAYERS, "elsewhere.ts")).toThrow("belongs to no layer");
  });
});
