// responsive-delivery.md's "Do it", run as it stands: presets with an eager one (its first view a
// HIT), and signed URLs (the key on both services: media refuses unsigned URLs, management signs,
// the shell recipe signs alike). Each on its own `pnpm start`, as the page says.
import { rmSync } from "node:fs";
import path from "node:path";
import sharp from "sharp";
import {
  REPO_ROOT,
  bothReady,
  clientOf,
  embeddedSetup,
  run,
  scratchFiles,
  serverOf,
  startServer,
  type RunningServer,
  type Setup,
} from "./support/docs-commands";

const PAGE = "docs/responsive-delivery.md";

describe.each([
  ["presets", ["presets.yaml", "w640.jpg"]],
  ["signing", ["signing.key"]],
] as const)("docs: responsive-delivery.md, %s", (group, files) => {
  let setup: Setup;
  let server: RunningServer | undefined;
  const scratch = scratchFiles([...files]);

  beforeAll(async () => {
    setup = await embeddedSetup();
    server = await startServer(serverOf(group), setup.env, bothReady(setup));
  }, 240_000);

  afterAll(async () => {
    await server?.interrupt(5000);
    scratch.restore();
    rmSync(setup.dataDir, { recursive: true, force: true });
  });

  it(`runs the ${group} commands and prints what their comments say`, async () => {
    const lines = await run(clientOf(group, PAGE), setup.env);
    if (group === "presets") {
      expect(lines.map((l) => l.toLowerCase())).toEqual(["[ 'card', 'hero' ]", "x-cache: hit", "x-cache: miss"]);
      const w640 = await sharp(path.join(REPO_ROOT, "w640.jpg")).metadata();
      expect([w640.format, w640.width]).toEqual(["jpeg", 640]);
      expect(server!.output()).toContain('"msg":"media service listening"');
    } else {
      expect(lines).toEqual(["403", "200", "200"]);
      // The key reached both services: media signs (its start line says so), management signed.
      expect(server!.output()).toMatch(/"signing":"on"/);
    }
  });

  it("stops on Ctrl-C with exit 0", async () => {
    const end = await server!.interrupt();
    server = undefined;
    expect({ code: end.code, signal: end.signal }).toEqual({ code: 0, signal: null });
  });
});
