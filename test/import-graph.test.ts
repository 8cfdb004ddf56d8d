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
    paths: ["render/raw.ts", "render/pixels/", "faces/", "perceptual/", "negotiation/"],
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
    ],
  },
  { name: "HTTP and process", paths: ["app.ts", "server.ts", "index.ts"] },
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
