import fs from "node:fs";
import path from "node:path";
import sharp from "sharp";
import { defaultMediaLimits, parseMediaPath, type OriginalHeader } from "@media-platform/contracts";
import { render, planRendition } from "../src/render/pipeline/render";
import { planRender } from "../src/render/pipeline/plan";
import { PDF_DRAW_NS_PER_PIXEL } from "../src/render/pipeline/cost";
import { TransformationInputError } from "../src/render/errors";
import { closeHarness, harnessDeps, HARNESS_ASSET_ID } from "./support/render-harness";

/** pdf.js's own test paper (14 US Letter pages; see test/fixtures/formats/README.md). */
const FORMATS = path.resolve(__dirname, "../../../test/fixtures/formats");
const paper = fs.readFileSync(path.join(FORMATS, "pdfjs-tracemonkey.pdf"));
const javascript = fs.readFileSync(path.join(FORMATS, "pdfjs-issue6106-javascript.pdf"));

/** The header management stores with a PDF: page 1 in points, the page count. */
const header = (width: number, height: number, pages: number): OriginalHeader => ({
  width,
  height,
  orientedWidth: width,
  orientedHeight: height,
  pages,
  hasAlpha: false,
  channels: 3,
  space: "srgb",
  depth: "uchar",
});

const stepsOf = (steps: string) => parseMediaPath(`/${steps}/${HARNESS_ASSET_ID}.png`).steps;
const renderPdf = (bytes: Buffer, steps: string, pages = 14) =>
  render(
    {
      original: bytes,
      header: pages === 1 ? header(400, 200, 1) : header(612, 792, pages),
      contentType: "application/pdf",
      steps: stepsOf(steps),
      cacheKey: steps,
    },
    harnessDeps(),
  );

afterAll(closeHarness);

describe("PDF pages", () => {
  it("page 1 by default, drawn at the size the sizing step needs, as opaque PNG", async () => {
    const result = await renderPdf(paper, "resize:width=1224:enlarge=true");
    expect(result).toMatchObject({ contentType: "image/png", width: 1224, height: 1584 });
    const meta = await sharp(result.data).metadata();
    expect(meta).toMatchObject({ format: "png", width: 1224, height: 1584, channels: 3 });
    // Drawn at 144 dpi, not enlarged from 72 dpi: text edges keep full contrast.
    const { min, max } = (await sharp(result.data).greyscale().stats()).channels[0]!;
    expect([min, max]).toEqual([0, 255]);
  });

  it("page:index selects the page, wherever it stands; the pages differ", async () => {
    const first = await renderPdf(paper, "fit:width=306:height=396/page:index=1");
    const second = await renderPdf(paper, "page:index=2/fit:width=306:height=396");
    expect(first).toMatchObject({ width: 306, height: 396 });
    expect(second).toMatchObject({ width: 306, height: 396 });
    const a = await sharp(first.data).raw().toBuffer();
    const b = await sharp(second.data).raw().toBuffer();
    expect(a.equals(b)).toBe(false);
  });

  it("a page past the count is a 400 naming page.index, before anything is drawn", async () => {
    await expect(renderPdf(paper, "page:index=15")).rejects.toMatchObject({
      name: "TransformationInputError",
      path: "page.index",
    });
    await expect(renderPdf(paper, "page:index=15")).rejects.toThrow(
      "page 15 does not exist: the document has 14 pages (index 1 to 14)",
    );
  });

  it("a document whose open action is JavaScript renders without running it", async () => {
    const result = await renderPdf(javascript, "resize:width=200", 1);
    expect(result).toMatchObject({ contentType: "image/png", width: 200, height: 100 });
  });

  it("any other image has one page: page:index=1 renders, page:index=2 is a 400", async () => {
    const jpeg = await sharp({ create: { width: 40, height: 30, channels: 3, background: "#c33" } })
      .jpeg()
      .toBuffer();
    const input = (steps: string) => ({
      original: jpeg,
      contentType: "image/jpeg",
      steps: stepsOf(steps),
      cacheKey: steps,
    });
    expect(await render(input("page:index=1/resize:width=20"), harnessDeps())).toMatchObject({ width: 20, height: 15 });
    await expect(render(input("page:index=2"), harnessDeps())).rejects.toBeInstanceOf(TransformationInputError);
  });

  it("the plan prices the drawing of the page, and /info knows a PDF renders as PNG", () => {
    const steps = stepsOf("resize:width=1224:enlarge=true");
    const size = { width: 1224, height: 1584 };
    const drawn = planRender(steps, size, defaultMediaLimits, { format: "png", drawNsPerPixel: PDF_DRAW_NS_PER_PIXEL });
    const decoded = planRender(steps, size, defaultMediaLimits, { format: "png" });
    expect(drawn.workCost - decoded.workCost).toBeCloseTo((size.width * size.height * PDF_DRAW_NS_PER_PIXEL) / 1e6, 6);
    const info = planRendition(
      { contentType: "application/pdf", steps: stepsOf("thumbnail:size=256"), header: header(612, 792, 14) },
      harnessDeps(),
    );
    expect(info).toMatchObject({ format: "png", width: 256, height: 256 });
  });
});
