import path from "node:path";
import madge from "madge";

/**
 * The source of both services and the shared packages has no import cycle (Prisma's generated
 * client, which is not ours, aside): a lower module never imports one that imports it back.
 */
const ROOT = path.resolve(__dirname, "..");

describe("import graph", () => {
  it("has no cycle in services/*/src and packages/*/src", async () => {
    const graph = await madge(
      ["services/management/src", "services/media/src", "packages"].map((dir) => path.join(ROOT, dir)),
      {
        fileExtensions: ["ts"],
        tsConfig: path.join(ROOT, "tsconfig.json"),
        excludeRegExp: [/generated[\\/]/, /node_modules/, /[\\/]test[\\/]/],
      },
    );
    expect(Object.keys(graph.obj()).length).toBeGreaterThan(150);
    expect(graph.circular()).toEqual([]);
  }, 120_000);
});
