/**
 * pnpm bench auto-quality: what `quality=auto` saves against a fixed quality 75, at what score,
 * and what it costs; and how often `max-bytes` fits the corpus into a budget.
 *
 * Images: the fixture photos and every still of ../shared/fixtures/corpus/sharp that decodes,
 * each as a JPEG rendition 512 px wide (`resize:width=512`), through the service's render
 * pipeline. Scores: SSIMULACRA2 of each encode against the unencoded rendition (the same
 * implementation the search uses).
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import sharp from "sharp";
import { defaultMediaLimits, parseMediaPath } from "@media-platform/contracts";
import {
  ByteBudgetError,
  createFaceDetector,
  createPixelWorkers,
  DEFAULT_AUTO_QUALITY_TARGET,
  render,
  ssimulacra2,
  toRaw,
  type RenderDeps,
} from "@media-platform/media/render";

const ROOT = path.resolve(__dirname, "..");
const FIXTURES = path.join(ROOT, "fixtures/images");
const CORPUS = path.resolve(ROOT, "../shared/fixtures/corpus/sharp");
const PHOTOS = ["astronaut.png", "camera.png", "chelsea.png", "coffee.png", "rocket.jpg"];
const ID = "00000000-0000-4000-8000-000000000000";
const WIDTH = 512;
/** max-bytes budgets tried on every corpus image (bytes of a 512 px JPEG). */
const BUDGETS = [20_000, 8_000, 3_000];

interface Original {
  name: string;
  bytes: Buffer;
  contentType: string;
}

const CONTENT_TYPES: Record<string, string> = {
  jpeg: "image/jpeg",
  png: "image/png",
  webp: "image/webp",
  gif: "image/gif",
  tiff: "image/tiff",
  heif: "image/avif",
};

/** Still images the pipeline can read, at least 64 px on each side. */
async function originals(): Promise<{ photos: Original[]; corpus: Original[] }> {
  const load = async (dir: string, name: string): Promise<Original | undefined> => {
    try {
      const bytes = readFileSync(path.join(dir, name));
      const meta = await sharp(bytes).metadata();
      const contentType = CONTENT_TYPES[meta.format];
      if (!contentType || (meta.pages ?? 1) > 1 || meta.width < 64 || meta.height < 64) return undefined;
      await sharp(bytes, { failOn: "error" }).resize(8).toBuffer();
      return { name, bytes, contentType };
    } catch {
      return undefined;
    }
  };
  const photos = (await Promise.all(PHOTOS.map((n) => load(FIXTURES, n)))).filter((o): o is Original => !!o);
  const corpus = (
    await Promise.all(
      readdirSync(CORPUS)
        .sort()
        .map((n) => load(CORPUS, n)),
    )
  ).filter((o): o is Original => !!o);
  return { photos, corpus };
}

const cpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

async function renderWith(deps: RenderDeps, original: Original, steps: string) {
  const urlPath = `/${steps}/${ID}.jpg`;
  return render(
    {
      original: original.bytes,
      contentType: original.contentType,
      steps: parseMediaPath(urlPath, defaultMediaLimits).steps,
      cacheKey: urlPath,
    },
    deps,
  );
}

/** The settings compared: the fixed reference first. */
const SETTINGS = [
  { label: "quality=75", quality: "75", target: undefined },
  { label: "auto, target 70", quality: "auto", target: 70 },
  {
    label: `auto, target ${DEFAULT_AUTO_QUALITY_TARGET} (default)`,
    quality: "auto",
    target: DEFAULT_AUTO_QUALITY_TARGET,
  },
] as const;

interface Cell {
  bytes: number;
  score: number;
  ms: number;
}

/** One image under every setting. */
async function compare(deps: RenderDeps, original: Original): Promise<Cell[]> {
  // The unencoded rendition: the same steps, losslessly; JPEG flattens transparency onto black.
  const png = (await renderWith(deps, original, `resize:width=${WIDTH}/format:type=png`)).data;
  const reference = await toRaw(sharp(png).flatten());
  const cells: Cell[] = [];
  for (const setting of SETTINGS) {
    const start = cpuMs();
    const out = await renderWith(
      { ...deps, autoQualityTarget: setting.target },
      original,
      `resize:width=${WIDTH}/format:type=jpeg:quality=${setting.quality}`,
    );
    const ms = cpuMs() - start;
    cells.push({ bytes: out.data.length, score: ssimulacra2(reference, await toRaw(sharp(out.data))), ms });
  }
  return cells;
}

/** The corpus image with the lowest q75 score, and that score. */
function lowest(originals: Original[], rows: Cell[][]): string {
  let at = 0;
  for (let i = 1; i < rows.length; i++) if (rows[i]![0]!.score < rows[at]![0]!.score) at = i;
  return `${originals[at]?.name ?? "-"} (${rows[at]?.[0]?.score.toFixed(1) ?? "-"} at q75)`;
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

function table(rows: Cell[][]): string[] {
  const total = (i: number, key: keyof Cell) => rows.reduce((a, r) => a + r[i]![key], 0);
  const lines = [
    "| setting | bytes | saved vs q75 | mean score | lowest score | images at or above q75's score | CPU vs q75 |",
    "|---|---|---|---|---|---|---|",
  ];
  for (const [i, setting] of SETTINGS.entries()) {
    const scores = rows.map((r) => r[i]!.score);
    const atLeast = rows.filter((r) => r[i]!.score >= r[0]!.score - 0.05).length;
    lines.push(
      `| ${setting.label} | ${total(i, "bytes")} | ${pct(1 - total(i, "bytes") / total(0, "bytes"))} | ${(total(i, "score") / rows.length).toFixed(1)} | ${Math.min(...scores).toFixed(1)} | ${atLeast} of ${rows.length} | ${(total(i, "ms") / total(0, "ms")).toFixed(1)}x |`,
    );
  }
  return lines;
}

export async function benchAutoQuality(): Promise<string> {
  const pixels = createPixelWorkers({ size: 1 });
  const faces = createFaceDetector();
  const deps: RenderDeps = { pixels, faces, limits: defaultMediaLimits, limitInputPixels: 100_000_000 };
  try {
    const { photos, corpus } = await originals();
    const photoRows: Cell[][] = [];
    for (const o of photos) photoRows.push(await compare(deps, o));
    const corpusRows: Cell[][] = [];
    for (const o of corpus) corpusRows.push(await compare(deps, o));
    const fits = BUDGETS.map(() => ({ fit: 0, smaller: 0, refused: 0 }));
    for (const o of corpus) {
      for (const [i, budget] of BUDGETS.entries()) {
        try {
          const out = await renderWith(deps, o, `resize:width=${WIDTH}/format:type=jpeg/max-bytes:value=${budget}`);
          if (out.data.length > budget) throw new Error(`${o.name}: ${out.data.length} bytes over ${budget}`);
          fits[i]!.fit++;
          if (out.width < Math.min(WIDTH, (await sharp(o.bytes).metadata()).autoOrient.width)) fits[i]!.smaller++;
        } catch (err) {
          if (!(err instanceof ByteBudgetError)) throw err;
          fits[i]!.refused++;
        }
      }
    }
    const lines = [
      `JPEG renditions ${WIDTH} px wide (\`resize:width=${WIDTH}/format:type=jpeg:quality=...\`) through the render pipeline, quality=auto at two MEDIA_AUTO_QUALITY_TARGET values against a fixed quality 75. Score: SSIMULACRA2 of the encode against the unencoded rendition (transparency flattened as JPEG does). CPU: process CPU time of the whole render (decode, resize, every encode, every score) over the q75 render's.`,
      "",
      `Fixture photos (${photos.length}):`,
      "",
      ...table(photoRows),
      "",
      `Corpus stills (${corpus.length}, ../shared/fixtures/corpus/sharp: photos, test patterns, gradients, transparency):`,
      "",
      ...table(corpusRows),
      "",
      `Lowest corpus score: ${lowest(corpus, corpusRows)}. A test image of alternating 1 px lines (gamma_dalai_lama_gray.jpg) scores far below 0 at every JPEG quality in the searched range; quality=auto then takes the highest quality it tried.`,
      "",
      "Per fixture photo (bytes / score):",
      "",
      `| photo | ${SETTINGS.map((s) => s.label).join(" | ")} |`,
      `|---|${SETTINGS.map(() => "---").join("|")}|`,
      ...photoRows.map(
        (r, i) => `| ${photos[i]!.name} | ${r.map((c) => `${c.bytes} / ${c.score.toFixed(1)}`).join(" | ")} |`,
      ),
      "",
      `max-bytes on the ${corpus.length} corpus stills, as the same JPEG renditions (\`.../max-bytes:value=N\`): fits within the budget (at lower quality, or at a smaller size), or refused with 422.`,
      "",
      "| budget (bytes) | fit | of which at a smaller size | 422 | success rate |",
      "|---|---|---|---|---|",
      ...BUDGETS.map(
        (b, i) =>
          `| ${b} | ${fits[i]!.fit} | ${fits[i]!.smaller} | ${fits[i]!.refused} | ${pct(fits[i]!.fit / corpus.length)} |`,
      ),
    ];
    return lines.join("\n");
  } finally {
    await Promise.all([pixels.close(), faces.close()]);
  }
}
