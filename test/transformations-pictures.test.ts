// The pictures of docs/transformations.md are what the render pipeline makes today: rendered
// again here and compared with the committed files by decoded pixels (a small tolerance, so an
// encoder's rounding on another platform does not fail it; a changed step does).
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import sharp from "sharp";
import { docPictures } from "../scripts/transformations-doc";
import { PICTURES_DIR, renderPictures } from "../scripts/transformations-pictures";

async function pixelsOf(data: Buffer) {
  const { data: raw, info } = await sharp(data).raw().toBuffer({ resolveWithObject: true });
  return { raw, width: info.width, height: info.height, channels: info.channels };
}

/** Mean absolute difference per channel value (0-255) of two decoded images of equal size. */
function meanDifference(a: Buffer, b: Buffer): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += Math.abs(a[i]! - b[i]!);
  return sum / a.length;
}

describe("docs/images/transformations", () => {
  let rendered: Map<string, Buffer>;
  beforeAll(async () => {
    rendered = await renderPictures(docPictures());
  }, 120_000);

  it("holds exactly the pictures the page shows (run `pnpm docs:transformations`)", () => {
    expect(readdirSync(PICTURES_DIR).sort()).toEqual([...rendered.keys()].sort());
  });

  it("every picture matches what the pipeline renders now (run `pnpm docs:transformations`)", async () => {
    const stale: string[] = [];
    for (const [file, fresh] of rendered) {
      const committed = await pixelsOf(readFileSync(path.join(PICTURES_DIR, file)));
      const now = await pixelsOf(fresh);
      const sameSize =
        [committed.width, committed.height, committed.channels].join("x") ===
        [now.width, now.height, now.channels].join("x");
      const difference = sameSize ? meanDifference(committed.raw, now.raw) : Infinity;
      if (difference > 1)
        stale.push(`${file}: ${sameSize ? `mean difference ${difference.toFixed(2)}` : "size differs"}`);
    }
    expect(stale).toEqual([]);
  });

  it("stays small: previews at most 240 px wide, under 1 MB in all", async () => {
    let total = 0;
    for (const file of readdirSync(PICTURES_DIR)) {
      total += statSync(path.join(PICTURES_DIR, file)).size;
      expect((await sharp(path.join(PICTURES_DIR, file)).metadata()).width).toBeLessThanOrEqual(240);
    }
    expect(total).toBeLessThan(1024 * 1024);
  });

  it("the comparison notices a changed picture", async () => {
    const a = await pixelsOf(rendered.get("grayscale.jpg")!);
    const b = await pixelsOf(rendered.get("original.jpg")!);
    expect(meanDifference(a.raw, b.raw)).toBeGreaterThan(1);
  });
});
