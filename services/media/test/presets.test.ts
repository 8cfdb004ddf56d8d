import { spawnSync } from "node:child_process";
import path from "node:path";
import sharp from "sharp";
import { compilePresets, isPresetPath, PresetDefinitionError, signedMediaUrl } from "@media-platform/contracts";
import { loadMediaConfig, MediaConfigError } from "../src/config";
import { countingRender, startTestMedia, type TestMedia } from "./support/media-server";
import { presetsFolder } from "./support/presets-files";

const { dir, write } = presetsFolder("delivery-presets");

const YAML_FILE = `
# card: a 400 x 300 cover crop
card: "resize:width=400:height=300:fit=cover"
thumb:
  - resize:width=120
  - grayscale
`;
const KEY = "test-signing-key-0123456789";

function configProblems(env: Record<string, string>): string[] {
  try {
    loadMediaConfig(env);
  } catch (err) {
    if (err instanceof MediaConfigError) return err.problems.map((p) => `${p.variable}: ${p.message}`);
    throw err;
  }
  return [];
}

describe("preset files", () => {
  it("YAML and JSON give the same validated table", () => {
    const fromYaml = loadMediaConfig({ MEDIA_PRESETS_FILE: write("p.yaml", YAML_FILE) }).presets;
    const fromJson = loadMediaConfig({
      MEDIA_PRESETS_FILE: write(
        "p.json",
        JSON.stringify({ card: "resize:width=400:height=300:fit=cover", thumb: ["resize:width=120", "grayscale"] }),
      ),
    }).presets;
    expect(fromYaml).toEqual(fromJson);
    expect(fromYaml).toEqual({
      card: [{ name: "resize", params: { width: 400, height: 300, fit: "cover" } }],
      thumb: [
        { name: "resize", params: { width: 120 } },
        { name: "grayscale", params: {} },
      ],
    });
  });

  it("a bad preset stops the configuration with a message naming the file, preset and parameter", () => {
    const file = write("bad.yaml", 'card: "resize:width=0"\nhero: "blur:sigma=2"\n');
    const problems = configProblems({ MEDIA_PRESETS_FILE: file });
    expect(problems).toEqual([
      expect.stringMatching(
        /^MEDIA_PRESETS_FILE: .*bad\.yaml: preset "card": resize\.width: "0" is below the allowed range/,
      ),
      expect.stringMatching(/^MEDIA_PRESETS_FILE: .*bad\.yaml: preset "hero": blur: unknown transformation "blur"/),
    ]);
  });

  it("is validated under the limits in force (MEDIA_MAX_DIMENSION)", () => {
    const file = write("big.yaml", 'hero: "resize:width=2000"\n');
    expect(configProblems({ MEDIA_PRESETS_FILE: file })).toEqual([]);
    expect(configProblems({ MEDIA_PRESETS_FILE: file, MEDIA_MAX_DIMENSION: "1000" })[0]).toMatch(
      /preset "hero": resize\.width: "2000" is above the allowed range/,
    );
  });

  it.each([
    ["missing file", undefined, /cannot read .*nope\.yaml: ENOENT/],
    ["not YAML", "card: [unclosed\n", /neither JSON nor YAML/],
    ["a list at the top", "- resize:width=1\n", /object at the top level/],
    ["a nested preset", 'a: "preset:name=b"\n', /cannot contain presets/],
    ["a bad name", '"bad name": "grayscale"\n', /a name is 1-64 letters/],
    ["empty steps", "a: []\n", /non-empty/],
  ])("refuses %s", (_what, text, message) => {
    const file = text === undefined ? path.join(dir, "nope.yaml") : write(`x${Math.random()}.yaml`, text);
    const problems = configProblems({ MEDIA_PRESETS_FILE: file });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(message);
  });

  it("MEDIA_PRESETS_ONLY needs a presets file; it must be true or false", () => {
    expect(configProblems({ MEDIA_PRESETS_ONLY: "true" })).toEqual([
      "MEDIA_PRESETS_ONLY: needs MEDIA_PRESETS_FILE (there would be nothing to serve)",
    ]);
    expect(configProblems({ MEDIA_PRESETS_ONLY: "maybe" })).toEqual(["MEDIA_PRESETS_ONLY: must be true or false"]);
  });

  it("the service does not start with a bad preset: exit 1 and the message", () => {
    const run = spawnSync(process.execPath, ["--import", "tsx", "services/media/src/index.ts"], {
      cwd: path.resolve(__dirname, "..", "..", ".."),
      env: { ...process.env, MEDIA_PORT: "0", MEDIA_PRESETS_FILE: write("start.yaml", 'card: "resize:fit=cover"\n') },
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('preset "card": resize: resize needs width, height or both');
    expect(run.stdout).not.toContain("listening");
  });

  it("compilePresets lists every problem at once", () => {
    expect(() => compilePresets({ a: "resize:width=-1", b: 5 })).toThrow(PresetDefinitionError);
    try {
      compilePresets({ a: "resize:width=-1", b: 5 });
    } catch (err) {
      expect((err as PresetDefinitionError).problems).toHaveLength(2);
    }
  });

  it("isPresetPath: every step must be a preset", () => {
    const id = "3f2b6c1e-4d5a-4b7c-8e9f-0a1b2c3d4e5f";
    expect(isPresetPath(`/preset:name=card/${id}.jpg`)).toBe(true);
    expect(isPresetPath(`/preset:name=card/preset:name=thumb/${id}.jpg`)).toBe(true);
    expect(isPresetPath(`/preset:name=card/grayscale/${id}.jpg`)).toBe(false);
    expect(isPresetPath(`/preset:name=card:x=1/${id}.jpg`)).toBe(false);
    expect(isPresetPath(`/${id}.jpg`)).toBe(false);
  });
});

describe("preset URLs", () => {
  let media: TestMedia;
  let counting: ReturnType<typeof countingRender>;
  let id: string;
  beforeAll(async () => {
    counting = countingRender();
    const { presets } = loadMediaConfig({ MEDIA_PRESETS_FILE: write("http.yaml", YAML_FILE) });
    media = await startTestMedia({ render: counting.render, presets });
    id = await media.store.putFixture("rocket.jpg");
  });
  afterAll(() => media.close());

  it("/preset:name=card gives the same bytes as the steps it stands for; MISS then HIT", async () => {
    const viaPreset = await fetch(`${media.url}/preset:name=card/${id}.jpg`);
    expect(viaPreset.status).toBe(200);
    expect(viaPreset.headers.get("x-cache")).toBe("MISS");
    const bytes = Buffer.from(await viaPreset.arrayBuffer());
    const meta = await sharp(bytes).metadata();
    expect([meta.width, meta.height, meta.format]).toEqual([400, 300, "jpeg"]);
    const explicit = Buffer.from(
      await (await fetch(`${media.url}/resize:width=400:height=300:fit=cover/${id}.jpg`)).arrayBuffer(),
    );
    expect(bytes.equals(explicit)).toBe(true);
    expect((await fetch(`${media.url}/preset:name=card/${id}.jpg`)).headers.get("x-cache")).toBe("HIT");
  });

  it("works as a step inside a chain", async () => {
    const res = await fetch(`${media.url}/crop:width=300:height=300/preset:name=thumb/${id}.jpg`);
    expect(res.status).toBe(200);
    const img = await sharp(Buffer.from(await res.arrayBuffer()))
      .raw()
      .toBuffer({ resolveWithObject: true });
    expect([img.info.width, img.info.height]).toEqual([120, 120]);
    // grayscale: R = G = B (JPEG chroma noise aside)
    let spread = 0;
    for (let i = 0; i < img.data.length; i += 3) spread = Math.max(spread, Math.abs(img.data[i]! - img.data[i + 2]!));
    expect(spread).toBeLessThan(8);
  });

  it("400 naming preset.name for an unknown preset, listing the known ones", async () => {
    const res = await fetch(`${media.url}/preset:name=hero/${id}.jpg`);
    expect(res.status).toBe(400);
    const body = (await res.json()) as { errors: { path: string; message: string }[] };
    expect(body.errors).toEqual([{ path: "preset.name", message: 'unknown preset "hero"; known: card, thumb' }]);
    expect((await fetch(`${media.url}/preset:size=1/${id}.jpg`)).status).toBe(400);
  });

  it("counts steps after expansion against the 8-step limit", async () => {
    const chain = Array.from({ length: 5 }, () => "preset:name=thumb").join("/");
    const res = await fetch(`${media.url}/${chain}/${id}.jpg`);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { detail: string }).detail).toMatch(/at most 8 transformations.*presets expanded/);
  });

  it("is canonical as written; other spellings of the preset or of a step beside it are served from the canonical entry", async () => {
    for (const [target, canonical] of [
      [`/preset:name=c%61rd/${id}.jpg`, `/preset:name=card/${id}.jpg`],
      [`/preset:name=card/${id}.JPG`, `/preset:name=card/${id}.jpg`],
      [
        `/crop:width=0300:height=300/preset:name=thumb/${id}.jpg`,
        `/crop:width=300:height=300/preset:name=thumb/${id}.jpg`,
      ],
      [`/preset:name=thumb/saturation:value=1.50/${id}.jpg`, `/preset:name=thumb/saturation:value=1.5/${id}.jpg`],
    ] as const) {
      const first = await fetch(`${media.url}${canonical}`);
      expect([canonical, first.status, first.headers.get("link")]).toEqual([canonical, 200, null]);
      const before = counting.calls.length;
      const res = await fetch(`${media.url}${target}`);
      expect([target, res.status, res.headers.get("x-cache")]).toEqual([target, 200, "HIT"]);
      expect(res.headers.get("link")).toBe(`<${canonical}>; rel="canonical"`);
      expect(res.headers.get("etag")).toBe(first.headers.get("etag"));
      expect(counting.calls.length).toBe(before);
    }
  });

  it("GET /presets lists them with their steps", async () => {
    const res = await fetch(`${media.url}/presets`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({
      count: 2,
      presetsOnly: false,
      presets: [
        { name: "card", steps: "resize:width=400:height=300:fit=cover", example: "/preset:name=card/{assetId}.{ext}" },
        { name: "thumb", steps: "resize:width=120/grayscale", example: "/preset:name=thumb/{assetId}.{ext}" },
      ],
    });
  });
});

describe("MEDIA_PRESETS_ONLY", () => {
  let media: TestMedia;
  let counting: ReturnType<typeof countingRender>;
  let id: string;
  beforeAll(async () => {
    counting = countingRender();
    const config = loadMediaConfig({ MEDIA_PRESETS_FILE: write("only.yaml", YAML_FILE), MEDIA_PRESETS_ONLY: "true" });
    media = await startTestMedia({ render: counting.render, presets: config.presets, presetsOnly: config.presetsOnly });
    id = await media.store.putFixture("rocket.jpg");
  });
  afterAll(() => media.close());

  it("serves presets and refuses everything else with 403 problem+json, before any work", async () => {
    expect((await fetch(`${media.url}/preset:name=card/${id}.jpg`)).status).toBe(200);
    const before = counting.calls.length;
    for (const target of [
      `/thumbnail:size=100/${id}.jpg`,
      `/preset:name=card/grayscale/${id}.jpg`,
      `/preset:name=card/${id}.jpg?v=2`,
      `/original/${id}.jpg`,
      // Without MEDIA_SIGNING_KEY nothing checks a signature: any sig is one more URL, refused.
      `/preset:name=card/${id}.jpg?sig=anything`,
      `/preset:name=card/${id}.jpg?sig=`,
      `/preset:name=card/${id}.jpg?exp=9999999999&sig=x`,
    ]) {
      const res = await fetch(`${media.url}${target}`);
      expect([target, res.status]).toEqual([target, 403]);
      expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(res.headers.get("cache-control")).toBe("no-store");
      expect(((await res.json()) as { type: string }).type).toBe("https://media-platform.dev/problems/presets-only");
    }
    expect(counting.calls.length).toBe(before);
    expect(((await (await fetch(`${media.url}/presets`)).json()) as { presetsOnly: boolean }).presetsOnly).toBe(true);
  });

  it("serves another spelling of a preset path from the same entry", async () => {
    const canonical = await fetch(`${media.url}/preset:name=card/${id}.jpg`);
    expect(canonical.status).toBe(200);
    const before = counting.calls.length;
    const res = await fetch(`${media.url}/preset:name=c%61rd/${id.toUpperCase()}.JPG`);
    expect([res.status, res.headers.get("x-cache")]).toEqual([200, "HIT"]);
    expect(res.headers.get("etag")).toBe(canonical.headers.get("etag"));
    expect(res.headers.get("link")).toBe(`</preset:name=card/${id}.jpg>; rel="canonical"`);
    expect(counting.calls.length).toBe(before);
  });

  it("with signing on, a signed (and expiring) preset URL passes", async () => {
    const config = loadMediaConfig({ MEDIA_PRESETS_FILE: write("only2.yaml", YAML_FILE), MEDIA_PRESETS_ONLY: "true" });
    const signed = await startTestMedia({
      store: media.store,
      presets: config.presets,
      presetsOnly: true,
      signingKey: KEY,
    });
    try {
      const path = `/preset:name=thumb/${id}.jpg`;
      expect((await fetch(`${signed.url}${signedMediaUrl(path, KEY)}`)).status).toBe(200);
      const exp = Math.floor(Date.now() / 1000) + 60;
      expect((await fetch(`${signed.url}${signedMediaUrl(path, KEY, { expiresAt: exp })}`)).status).toBe(200);
      expect((await fetch(`${signed.url}${path}`)).status).toBe(403);
    } finally {
      await signed.close();
    }
  });
});
