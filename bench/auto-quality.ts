/**
 * pnpm bench auto-quality: what `quality=auto` saves against a fixed quality 75 at an equal or
 * better score (the same mean, or the same worst case, as q75's own scores), and what it costs;
 * and how often `max-bytes` fits the corpus into a budget.
 *
 * Images: the fixture photos and every still of ../shared/fixtures/corpus/sharp that decodes,
 * each as a JPEG rendition 512 px wide (`resize:width=512`), through the service's render
 * pipeline. Scores: SSIMULACRA2 of each encode against the unencoded rendition (the same
 * implementation the search uses).
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import sharp from "sharp";
import { defaultMediaLimits, parseMediaPath, rasterMimeTypeOf } from "@media-platform/contracts";
import {
  ByteBudgetError,
  createFaceDetector,
  createPixelWorkers,
  DEFAULT_AUTO_QUALITY_TARGET,
  render,
  Ssimulacra2Reference,
  toRaw,
  type RawImage,
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

/** Still images the pipeline can read, at least 64 px on each side. */
async function originals(): Promise<{ photos: Original[]; corpus: Original[] }> {
  const load = async (dir: string, name: string): Promise<Original | undefined> => {
    try {
      const bytes = readFileSync(path.join(dir, name));
      const meta = await sharp(bytes).metadata();
      const contentType = rasterMimeTypeOf(meta.format);
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

export interface Cell {
  bytes: number;
  score: number;
  ms: number;
}

/** One image: its original and its unencoded rendition (the reference every encode is scored against). */
interface Image {
  original: Original;
  unencoded: RawImage;
}

async function prepare(deps: RenderDeps, original: Original): Promise<Image> {
  // The same steps, losslessly; JPEG flattens transparency onto black, so the reference is flattened too.
  const png = (await renderWith(deps, original, `resize:width=${WIDTH}/format:type=png`)).data;
  return { original, unencoded: await toRaw(sharp(png).flatten()) };
}

/** The JPEG rendition of `image` at `quality` (a number, or auto with `target`), scored against `reference`. */
async function encode(
  deps: RenderDeps,
  image: Image,
  reference: Ssimulacra2Reference,
  quality: string,
  target?: number,
): Promise<Cell> {
  const start = cpuMs();
  const out = await renderWith(
    { ...deps, autoQualityTarget: target },
    image.original,
    `resize:width=${WIDTH}/format:type=jpeg:quality=${quality}`,
  );
  const ms = cpuMs() - start;
  return { bytes: out.data.length, score: reference.score(await toRaw(sharp(out.data))), ms };
}

export interface Scores {
  mean: number;
  min: number;
  /** The 10th percentile, nearest rank: the score 90% of the images reach. */
  p10: number;
}

export function scoresOf(cells: Cell[]): Scores {
  const sorted = cells.map((c) => c.score).sort((a, b) => a - b);
  return {
    mean: sorted.reduce((a, b) => a + b, 0) / sorted.length,
    min: sorted[0]!,
    p10: sorted[Math.max(0, Math.ceil(sorted.length / 10) - 1)]!,
  };
}

/** A row of the comparison: one setting over every image of a set. */
export interface Setting {
  label: string;
  target?: number;
  /** The target is read off q75's scores (it differs per set). */
  derived?: boolean;
  cells: Cell[];
}

/** quality=75, then quality=auto at the default target and at targets read off q75's own scores. */
async function compareSet(deps: RenderDeps, images: Image[], worstCase: "min" | "p10"): Promise<Setting[]> {
  const q75: Setting = { label: "quality=75", cells: [] };
  for (const image of images)
    q75.cells.push(await encode(deps, image, new Ssimulacra2Reference(image.unencoded), "75"));
  const at = scoresOf(q75.cells);
  // One decimal: the target a deployment would set, a hair above q75's own figure.
  const targets = [
    { label: `auto, target ${DEFAULT_AUTO_QUALITY_TARGET} (default)`, target: DEFAULT_AUTO_QUALITY_TARGET },
    { label: "auto, target = q75's mean score", target: Math.ceil(at.mean * 10) / 10, derived: true },
    {
      label: worstCase === "min" ? "auto, target = q75's lowest score" : "auto, target = q75's p10 score",
      target: Math.ceil(at[worstCase] * 10) / 10,
      derived: true,
    },
  ];
  const settings = [q75, ...targets.map((t): Setting => ({ ...t, cells: [] }))];
  for (const image of images) {
    const reference = new Ssimulacra2Reference(image.unencoded);
    for (const setting of settings.slice(1))
      setting.cells.push(await encode(deps, image, reference, "auto", setting.target));
  }
  return settings;
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

export function table(settings: Setting[]): string[] {
  const [q75] = settings;
  const sum = (s: Setting, key: keyof Cell) => s.cells.reduce((a, c) => a + c[key], 0);
  const lines = [
    "| setting | target | bytes | saved vs q75 | mean score | p10 score | lowest score | images at or above their q75 score | CPU vs q75 |",
    "|---|---|---|---|---|---|---|---|---|",
  ];
  for (const s of settings) {
    const scores = scoresOf(s.cells);
    const atLeast = s.cells.filter((c, i) => c.score >= q75!.cells[i]!.score - 0.05).length;
    lines.push(
      `| ${s.label} | ${s.target?.toFixed(1) ?? "-"} | ${sum(s, "bytes")} | ${pct(1 - sum(s, "bytes") / sum(q75!, "bytes"))} | ${scores.mean.toFixed(1)} | ${scores.p10.toFixed(1)} | ${scores.min.toFixed(1)} | ${atLeast} of ${s.cells.length} | ${(sum(s, "ms") / sum(q75!, "ms")).toFixed(1)}x |`,
    );
  }
  return lines;
}

/** The image with the lowest q75 score, and that score. */
function lowest(images: Image[], q75: Setting): string {
  let at = 0;
  for (let i = 1; i < q75.cells.length; i++) if (q75.cells[i]!.score < q75.cells[at]!.score) at = i;
  return `${images[at]?.original.name ?? "-"} (${q75.cells[at]?.score.toFixed(1) ?? "-"} at q75)`;
}

export async function benchAutoQuality(): Promise<string> {
  const pixels = createPixelWorkers({ size: 1 });
  const faces = createFaceDetector();
  const deps: RenderDeps = { pixels, faces, limits: defaultMediaLimits, limitInputPixels: 100_000_000 };
  try {
    const { photos, corpus } = await originals();
    const photoImages: Image[] = [];
    for (const o of photos) photoImages.push(await prepare(deps, o));
    const corpusImages: Image[] = [];
    for (const o of corpus) corpusImages.push(await prepare(deps, o));
    const photoRows = await compareSet(deps, photoImages, "min");
    const corpusRows = await compareSet(deps, corpusImages, "p10");
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
      `JPEG renditions ${WIDTH} px wide (\`resize:width=${WIDTH}/format:type=jpeg:quality=...\`) through the render pipeline: a fixed quality 75, and quality=auto at the default MEDIA_AUTO_QUALITY_TARGET and at two targets read off the q75 encodes' own scores, per set of images: their mean (auto at the same average score) and their worst case (auto at an equal or better lowest score, which is what a per-image quality choice promises). Score: SSIMULACRA2 of the encode against the unencoded rendition (transparency flattened as JPEG does); p10: the score 90% of the images reach (nearest rank). CPU: process CPU time of the whole render (decode, resize, every encode, every score) over the q75 render's.`,
      "",
      `Fixture photos (${photos.length}; with 5 images the p10 is the lowest score):`,
      "",
      ...table(photoRows),
      "",
      `Corpus stills (${corpus.length}, ../shared/fixtures/corpus/sharp: photos, test patterns, gradients, transparency). The worst-case target is q75's p10, not its lowest score: the lowest is ${lowest(corpusImages, corpusRows[0]!)}, a test image of alternating 1 px lines that scores far below 0 at every JPEG quality in the searched range (quality=auto then takes the highest quality it tried), so a target at its level would ask nothing of the other images.`,
      "",
      ...table(corpusRows),
      "",
      "Per fixture photo (bytes / score):",
      "",
      `| photo | ${photoRows.map((s) => (s.derived ? `${s.label} (${s.target!.toFixed(1)})` : s.label)).join(" | ")} |`,
      `|---|${photoRows.map(() => "---").join("|")}|`,
      ...photos.map(
        (o, i) =>
          `| ${o.name} | ${photoRows.map((s) => `${s.cells[i]!.bytes} / ${s.cells[i]!.score.toFixed(1)}`).join(" | ")} |`,
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
